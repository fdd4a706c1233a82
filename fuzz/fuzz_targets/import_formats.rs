//! Another client's MCP server list (`.mcp.json`, Claude Desktop, Cursor, VS Code, Codex),
//! its name picked by the first byte, through `kaged_mcp::config::import`: planned against a
//! fixed project, written, loaded back; never a panic, never a project that does not load.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| kaged_mcp_fuzz::import::import_formats(data));
