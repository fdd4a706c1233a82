//! The JWT and DPoP parsing of OAuth for workloads: assertion files, `DPoP-Nonce` values,
//! `htu`, JWT-bearer token answers (no token in an error), proofs read back.
//! See `kaged_mcp_fuzz::dpop`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::dpop::dpop_jwt(data));
