//! Helpers shared by the integration tests: `mod common;` in a test file, then `common::peers`
//! (the real MCP servers), `common::cli` (the built binary), `common::capture` (logs).
//! (A test may also include one file directly: `#[path = "common/peers.rs"] mod peers;`.)

pub(crate) mod capture;
pub(crate) mod cli;
pub(crate) mod peers;
