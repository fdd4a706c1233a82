//! The session and the stack, one test binary: the standard stack in memory, sessions over
//! several real servers, and security checks run as an operator would.

#[path = "../common/mod.rs"]
mod common;

// These run the built `kaged-mcp` binary (or its demo server), which exists only with the
// `cli` feature.
mod pins;
#[cfg(feature = "cli")]
mod security;
#[cfg(feature = "cli")]
mod session;
mod stack;
mod validation;
