//! What every command that talks to servers does first: the runtime, which servers to start
//! ([`Scope`]), starting the session, the operator's error line, and the arguments a verb
//! takes as JSON. Both the session commands and the protocol verbs stand on it.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::config::Config;
use crate::session::{PinEvent, Session, SessionOptions};
use crate::Error;

use super::output::Failure;
use super::pin_notes::{self, PinNotes};
use super::{hints, ServerArgs, EXIT_FAILED};

/// What `tools`, `call` and `shell` act as: the daemon itself, or one agent.
pub(super) struct Who<'a> {
    pub(super) agent: Option<&'a str>,
}

/// The runtime every command runs its session on (the interrupt handling's, which needs it
/// too).
pub(super) use super::interrupt::runtime;

/// Prints an error as the operator's line, `error: …`, and with `-v` its whole chain.
pub(super) fn report(e: &Error, verbose: bool) {
    let reason = e.reason();
    eprintln!("error: {}", hints::line(&reason));
    let full = e.to_string();
    if verbose && full != reason {
        eprintln!("  detail: {}", hints::line(&full));
    }
}

/// Which servers a command starts.
pub(super) enum Scope<'a> {
    /// Every declared server (`tools`, `status`, `shell`).
    All,
    /// Only these servers (`tools SERVER…`, `status SERVER…`); every one must be declared,
    /// or the command is a usage error naming the declared servers. Empty means all.
    Servers(&'a [String]),
    /// Only the server of this tool name (`call`): none when the name names no declared
    /// server, so the call fails with the unknown tool's hint without starting anything.
    ToolOf(&'a str),
    /// Only this server (`read`, `prompt`, `complete`, or `resources SERVER`): none when it is
    /// not declared, so the verb fails naming it without starting anything.
    Server(&'a str),
}

/// The server key of `mcp.<server>.<tool>`.
pub(super) fn server_of(tool: &str) -> Option<&str> {
    tool.strip_prefix("mcp.")
        .map(|rest| rest.split_once('.').map_or(rest, |(server, _)| server))
}

/// What pinning found while the session started, one `warning:` line per server
/// ([`pin_notes`]), leaving out what the command tells itself, last and alone: the tool a
/// `call` or `describe` names (held, its error says so; registered all the same under
/// `pins = "warn"`, its own warning follows the servers' lines), and with `claim_all_held` a
/// server `tools` names whose tools are all held (`tools` fails naming it).
fn tell_pins(session: &Session, notes: &PinNotes, scope: &Scope<'_>, claim_all_held: bool) {
    let mut events = notes.told();
    let mut own = None;
    if let Scope::ToolOf(name) = scope {
        events.retain(|e| match e {
            PinEvent::Tool { server, tool, .. } if *name == format!("mcp.{server}.{tool}") => {
                own = Some(e.clone());
                false
            }
            _ => true,
        });
    }
    if let (true, Scope::Servers(names)) = (claim_all_held, scope) {
        let claimed = |server: &str| {
            names.iter().any(|n| n == server)
                && session
                    .registry()
                    .server_catalog(server)
                    .is_some_and(|c| pin_notes::all_held(&c))
        };
        events.retain(|e| match e {
            PinEvent::Tool { server, .. } | PinEvent::Server { server, .. } => !claimed(server),
        });
    }
    for line in pin_notes::lines(&events) {
        eprintln!("warning: {}", hints::line(&line));
    }
    if let Some(PinEvent::Tool {
        server,
        tool,
        verdict,
        held: false,
    }) = own
    {
        eprintln!(
            "warning: {}",
            hints::line(&pin_notes::registered_line(&server, &tool, &verdict))
        );
    }
}

fn options_for(
    config: &Config,
    scope: &Scope<'_>,
    one_shot: bool,
    notes: &Arc<PinNotes>,
) -> SessionOptions {
    let notes = Arc::clone(notes);
    let options = SessionOptions::new().on_pin_event(move |event| notes.hear(event));
    let options = if one_shot {
        options.one_shot()
    } else {
        options
    };
    let options = remember_eras(options);
    let server = match scope {
        Scope::All | Scope::Servers([]) => return options,
        Scope::Servers(names) => return options.only_servers(names.iter().cloned()),
        Scope::ToolOf(tool) => server_of(tool),
        Scope::Server(server) => Some(*server),
    };
    let only = server
        .filter(|s| config.project.servers.iter().any(|d| d.key == *s))
        .map(str::to_owned);
    options.only_servers(only)
}

/// `options` remembering each server's era in the operator's state directory,
/// `$XDG_STATE_HOME/kaged-mcp/eras` or else `~/.local/state/kaged-mcp/eras` (a relative or empty
/// variable is ignored, as the XDG specification says); unchanged when neither is set.
pub(super) fn remember_eras(options: SessionOptions) -> SessionOptions {
    let absolute =
        |v: Option<std::ffi::OsString>| v.map(std::path::PathBuf::from).filter(|p| p.is_absolute());
    let state = absolute(std::env::var_os("XDG_STATE_HOME"))
        .or_else(|| absolute(std::env::var_os("HOME")).map(|h| h.join(".local").join("state")));
    match state {
        Some(state) => options.remember_eras(state.join("kaged-mcp").join("eras")),
        None => options,
    }
}

/// The usage error of a `Scope::Servers` naming a server the project does not declare.
fn undeclared(config: &Config, scope: &Scope<'_>) -> Option<Failure> {
    let Scope::Servers(names) = scope else {
        return None;
    };
    let declared: Vec<&str> = config
        .project
        .servers
        .iter()
        .map(|s| s.key.as_str())
        .collect();
    let unknown = names.iter().find(|n| !declared.contains(&n.as_str()))?;
    let known = if declared.is_empty() {
        "none is declared".to_owned()
    } else {
        format!("the declared servers: {}", declared.join(", "))
    };
    Some(
        Failure::new(
            super::EXIT_CONFIG,
            "unknown_server",
            format!("no server `{unknown}` in the project; {known}"),
        )
        .with("server", unknown.as_str()),
    )
}

/// Loads the configuration and starts a session; the failure to print when it cannot. With
/// `announce`, each server that failed to start is one `error:` line on stderr (its chain too
/// with `verbose`); the count of those servers comes back with the session.
///
/// The session is [one-shot](SessionOptions::one_shot): it ends with the command, so a server
/// that failed is `failed`, never `restarting`. The shell's is [`start_lasting`].
pub(super) async fn start(
    args: &ServerArgs,
    scope: Scope<'_>,
    announce: bool,
    verbose: bool,
) -> Result<(Session, usize), Failure> {
    start_session(args, scope, announce, verbose, true, None, false).await
}

/// [`start`] for `tools SERVER…`: a server named whose tools pinning holds, every one, gets no
/// warning line; `tools` fails naming it, last.
pub(super) async fn start_tools(
    args: &ServerArgs,
    servers: &[String],
    verbose: bool,
) -> Result<(Session, usize), Failure> {
    start_session(
        args,
        Scope::Servers(servers),
        true,
        verbose,
        true,
        None,
        true,
    )
    .await
}

/// [`start`] for a session that lasts (the shell): a server that failed restarts on a later
/// call. With `elicitation`, the servers' `elicitation/create` requests go to it (the shell
/// on a terminal); without, elicitation is not advertised and is refused.
pub(super) async fn start_lasting(
    args: &ServerArgs,
    scope: Scope<'_>,
    announce: bool,
    verbose: bool,
    elicitation: Option<crate::client::elicitation::ElicitationService>,
) -> Result<(Session, usize), Failure> {
    start_session(args, scope, announce, verbose, false, elicitation, false).await
}

async fn start_session(
    args: &ServerArgs,
    scope: Scope<'_>,
    announce: bool,
    verbose: bool,
    one_shot: bool,
    elicitation: Option<crate::client::elicitation::ElicitationService>,
    claim_all_held: bool,
) -> Result<(Session, usize), Failure> {
    let config = args.load()?;
    if let Some(f) = undeclared(&config, &scope) {
        return Err(f);
    }
    let notes = PinNotes::new();
    let mut options = options_for(&config, &scope, one_shot, &notes);
    if let Some(handler) = elicitation {
        options = options.elicitation_handler(handler);
    }
    match Session::start_with(config, options).await {
        Ok(s) => {
            super::interrupt::remember(&s);
            tell_pins(&s, &notes, &scope, claim_all_held);
            let failed = s.start_failures();
            if announce {
                for f in &failed {
                    eprintln!("error: server `{}`: {}", f.server, hints::line(&f.reason));
                    if verbose && f.detail != f.reason {
                        eprintln!("  detail: {}", hints::line(&f.detail));
                    }
                }
            }
            let count = failed.len();
            Ok((s, count))
        }
        Err(Error::Config(errs)) => Err(Failure::config(
            errs.iter().map(ToString::to_string).collect(),
        )),
        Err(e) => Err(Failure::of(&e).code(EXIT_FAILED)),
    }
}

pub(super) fn parse_args(text: Option<&str>) -> Result<Option<Map<String, Value>>, String> {
    match text.map(str::trim) {
        None | Some("") => Ok(None),
        Some(t) => match serde_json::from_str::<Value>(t) {
            Ok(Value::Object(m)) => Ok(Some(m)),
            Ok(other) => Err(format!(
                "arguments must be a JSON object, got {}",
                match other {
                    Value::Array(_) => "an array",
                    Value::String(_) => "a string",
                    Value::Number(_) => "a number",
                    Value::Bool(_) => "a boolean",
                    _ => "null",
                }
            )),
            Err(e) => Err(format!("arguments are not valid JSON: {e}")),
        },
    }
}
