//! The `kaged-mcp` command line: argument parsing and the commands, kept in the library so
//! they can be tested without spawning the binary.
//!
//! Exit codes: 0 success; 1 a call or the session failed; 2 a usage or configuration error;
//! 130 or 143 interrupted by SIGINT or SIGTERM (see `interrupt`: what was in flight is
//! cancelled and the servers are shut down first).

mod auth;
mod call;
mod check;
mod demo_server;
mod interrupt;
mod lock;
mod protocol_cmds;
mod session_cmds;
mod skills_cmds;
mod start;
#[cfg(feature = "otlp")]
mod telemetry;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use self::protocol_cmds::{CompleteArgs, PromptArgs, PromptsArgs, ReadArgs, ResourcesArgs, Verb};
use crate::config::{self, ConfigPaths};

/// The operator's command line for kaged's MCP client.
#[derive(Debug, Parser)]
#[command(name = "kaged-mcp", version, about, long_about = None)]
pub(crate) struct Cli {
    /// Say more: `-v` adds each error's whole chain of causes and the library's warnings on
    /// stderr, `-vv` its info log, `-vvv` its debug log (`RUST_LOG` overrides the log filter).
    #[arg(short, long, action = clap::ArgAction::Count, global = true)]
    pub(crate) verbose: u8,
    /// What to do.
    #[command(subcommand)]
    pub(crate) command: Command,
}

/// The commands.
#[derive(Debug, Subcommand)]
pub(crate) enum Command {
    /// Validate the configuration and print the resolved servers.
    Check(ProjectArgs),
    /// Start a session and print the registered tool catalog.
    Tools {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// The agent to act as.
        #[command(flatten)]
        who: AgentArg,
        /// Print a JSON array of ToolDefinition objects.
        #[arg(long)]
        json: bool,
    },
    /// Start a session and call one tool through the full stack.
    Call {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// The agent to act as.
        #[command(flatten)]
        who: AgentArg,
        /// The tool's full name, such as `mcp.demo.echo`.
        tool: String,
        /// The arguments, a JSON object: inline, `@FILE` to read them from a file, or `-` to
        /// read them from stdin.
        #[arg(long, value_name = "JSON|@FILE|-")]
        args: Option<String>,
        /// Print `{"content", "structuredContent", "isError", "truncated"}` as JSON (on
        /// failure, `{"error": {"server", "tool", "kind", "message"}}`).
        #[arg(long)]
        json: bool,
        /// Show no progress on stderr while the call runs.
        #[arg(short, long)]
        quiet: bool,
    },
    /// Start a session and print each server's state, tool count and last error.
    Status {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// Print a JSON array of `{"server", "state", "tools", "last_error"}`.
        #[arg(long)]
        json: bool,
    },
    /// Start a session once, then answer commands read from stdin, one per line:
    /// `tools`, `call TOOL [JSON]`, `status`, `enable SERVER`, `resources`, `read`, `prompts`,
    /// `prompt`, `complete` (with the arguments of the commands of those names), `quit`.
    Shell {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// The agent to act as.
        #[command(flatten)]
        who: AgentArg,
        /// Answer every command with exactly one line of JSON.
        #[arg(long)]
        json: bool,
    },
    /// Start the servers and print their resources and resource templates: server, URI (or
    /// URI template), name, MIME type, size.
    Resources {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// Which server.
        #[command(flatten)]
        args: ResourcesArgs,
        /// Print `{"resources": [...], "templates": [...]}`, each item with its `server`.
        #[arg(long)]
        json: bool,
    },
    /// Start one server and read one of its resources: text to stdout, binary contents with
    /// `--out FILE` (or to a redirected stdout).
    Read {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// What to read.
        #[command(flatten)]
        args: ReadArgs,
        /// Print `{"contents": [...], "truncated": bool}`.
        #[arg(long)]
        json: bool,
    },
    /// Start the servers and print their prompts: name, description, arguments (which are
    /// required).
    Prompts {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// Which server.
        #[command(flatten)]
        args: PromptsArgs,
        /// Print a JSON array of prompts, each with its `server`.
        #[arg(long)]
        json: bool,
    },
    /// Start one server and get one of its prompts with arguments: its messages.
    Prompt {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// Which prompt, with which arguments.
        #[command(flatten)]
        args: PromptArgs,
        /// Print the `GetPromptResult`.
        #[arg(long)]
        json: bool,
    },
    /// Start one server and complete a prompt's argument or a resource template's variable:
    /// the values, one a line.
    Complete {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// What to complete.
        #[command(flatten)]
        args: CompleteArgs,
        /// Print `{"values": [...], "total"?, "hasMore"?}`.
        #[arg(long)]
        json: bool,
    },
    /// List the skills servers serve (SEP-2640): server, name and description, one a line.
    /// No skill file is read.
    Skills {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// Which servers.
        #[command(flatten)]
        args: skills_cmds::SkillsArgs,
        /// Print a JSON array of `{server, uri, name, description, frontmatter, files}`.
        #[arg(long)]
        json: bool,
    },
    /// Load one skill, verify its SKILL.md (size, SHA-256 digest, frontmatter) against the
    /// server's listing, and print it (or, with --file, one of its listed files). A refusal
    /// exits 1 naming the check.
    Skill {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// The skill.
        #[command(flatten)]
        args: skills_cmds::SkillArgs,
        /// Print `{server, skill, uri, mimeType, text}` (a failure: `{"error": {…, "check"}}`).
        #[arg(long)]
        json: bool,
    },
    /// Pin the servers' tool definitions: write `mcp.lock` beside project.yaml from what each
    /// server lists now (the servers named, or all), or with --check compare them with it and
    /// show each difference.
    ///
    /// Exit codes: 0 written, or (--check) everything matches; 1 a server could not be listed
    /// (nothing written), or (--check) something differs or there is no mcp.lock; 2 a usage or
    /// configuration error (an unreadable mcp.lock included).
    Lock {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// Only these servers (the lock's other entries are kept); all declared ones when
        /// none is named (entries of servers no longer declared are dropped).
        servers: Vec<String>,
        /// Compare instead of writing: each changed description line, schema path and
        /// annotation, each new or removed tool, each server not in the lock.
        #[arg(long)]
        check: bool,
    },
    /// Serve the bundled demo MCP server on stdin/stdout (the quickstart's server).
    DemoServer,
    /// Log in to OAuth servers, show their tokens' state, forget them.
    Auth {
        /// What to do.
        #[command(subcommand)]
        command: AuthCommand,
    },
}

