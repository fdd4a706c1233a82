//! The checks behind the fuzz targets, shared with the regression tests.
//!
//! Each fuzz target in `fuzz_targets/` is a thin wrapper around one function here, and
//! `tests/fuzz_regressions.rs` (a normal `cargo test` of the root package) includes the same
//! module files with `#[path]` and feeds every minimised crasher through the same function, so a
//! crasher replays exactly as the fuzzer saw it, without libFuzzer.
//!
//! Every function panics (through `assert!`) when an invariant breaks; a panic inside
//! `kaged-mcp` itself is of course a finding too. Modules refer to each other as
//! `crate::<module>`, so the regression tests can mount them the same way.

pub mod answers;
pub mod challenge;
pub mod config;
pub mod dpop;
pub mod import;
pub mod modern;
pub mod oauth;
pub mod pin;
pub mod protocol;
pub mod session;
pub mod skills;
pub mod sse;
pub mod stdio;
pub mod truncate;
