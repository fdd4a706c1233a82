//! `kaged-mcp`: the operator's command line for the kaged MCP client.
//!
//! Commands (each reads `--project DIR`; see `kaged-mcp --help` and docs/cli.md):
//! - `check`: validates the configuration and prints the resolved servers;
//! - `tools`: starts a session and prints the catalog (`--agent`, `--json`);
//! - `call TOOL --args JSON`: calls a tool through the full stack (`--agent`, `--json`);
//! - `status`: each server's state, tool count and last error (`--json`);
//! - `shell`: one session, one command per stdin line (`tools`, `call`, `status`, `enable`);
//! - `demo-server`: the small MCP server the bundled example project spawns.
//!
//! Built with the library's default `cli` feature.

use std::process::ExitCode;

fn main() -> ExitCode {
    kaged_mcp::cli::main()
}
