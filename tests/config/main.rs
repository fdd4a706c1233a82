//! Configuration, one test binary: good configurations and the table of bad ones.

mod errors;
mod good;