/// `kaged-mcp auth …`.
#[derive(Debug, Subcommand)]
pub(crate) enum AuthCommand {
    /// Log in to an OAuth server: print the authorization URL (and open a browser), wait for
    /// the redirect on 127.0.0.1, store the tokens. A `client_credentials` server needs no
    /// browser.
    Login {
        /// The server's key.
        server: String,
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
    },
    /// Show, per OAuth server, whether it is logged in, the expiry and the scopes (never a
    /// token).
    Status {
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
        /// Print a JSON array.
        #[arg(long)]
        json: bool,
    },
    /// Forget the stored tokens of an OAuth server.
    Logout {
        /// The server's key.
        server: String,
        /// Where the configuration is.
        #[command(flatten)]
        project: ProjectArgs,
    },
}

/// Acting as one agent.
#[derive(Debug, Args)]
pub(crate) struct AgentArg {
    /// Restrict to the tools granted to this agent: `primary` or a subagent's key.
    #[arg(long, value_name = "NAME")]
    pub(crate) agent: Option<String>,
}

/// Where the configuration is.
#[derive(Debug, Args)]
pub(crate) struct ProjectArgs {
    /// The project directory, holding project.yaml (and project.local.yaml, local.toml).
    #[arg(long, value_name = "DIR")]
    pub(crate) project: PathBuf,
    /// The operator's local.toml [default: DIR/local.toml when it exists].
    #[arg(long, value_name = "FILE")]
    pub(crate) local: Option<PathBuf>,
    /// The daemon's config.toml [default: built-in defaults].
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
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

/// Serves the bundled demo MCP server on stdin/stdout until end of input (what
/// `kaged-mcp demo-server` runs); the examples run it from their own executable.
pub fn demo_server() -> ExitCode {
    ExitCode::from(demo_server::run())
}

/// The `kaged-mcp` binary: parses the process's arguments (clap's usage errors exit 2) and
/// runs the command; returns the process exit code. The argument types are the binary's own,
/// not library API.
pub fn main() -> ExitCode {
    run(<Cli as clap::Parser>::parse())
}

/// Runs a parsed command line and returns the process exit code.
pub(crate) fn run(cli: Cli) -> ExitCode {
    // The demo server is a peer, not a command: it exports nothing (it inherits `OTEL_*`
    // when a traced command starts it).
    let telemetry = init_tracing(cli.verbose, !matches!(cli.command, Command::DemoServer));
    let verbose = cli.verbose > 0;
    let code = match cli.command {
        Command::Check(args) => check::run(&args),
        Command::Tools { project, who, json } => session_cmds::tools(
            &project,
            start::Who {
                agent: who.agent.as_deref(),
            },
            json,
            verbose,
        ),
        Command::Call {
            project,
            who,
            tool,
            args,
            json,
            quiet,
        } => call::run(
            &project,
            start::Who {
                agent: who.agent.as_deref(),
            },
            &tool,
            args.as_deref(),
            call::CallOutput {
                json,
                verbose,
                quiet,
            },
        ),
        Command::Status { project, json } => session_cmds::status(&project, json, verbose),
        Command::Shell { project, who, json } => session_cmds::shell(
            &project,
            start::Who {
                agent: who.agent.as_deref(),
            },
            json,
            verbose,
        ),
        Command::Resources {
            project,
            args,
            json,
        } => protocol_cmds::run(&project, &Verb::Resources(args), json, verbose),
        Command::Read {
            project,
            args,
            json,
        } => protocol_cmds::run(&project, &Verb::Read(args), json, verbose),
        Command::Prompts {
            project,
            args,
            json,
        } => protocol_cmds::run(&project, &Verb::Prompts(args), json, verbose),
        Command::Prompt {
            project,
            args,
            json,
        } => protocol_cmds::run(&project, &Verb::Prompt(args), json, verbose),
        Command::Complete {
            project,
            args,
            json,
        } => protocol_cmds::run(&project, &Verb::Complete(args), json, verbose),
        Command::Skills {
            project,
            args,
            json,
        } => skills_cmds::list(&project, &args, json, verbose),
        Command::Skill {
            project,
            args,
            json,
        } => skills_cmds::show(&project, &args, json, verbose),
        Command::Lock {
            project,
            servers,
            check,
        } => lock::run(&project, &servers, check, verbose),
        Command::DemoServer => demo_server::run(),
        Command::Auth { command } => match command {
            AuthCommand::Login { server, project } => auth::login(&project, &server),
            AuthCommand::Status { project, json } => auth::status(&project, json),
            AuthCommand::Logout { server, project } => auth::logout(&project, &server),
        },
    };
    #[cfg(feature = "otlp")]
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    #[cfg(not(feature = "otlp"))]
    let _ = telemetry;
    ExitCode::from(code)
}

/// The OpenTelemetry export, when the environment asks for one (feature `otlp`).
#[cfg(feature = "otlp")]
type Telemetry = telemetry::Telemetry;
/// Without the `otlp` feature there is none.
#[cfg(not(feature = "otlp"))]
type Telemetry = std::convert::Infallible;

/// The log on stderr: off unless asked for (`-v`: warnings, `-vv`: info, `-vvv`: debug, or
/// `RUST_LOG`), so a failure is told once, by the command's own `error:` line; colour only on
/// a terminal and never with `NO_COLOR` set. With the `otlp` feature and the OpenTelemetry
/// environment variables set, the request spans and metrics are exported too (see
/// [`telemetry`]), whatever the log level.
fn init_tracing(verbose: u8, export: bool) -> Option<Telemetry> {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _};
    let filter = match std::env::var("RUST_LOG") {
        Ok(v) if !v.trim().is_empty() => EnvFilter::new(v),
        _ => EnvFilter::new(match verbose {
            0 => "off",
            1 => "warn",
            2 => "info",
            _ => "debug",
        }),
    };
    let colour = std::io::stderr().is_terminal()
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .with_filter(filter);
    #[cfg(feature = "otlp")]
    let telemetry = match export.then(telemetry::from_env).transpose() {
        Ok(t) => t.flatten(),
        Err(line) => {
            eprintln!("warning: {line}");
            None
        }
    };
    #[cfg(not(feature = "otlp"))]
    let telemetry: Option<Telemetry> = {
        let _ = export;
        None
    };
    // Metrics are recorded only when they go somewhere.
    #[cfg(feature = "otlp")]
    crate::telemetry::set_metrics(
        telemetry
            .as_ref()
            .is_some_and(telemetry::Telemetry::exports_metrics),
    );
    #[cfg(feature = "otlp")]
    let export = telemetry.as_ref().and_then(telemetry::Telemetry::layer);
    #[cfg(not(feature = "otlp"))]
    let export: Option<tracing_subscriber::layer::Identity> = None;
    let _ = tracing_subscriber::registry()
        .with(log)
        .with(export)
        .try_init();
    telemetry
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
