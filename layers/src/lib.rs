//! Generic `tower` layers of kaged-mcp.
#![forbid(unsafe_code)]

pub mod reject_sampling;
pub mod truncate;
