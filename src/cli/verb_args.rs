//! The arguments of the verbs the command line and the shell both take (`tools`, `describe`,
//! `call`, `status`, `ping`): one clap type each, flattened into the command line's commands
//! and parsed again by the shell ([`super::shell`]) from its words, so the two cannot differ.
//! (`resources`, `read`, `prompts`, `prompt`, `complete` have theirs in
//! [`super::protocol_cmds`], `skills` and `skill` in [`super::skills_cmds`].)

use clap::Args;

/// `tools [SERVER…]` and `status [SERVER…]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ServersArgs {
    /// Only these servers (the command line starts only them) [default: every server].
    #[arg(value_name = "SERVER")]
    pub(crate) servers: Vec<String>,
}

/// `describe TOOL`.
#[derive(Debug, Clone, Args)]
pub(crate) struct DescribeArgs {
    /// The tool's full name, such as `mcp.demo.echo`.
    pub(crate) tool: String,
}

/// `call TOOL [--args JSON] [--arg KEY=VALUE]… [--quiet]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CallArgs {
    /// The tool's full name, such as `mcp.demo.echo`.
    pub(crate) tool: String,
    /// The arguments, a JSON object: inline, `@FILE` to read them from a file, or `-` to
    /// read them from stdin (not in the shell).
    #[arg(long, value_name = "JSON|@FILE|-")]
    pub(crate) args: Option<String>,
    /// One argument, `key=value` (repeatable): typed by the tool's input schema (a
    /// number, boolean, array, object or null parsed as JSON where the property's type
    /// says so; a string as it is). `a.b=1` sets `b` in the object `a`, typed by its nested
    /// schema; a `$ref` property is typed by its target. Merged over `--args`, `--arg` winning.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub(crate) arg: Vec<String>,
    /// Show no progress on stderr while the call runs.
    #[arg(short, long)]
    pub(crate) quiet: bool,
}

/// `ping [SERVER] [-c N] [-i SECONDS]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PingArgs {
    /// The server's key [default: the ad-hoc server].
    pub(crate) server: Option<String>,
    /// How many pings.
    #[arg(short = 'c', long, value_name = "N", default_value_t = 3)]
    pub(crate) count: u32,
    /// Seconds between two pings.
    #[arg(short = 'i', long, value_name = "SECONDS", default_value_t = 1.0)]
    pub(crate) interval: f64,
}
