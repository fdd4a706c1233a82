//! The `kaged-mcp` command line: argument parsing and the commands, kept in the library so
//! they can be tested without spawning the binary.
//!
//! Exit codes: 0 success; 1 a call or the session failed; 2 a usage or configuration error;
//! 130 or 143 interrupted by SIGINT or SIGTERM (see `interrupt`: what was in flight is
//! cancelled and the servers are shut down first).

mod adhoc;
mod auth;
mod call;
mod catalog_cmds;
mod check;
mod demo_server;
mod hints;
mod import;
mod interrupt;
mod lock;
mod output;
mod pin_notes;
mod ping;
mod protocol_cmds;
mod render;
mod server_log;
mod session_cmds;
mod shell;
mod skills_cmds;
mod start;
#[cfg(feature = "otlp")]
mod telemetry;
mod typed_args;
mod verb_args;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};

use self::adhoc::ServerArgs;
use self::output::{Failure, JSON_EXIT_CODES};
use self::protocol_cmds::{CompleteArgs, PromptArgs, PromptsArgs, ReadArgs, ResourcesArgs, Verb};
use self::verb_args::{CallArgs, DescribeArgs, PingArgs, ServersArgs};
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
    /// Validate the configuration and list the resolved servers.
    ///
    /// Validate the configuration and print the resolved servers, one line each (name,
    /// transport, command or URL, state); `-v` prints each server's whole settings.
    Check(ProjectArgs),
    /// List the servers' tools, one line each.
    ///
    /// Start the servers (all, or those named) and print their tools: one line each,
    /// `name(param: type, optional?: type)`, the hints the server declares (read-only,
    /// destructive, idempotent, open-world) and the first line of the description.
    #[command(after_help = JSON_EXIT_CODES)]
    Tools {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// The agent to act as.
        #[command(flatten)]
        who: AgentArg,
        /// Which servers.
        #[command(flatten)]
        args: ServersArgs,
        /// Print a JSON array of ToolDefinition objects (`name`, `namespace`, `description`,
        /// `parameters`, `returns`, `requires`, `source`, `mcp_server`, `mcp_tool_name`), each
        /// with `mcp_tool`: the tool as its server listed it, whole (`title`, `inputSchema`,
        /// `outputSchema`, `annotations`, `execution`, `icons`, `_meta`, …).
        #[arg(long)]
        json: bool,
    },
    /// Describe one tool: parameters, output schema, annotations.
    ///
    /// Start one tool's server and describe the tool: title, description, a table of its
    /// parameters (name, type, required, default, allowed values, description), its output
    /// schema and its annotations.
    #[command(after_help = JSON_EXIT_CODES)]
    Describe {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// The agent to act as.
        #[command(flatten)]
        who: AgentArg,
        /// Which tool.
        #[command(flatten)]
        args: DescribeArgs,
        /// Print the tool's ToolDefinition with `mcp_tool`, as one entry of `tools --json`.
        #[arg(long)]
        json: bool,
    },
    /// Call one tool and print its result.
    ///
    /// Start a session and call one tool through the full stack. Every content block is
    /// shown: text as it is, images and audio as `[image MIME, N bytes]`, resource links as
    /// `[resource link URI name (MIME)]`, embedded resources as their URI and text.
    #[command(after_help = JSON_EXIT_CODES)]
    Call {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// The agent to act as.
        #[command(flatten)]
        who: AgentArg,
        /// Which tool, with which arguments.
        #[command(flatten)]
        args: CallArgs,
        /// Print `{"content", "structuredContent", "isError", "truncated", "_meta"?}` as JSON
        /// (on failure, `{"error": {"kind", "message", "server", "tool"}}`).
        #[arg(long)]
        json: bool,
    },
    /// Show each server's state, identity and capabilities.
    ///
    /// Start the servers (all, or those named) and print who each is and how it is: state,
    /// tool count, protocol era and version, last error; then the server's name, version,
    /// title and website, its capabilities and the first line of its instructions.
    #[command(after_help = STATUS_JSON_HELP)]
    Status {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// Which servers.
        #[command(flatten)]
        args: ServersArgs,
        /// Print a JSON array, one object per server (its keys are listed below).
        #[arg(long)]
        json: bool,
    },
    /// Answer commands read from stdin on one session.
    ///
    /// Start a session once, then answer commands read from stdin, one per line: the verbs
    /// `tools`, `describe`, `call`, `status`, `ping`, `resources`, `read`, `prompts`, `prompt`,
    /// `complete`, `skills`, `skill` with the arguments of the commands of those names, and
    /// `enable SERVER`, `help [VERB]`, `quit`. On a terminal: line editing, history (in
    /// $XDG_STATE_HOME/kaged-mcp/history) and completion of verbs, tools and servers, and a
    /// server's elicitation answered with a form.
    #[command(after_help = JSON_EXIT_CODES)]
    Shell {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// The agent to act as.
        #[command(flatten)]
        who: AgentArg,
        /// Answer every command with exactly one line of JSON.
        #[arg(long)]
        json: bool,
    },
    /// List the servers' resources and resource templates.
    ///
    /// Start the servers and print their resources and resource templates: server, URI (or
    /// URI template), name, MIME type, size.
    #[command(after_help = JSON_EXIT_CODES)]
    Resources {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// Which server.
        #[command(flatten)]
        args: ResourcesArgs,
        /// Print `{"resources": [...], "templates": [...]}`, each item with its `server`.
        #[arg(long)]
        json: bool,
    },
    /// Read one resource.
    ///
    /// Start one server and read one of its resources: text to stdout, binary contents with
    /// `--out FILE` (or to a redirected stdout).
    #[command(after_help = JSON_EXIT_CODES)]
    Read {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// What to read.
        #[command(flatten)]
        args: ReadArgs,
        /// Print `{"contents": [...], "truncated": bool}`.
        #[arg(long)]
        json: bool,
    },
    /// List the servers' prompts.
    ///
    /// Start the servers and print their prompts: name, description, arguments (which are
    /// required).
    #[command(after_help = JSON_EXIT_CODES)]
    Prompts {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// Which server.
        #[command(flatten)]
        args: PromptsArgs,
        /// Print a JSON array of prompts, each with its `server`.
        #[arg(long)]
        json: bool,
    },
    /// Get one prompt with arguments and print its messages.
    ///
    /// Start one server and get one of its prompts with arguments: its messages, each content
    /// block shown as `call` shows it.
    #[command(after_help = JSON_EXIT_CODES)]
    Prompt {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// Which prompt, with which arguments.
        #[command(flatten)]
        args: PromptArgs,
        /// Print the `GetPromptResult`.
        #[arg(long)]
        json: bool,
    },
    /// Complete a prompt's argument or a resource template's variable.
    ///
    /// Start one server and complete a prompt's argument or a resource template's variable:
    /// the values, one a line.
    #[command(after_help = JSON_EXIT_CODES)]
    Complete {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// What to complete.
        #[command(flatten)]
        args: CompleteArgs,
        /// Print `{"values": [...], "total"?, "hasMore"?}`.
        #[arg(long)]
        json: bool,
    },
    /// List the skills the servers serve (SEP-2640).
    ///
    /// List the skills servers serve (SEP-2640): server, name and description, one a line.
    /// No skill file is read.
    #[command(after_help = JSON_EXIT_CODES)]
    Skills {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// Which servers.
        #[command(flatten)]
        args: skills_cmds::SkillsArgs,
        /// Print a JSON array of `{server, uri, name, description, frontmatter, files}`.
        #[arg(long)]
        json: bool,
    },
    /// Load one skill, check it against the server's listing, print it.
    ///
    /// Load one skill, verify its SKILL.md (size, SHA-256 digest, frontmatter) against the
    /// server's listing, and print it (or, with --file, one of its listed files). A refusal
    /// exits 1 naming the check.
    #[command(after_help = JSON_EXIT_CODES)]
    Skill {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// The skill.
        #[command(flatten)]
        args: skills_cmds::SkillArgs,
        /// Print `{server, skill, uri, mimeType, text}` (a failure: `{"error": {…, "check"}}`).
        #[arg(long)]
        json: bool,
    },
    /// Pin the servers' tool definitions in mcp.lock, or compare with it.
    ///
    /// Pin the servers' tool definitions: write `mcp.lock` beside project.yaml from what each
    /// server lists now (the servers named, or all), or with --check compare them with it and
    /// show each difference.
    ///
    /// An entry that exists is updated only with the digest --check printed (--expect), after
    /// a yes on a terminal, or with --yes.
    ///
    /// Exit codes: 0 written, or (--check) everything matches; 1 a server could not be listed,
    /// lists something other than the digest expected, or an update was not approved (nothing
    /// written), or (--check) something differs or there is no mcp.lock; 2 a usage or
    /// configuration error (an unreadable mcp.lock included).
    Lock {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// Only these servers (the lock's other entries are kept); all declared ones when
        /// none is named (entries of servers no longer declared are dropped).
        servers: Vec<String>,
        /// Compare instead of writing: each changed description line, schema path and
        /// annotation, each new or removed tool, each server not in the lock, whole and
        /// escaped, and the digest of what each server lists now.
        #[arg(long)]
        check: bool,
        /// Write only what was reviewed: the digest `lock --check` printed (`sha256:…`, with
        /// one server named) or `SERVER=sha256:…` (repeatable). A server that lists anything
        /// else now is refused and nothing is written.
        #[arg(long, value_name = "DIGEST", conflicts_with = "check")]
        expect: Vec<String>,
        /// Update entries without a digest and without asking (what the servers list at this
        /// moment is pinned, unreviewed).
        #[arg(long, conflicts_with = "check")]
        yes: bool,
        /// Print the review (--check) or what was written as one JSON object.
        #[arg(long)]
        json: bool,
    },
    /// Measure a server's round trip, as ping(8).
    ///
    /// Start one server and send it N MCP pings, as ping(8): one line per ping with its
    /// round-trip time, then a summary (sent, answered, lost, min/avg/max). The 2026-07-28
    /// protocol has no ping: a server spoken to in that era is sent `server/discover` instead,
    /// and the first line says so.
    ///
    /// Exit codes: 0 a ping was answered; 1 none was, or the server did not start; 2 a usage or
    /// configuration error.
    Ping {
        /// Where the configuration is (or the ad-hoc server), and the log level.
        #[command(flatten)]
        project: ServerArgs,
        /// Which server, how often.
        #[command(flatten)]
        args: PingArgs,
        /// Print one JSON object: `{"server", "method", "sent", "answered", "lost_percent",
        /// "rtt_ms", "min_ms", "avg_ms", "max_ms", "pings"}` (a failure: the error object).
        #[arg(long)]
        json: bool,
    },
    /// Add the servers of another client's file to project.yaml.
    ///
    /// Add the servers of another client's file to project.yaml: Claude Code's `.mcp.json`,
    /// Claude Desktop's `claude_desktop_config.json`, Cursor's and VS Code's `mcp.json`, Codex's
    /// `config.toml`. Secrets (`env` values, credential headers) go to local.toml as
    /// `secret_ref`s, never to project.yaml; `${VAR}` references are named as needing a value;
    /// a server key the project has is not overwritten. One line per server.
    ///
    /// Exit codes: 0 imported (or nothing to import); 2 the file cannot be read or is no known
    /// format, the project files cannot be added to, or local.toml can be read by others.
    Import(import::ImportArgs),
    /// Serve the bundled demo MCP server on stdin/stdout (the quickstart's server).
    DemoServer,
    /// Log in to OAuth servers, show their tokens' state, forget them.
    Auth {
        /// What to do.
        #[command(subcommand)]
        command: AuthCommand,
    },
}

