//! Generic `tower` layers of kaged-mcp.
#![forbid(unsafe_code)]

#[cfg(feature = "auth")]
pub mod auth;
pub mod reject_sampling;
pub mod retry;
pub mod timeout;
pub mod truncate;
