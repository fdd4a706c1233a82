//! Helpers shared by the integration tests: `mod common;` in a test file, then `common::peers`.
//! (A test may also include one file directly: `#[path = "common/peers.rs"] mod peers;`.)

pub(crate) mod peers;