/// `$f(project)` for a command that talks to servers, `None` for the others.
macro_rules! server_args {
    ($command:expr) => {
        match $command {
            Command::Tools { project, .. }
            | Command::Describe { project, .. }
            | Command::Call { project, .. }
            | Command::Status { project, .. }
            | Command::Shell { project, .. }
            | Command::Resources { project, .. }
            | Command::Read { project, .. }
            | Command::Prompts { project, .. }
            | Command::Prompt { project, .. }
            | Command::Complete { project, .. }
            | Command::Skills { project, .. }
            | Command::Skill { project, .. }
            | Command::Lock { project, .. }
            | Command::Ping { project, .. } => Some(project),
            Command::Check(_) | Command::DemoServer | Command::Auth { .. } | Command::Import(_) => {
                None
            }
        }
    };
}

impl Command {
    /// The server arguments of a command that talks to servers.
    fn server_args(&self) -> Option<&ServerArgs> {
        server_args!(self)
    }

    /// The same, to fill in the ad-hoc server's command.
    fn server_args_mut(&mut self) -> Option<&mut ServerArgs> {
        server_args!(self)
    }
}

/// `kaged-mcp auth …`.
#[derive(Debug, Subcommand)]
pub(crate) enum AuthCommand {
    /// Log in to an OAuth server and store its tokens.
    ///
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
    /// Show each OAuth server's login state.
    ///
    /// Show, per OAuth server, whether it is logged in, the expiry and the scopes (never a
    /// token).
    #[command(after_help = JSON_EXIT_CODES)]
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

impl AgentArg {
    /// Who the command acts as.
    fn who(&self) -> start::Who<'_> {
        start::Who {
            agent: self.agent.as_deref(),
        }
    }
}

