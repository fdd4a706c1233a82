//! `mcp.lock` texts (`Lock::parse`): never a panic; a parsed lock renders deterministically,
//! parses back the same, and matches itself.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::pin::lock_file(data));
