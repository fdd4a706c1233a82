//! Resource and authorization server metadata, registration and token answers as a hostile
//! server may send them: no panic, an error for every bad one, never a secret in a message.
//! See `kaged_mcp_fuzz::oauth`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::oauth::oauth_documents(data));
