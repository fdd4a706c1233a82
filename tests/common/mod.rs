//! Helpers shared by the integration tests, included once per test binary: an area's `main.rs`
//! has `#[path = "../common/mod.rs"] mod common;` and its files use `crate::common::peers` (the
//! real MCP servers), `crate::common::cli` (the built binary), `crate::common::capture` (logs)
//! and `crate::common::oauth` (the OAuth test server). (A test binary of one file may include
//! one helper directly: `#[path = "common/peers.rs"] mod peers;`.)

pub(crate) mod capture;
// The built `kaged-mcp` binary (`CARGO_BIN_EXE_kaged-mcp`) exists only with the `cli` feature.
#[cfg(feature = "cli")]
pub(crate) mod cli;
pub(crate) mod oauth;
pub(crate) mod peers;
