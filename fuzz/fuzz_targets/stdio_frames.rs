//! The stdio transport's line reader fed the server's stdout in pseudo-random reads, against a
//! model of its documented framing (lines, `\r`, blank lines, frame limit with head and tail).
//! See `kaged_mcp_fuzz::stdio`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::stdio::stdio_frames(data));
