//! A `ToolResult` (built with `arbitrary`, or read from a `tools/call` result in JSON) cut with
//! `Truncatable::truncate_to(cap)`; the result must keep the invariants of "Truncation,
//! precisely" (module docs of `src/protocol/result.rs`). See `kaged_mcp_fuzz::truncate`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::truncate::truncate(data));