/// Where the configuration is.
#[derive(Debug, Args)]
pub(crate) struct ProjectArgs {
    /// The project directory, holding project.yaml (and project.local.yaml, local.toml)
    /// [default: the nearest directory holding project.yaml, from the current directory
    /// upward, as cargo finds Cargo.toml].
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
    /// The operator's local.toml [default: DIR/local.toml when it exists].
    #[arg(long, value_name = "FILE")]
    pub(crate) local: Option<PathBuf>,
    /// The daemon's config.toml [default: built-in defaults].
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
}

impl ProjectArgs {
    /// The configuration's files: `--project`, or the nearest directory upward from the
    /// current one that holds `project.yaml` (a usage error when there is none).
    fn paths(&self) -> Result<ConfigPaths, Failure> {
        let project_dir = match &self.project {
            Some(dir) => dir.clone(),
            None => {
                let cwd = std::env::current_dir().map_err(|e| {
                    Failure::usage(format!(
                        "cannot read the current directory ({e}); give --project DIR"
                    ))
                })?;
                find_project(&cwd).ok_or_else(|| {
                    Failure::usage(format!(
                        "no project.yaml in {} or any directory above it; give --project DIR",
                        cwd.display()
                    ))
                })?
            }
        };
        hints::set_context(hints::Context::project(
            &project_dir,
            self.local.as_deref(),
            self.config.as_deref(),
        ));
        Ok(ConfigPaths {
            project_dir,
            local: self.local.clone(),
            config: self.config.clone(),
        })
    }
}

