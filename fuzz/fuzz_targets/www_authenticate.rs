//! `WWW-Authenticate` headers through `BearerChallenge::find`: no panic, values within their
//! header, and exactly the challenge a model of the header lines says.
//! See `kaged_mcp_fuzz::challenge`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::challenge::www_authenticate(data));
