//! Inbound JSON-RPC frames through a real `McpClient` session over a scripted transport: the
//! client's own one-pass frame decoding (`client::inbound`), id routing, server requests,
//! notifications, oversize reports and cancellation. Input: frames separated by `\n`, groups of
//! frames (one per client request) by an empty line. See `kaged_mcp_fuzz::session`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    kaged_mcp_fuzz::session::jsonrpc_decode(data);
});
