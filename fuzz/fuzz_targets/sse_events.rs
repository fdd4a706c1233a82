//! The SSE event-stream parser fed the stream whole and in pseudo-random chunks: same items
//! either way, and the same as a WHATWG model with the parser's size limit.
//! See `kaged_mcp_fuzz::sse`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::sse::sse_events(data));
