//! Generic `tower` layers of kaged-mcp.
//!
//! Each layer lives in its own module with its `Layer`, `Service` and response future. The
//! crate knows `tower`, not the MCP types: where a layer must look inside a value it defines a
//! small trait (for example [`truncate::Truncatable`]) that the `kaged-mcp` crate implements.
#![forbid(unsafe_code)]

pub mod truncate;
