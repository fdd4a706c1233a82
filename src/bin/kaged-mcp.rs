//! `kaged-mcp`: the operator's command line for the kaged MCP client.
//!
//! `check` validates a project's configuration; `demo-server` is the small MCP server the
//! bundled example project spawns. See `kaged-mcp --help` and the README.

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = kaged_mcp::cli::Cli::parse();
    kaged_mcp::cli::run(cli)
}
