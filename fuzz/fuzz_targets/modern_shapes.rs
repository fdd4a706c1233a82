//! 2026-07-28 result shapes decoded from arbitrary JSON (no panic, a decoded value writes and
//! reads back to itself) and `Mcp-Param-*` header values (valid, and decoding back exactly).
//! See `kaged_mcp_fuzz::modern`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::modern::modern_shapes(data));
