//! kaged-mcp: the MCP client subsystem of the kaged agent daemon.
//!
//! It reads the `mcp:` block of a kaged project, connects to each declared MCP server over
//! stdio, Streamable HTTP or the legacy HTTP+SSE transport, discovers its tools and proxies
//! every `tools/call` through a stack of `tower` layers. See `docs/` for the reference
//! (`configuration.md`, `cli.md`, `embedding.md`, `operations.md`) and `ARCHITECTURE.md` for
//! the tiers, the hot path and the invariants.
#![forbid(unsafe_code)]

/// The README's Rust code blocks, compiled by `cargo test --doc` so its embedding example stays
/// true to the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;

pub mod assemble;
#[cfg(feature = "cli")]
pub mod cli;
pub mod client;
pub mod config;
pub mod error;
pub mod escape;
pub mod file;
#[cfg(feature = "oauth")]
pub mod oauth;
pub mod pin;
pub mod protocol;
pub mod registry;
pub mod session;
pub mod stack;
pub mod telemetry;
#[cfg(any(test, feature = "test-util"))]
pub mod test_util;
pub mod transport;
pub mod validate;

pub use error::Error;
pub use registry::{ToolDefinition, ToolRegistry};
pub use session::{Session, SessionOptions};
