//! The `kaged-mcp` command line: argument parsing and the commands, kept in the library so
//! they can be tested without spawning the binary.
//!
//! Exit codes: 0 success; 1 a call or the session failed; 2 a usage or configuration error.

mod check;
mod demo_server;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use crate::config::{self, ConfigPaths};

/// The operator's command line for kaged's MCP client.
#[derive(Debug, Parser)]
#[command(name = "kaged-mcp", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Validate the configuration and print the resolved servers.
    Check(ProjectArgs),
    /// Serve the bundled demo MCP server on stdin/stdout (the quickstart's server).
    DemoServer,
}

/// Where the configuration is.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The project directory, holding project.yaml (and project.local.yaml, local.toml).
    #[arg(long, value_name = "DIR")]
    pub project: PathBuf,
    /// The operator's local.toml [default: DIR/local.toml when it exists].
    #[arg(long, value_name = "FILE")]
    pub local: Option<PathBuf>,
    /// The daemon's config.toml [default: built-in defaults].
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
}

impl ProjectArgs {
    fn paths(&self) -> ConfigPaths {
        ConfigPaths {
            project_dir: self.project.clone(),
            local: self.local.clone(),
            config: self.config.clone(),
        }
    }
}

/// Exit code 0.
pub const EXIT_OK: u8 = 0;
/// Exit code 1: a call or the session failed.
pub const EXIT_FAILED: u8 = 1;
/// Exit code 2: a usage or configuration error.
pub const EXIT_CONFIG: u8 = 2;

/// Runs a parsed command line and returns the process exit code.
pub fn run(cli: Cli) -> ExitCode {
    init_tracing();
    let code = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::DemoServer => demo_server::run(),
    };
    ExitCode::from(code)
}

fn init_tracing() {
    use tracing_subscriber::EnvFilter;
    let filter = EnvFilter::try_from_env("RUST_LOG").unwrap_or_else(|_| EnvFilter::new("warn"));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .try_init();
}

/// Loads the configuration and resolves secrets, printing `error: …` lines on failure.
fn load_config(args: &ProjectArgs) -> Result<config::Config, u8> {
    let config = match config::load(&args.paths()) {
        Ok(c) => c,
        Err(errs) => {
            for e in &errs {
                eprintln!("error: {e}");
            }
            return Err(EXIT_CONFIG);
        }
    };
    for w in &config.warnings {
        eprintln!("warning: {w}");
    }
    Ok(config)
}
