//! One frame decoded with `serde_json` as every payload type of `kaged_mcp::protocol`
//! (`ToolResult`, `ListToolsResult`, `InitializeResult`, errors, ids, notification and
//! elicitation params): never a panic; a decoded `ToolResult` re-encodes to itself and
//! truncates correctly.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::protocol::protocol_types(data));