/// The nearest of `dir` and its ancestors that holds a `project.yaml` file.
fn find_project(dir: &std::path::Path) -> Option<PathBuf> {
    dir.ancestors()
        .find(|d| d.join("project.yaml").is_file())
        .map(std::path::Path::to_path_buf)
}

/// What `status --help` says of its JSON.
const STATUS_JSON_HELP: &str = "JSON (--json): an array, one object per server, with the keys
  server, transport (stdio, streamable-http, sse), state (idle, starting, ready, restarting,
  failed, disabled), tools (registered tools), pins (enforce, warn, off: how mcp.lock holds
  its catalog), held (the tools pinning holds out → why), last_error and error_detail (the
  operator's line and the whole chain, or null), consecutive_failures, calls, tool_errors,
  failed_calls, timeouts, restarts, p50_ms and p99_ms (call latency, or null), tasks_in_flight, tasks_completed,
  tasks_failed, tasks_cancelled, era (legacy or modern) and protocol_version (null before
  the server started), era_setting (auto, legacy, modern: local.toml), server_info (the
  server's serverInfo as sent: name, version, title, websiteUrl, description, icons, …),
  capabilities (as announced), instructions (whole; under pins = \"enforce\" the approved ones
  when the server's changed), instructions_held (whether they are held); the last three null
  before it started; offers (which of tools, resources, prompts and skills its capabilities
  declare: only those are asked for; empty before it started).

Exit codes: 0 every server named (or declared) is ready or disabled; 1 one is not, or the
session failed; 2 a usage or configuration error (an unknown server names the declared ones).
With --json a failure is one object on stdout, {\"error\": {\"kind\", \"message\", …}}.";

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
    let json = std::env::args_os().any(|a| a == "--json");
    let (args, command) = match adhoc::split_command(std::env::args_os().collect()) {
        Ok(split) => split,
        Err(f) => return ExitCode::from(f.exit(json, false)),
    };
    match <Cli as clap::Parser>::try_parse_from(args) {
        Ok(cli) if command.is_empty() => run(cli),
        Ok(mut cli) => match cli.command.server_args_mut() {
            Some(server) => {
                server.adhoc.command = command;
                run(cli)
            }
            None => ExitCode::from(
                Failure::usage(
                    "`-- COMMAND` gives an ad-hoc server, which only the commands that talk to \
                     servers take",
                )
                .exit(json, false),
            ),
        },
        Err(e) => {
            // A usage error of a command asked for JSON is that command's one JSON failure
            // too; clap prints its own message on stderr and exits 2.
            if e.use_stderr() && json {
                println!("{}", Failure::usage(output::clap_message(&e)).json());
            }
            e.exit()
        }
    }
}

/// Runs a parsed command line and returns the process exit code.
pub(crate) fn run(cli: Cli) -> ExitCode {
    // The demo server is a peer, not a command: it exports nothing (it inherits `OTEL_*`
    // when a traced command starts it).
    let telemetry = init_tracing(
        cli.verbose,
        !matches!(cli.command, Command::DemoServer),
        cli.command
            .server_args()
            .is_some_and(|a| a.log_level.is_some()),
    );
    let verbose = cli.verbose > 0;
    // One trace per command: every request span of the command is a child of this one.
    let root = tracing::info_span!(
        target: crate::telemetry::TARGET,
        "kaged-mcp",
        otel.name = %format_args!("kaged-mcp {}", verb(&cli.command)),
        otel.kind = "internal",
        process.exit.code = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    let code = root.in_scope(|| dispatch(cli.command, verbose));
    root.record("process.exit.code", i64::from(code));
    if code != EXIT_OK {
        root.record("otel.status_code", "error");
    }
    drop(root);
    #[cfg(feature = "otlp")]
    if let Some(telemetry) = telemetry {
        telemetry.shutdown();
    }
    #[cfg(not(feature = "otlp"))]
    let _ = telemetry;
    ExitCode::from(code)
}

/// Runs one command; returns its exit code.
fn dispatch(command: Command, verbose: bool) -> u8 {
    match command {
        Command::Check(args) => check::run(&args, verbose),
        Command::DemoServer => demo_server::run(),
        Command::Auth { command } => auth::run(command),
        Command::Tools {
            project,
            who,
            args,
            json,
        } => catalog_cmds::tools(&project, who.who(), &args.servers, json, verbose),
        Command::Describe {
            project,
            who,
            args,
            json,
        } => catalog_cmds::describe(&project, who.who(), &args.tool, json, verbose),
        Command::Call {
            project,
            who,
            args,
            json,
        } => call::run(
            &project,
            who.who(),
            &args.tool,
            call::Arguments {
                args: args.args.as_deref(),
                pairs: &args.arg,
            },
            call::CallOutput {
                json,
                verbose,
                quiet: args.quiet,
            },
        ),
        Command::Status {
            project,
            args,
            json,
        } => session_cmds::status(&project, &args.servers, json, verbose),
        Command::Shell { project, who, json } => shell::run(&project, who.who(), json, verbose),
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
            expect,
            yes,
            json,
        } => lock::run(
            &project,
            &lock::LockArgs {
                servers,
                check,
                expect,
                yes,
                json,
            },
            verbose,
        ),
        Command::Ping {
            project,
            args,
            json,
        } => ping::run(&project, &args, json, verbose),
        Command::Import(args) => import::run(&args),
    }
}

/// The command's name, as its root span names it (`kaged-mcp call`).
fn verb(command: &Command) -> &'static str {
    match command {
        Command::Check(_) => "check",
        Command::Tools { .. } => "tools",
        Command::Describe { .. } => "describe",
        Command::Call { .. } => "call",
        Command::Status { .. } => "status",
        Command::Shell { .. } => "shell",
        Command::Resources { .. } => "resources",
        Command::Read { .. } => "read",
        Command::Prompts { .. } => "prompts",
        Command::Prompt { .. } => "prompt",
        Command::Complete { .. } => "complete",
        Command::Skills { .. } => "skills",
        Command::Skill { .. } => "skill",
        Command::Lock { .. } => "lock",
        Command::Ping { .. } => "ping",
        Command::Import(_) => "import",
        Command::DemoServer => "demo-server",
        Command::Auth { command } => match command {
            AuthCommand::Login { .. } => "auth login",
            AuthCommand::Status { .. } => "auth status",
            AuthCommand::Logout { .. } => "auth logout",
        },
    }
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
///
/// With `server_logs` (`--log-level`), the servers' log messages are shown by
/// [`server_log::ServerLog`], one line each, and left out of that log.
///
/// When nothing is to be shown nor exported (no `-v`, no `RUST_LOG`, no `--log-level`, no
/// export), no subscriber is installed at all: every span and event is then a no-op, and
/// neither tracing-subscriber's code nor its span slab is on the start path (issue 41).
fn init_tracing(verbose: u8, export: bool, server_logs: bool) -> Option<Telemetry> {
    use std::io::IsTerminal;
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    use tracing_subscriber::{EnvFilter, Layer as _};
    let rust_log = std::env::var("RUST_LOG")
        .ok()
        .filter(|v| !v.trim().is_empty());
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
    if verbose == 0 && rust_log.is_none() && !server_logs && telemetry.is_none() {
        return None;
    }
    let filter = match rust_log {
        Some(v) => EnvFilter::new(v),
        None => EnvFilter::new(match verbose {
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
        .with_filter(filter)
        .with_filter(tracing_subscriber::filter::filter_fn(move |m| {
            !(server_logs && server_log::is_server_log(m))
        }));
    let server_log = server_logs.then(|| {
        server_log::ServerLog.with_filter(tracing_subscriber::filter::filter_fn(
            server_log::is_server_log,
        ))
    });
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
        .with(server_log)
        .with(export)
        .try_init();
    telemetry
}

/// Loads the configuration (its warnings as `warning:` lines on stderr), or the failure to
/// print.
fn load_config(args: &ProjectArgs) -> Result<config::Config, Failure> {
    let config = config::load(&args.paths()?)
        .map_err(|errs| Failure::config(errs.iter().map(ToString::to_string).collect()))?;
    for w in &config.warnings {
        eprintln!("warning: {w}");
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_command_line_is_well_formed() {
        // clap checks ids, positions and flags only in debug builds, at parse: here, for every
        // command at once.
        <Cli as clap::CommandFactory>::command().debug_assert();
    }

    #[test]
    fn the_ad_hoc_command_is_split_at_the_first_double_dash() {
        let (args, command) = adhoc::split_command(
            [
                "kaged-mcp",
                "call",
                "mcp.adhoc.t",
                "--",
                "node",
                "s.js",
                "--",
                "x",
            ]
            .map(Into::into)
            .to_vec(),
        )
        .unwrap();
        assert_eq!(args.len(), 3);
        assert_eq!(command, ["node", "s.js", "--", "x"]);
        assert!(
            adhoc::split_command(["kaged-mcp", "tools", "--"].map(Into::into).to_vec()).is_err()
        );
    }
}
