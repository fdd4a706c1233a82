//! `kaged-mcp tools`, `status` and `shell`, and what `call` ([`super::call`]) shares with
//! them: starting a session (all servers, or only a tool's), printing errors and results.

use std::io::{BufRead, Write};

use serde_json::{json, Map, Value};

use crate::protocol::ToolResult;
use crate::registry::ToolDefinition;
use crate::session::{ServerStatus, Session};
use crate::Error;

use super::interrupt::Signals;
use super::start::{parse_args, report, runtime, start, Scope, Who};
use super::{protocol_cmds, ProjectArgs, EXIT_CONFIG, EXIT_FAILED, EXIT_OK};

fn catalog(session: &Session, who: &Who<'_>) -> Result<Vec<ToolDefinition>, Error> {
    match who.agent {
        Some(a) => session.catalog_for(a),
        None => Ok(session.catalog()),
    }
}

fn print_catalog(
    tools: &[ToolDefinition],
    json: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, tools)?;
        writeln!(out)
    } else {
        for t in tools {
            let desc = t.description.lines().next().unwrap_or("");
            writeln!(out, "{}\t{}", t.name, desc)?;
        }
        Ok(())
    }
}

/// `kaged-mcp tools`: the catalog of the servers that started; exit 1 when any enabled
/// server did not (its `error:` line says why), 0 when all did.
pub(super) fn tools(args: &ProjectArgs, who: Who<'_>, json: bool, verbose: bool) -> u8 {
    super::interrupt::block_on(async {
        let (session, failed) = match start(args, Scope::All, true, verbose).await {
            Ok(s) => s,
            Err(code) => return code,
        };
        let code = match catalog(&session, &who) {
            Ok(tools) => {
                let _ = print_catalog(&tools, json, &mut std::io::stdout().lock());
                for (tool, why) in session.registry().unvalidated() {
                    if tools.iter().any(|t| t.name == tool) {
                        eprintln!("note: {tool} is not validated: {}", why.join("; "));
                    }
                }
                for server in &session.config().project.servers {
                    let Some(catalog) = session.registry().server_catalog(&server.key) else {
                        continue;
                    };
                    for (name, why) in &catalog.skipped {
                        eprintln!(
                            "note: server `{}` offers a tool `{name}` that is not registered: {why}",
                            server.key
                        );
                    }
                }
                if failed > 0 {
                    EXIT_FAILED
                } else {
                    EXIT_OK
                }
            }
            Err(e @ Error::LoginRequired { .. }) => {
                report(&e, verbose);
                EXIT_CONFIG
            }
            Err(e) => {
                report(&e, verbose);
                EXIT_FAILED
            }
        };
        super::interrupt::end(session).await;
        code
    })
}

pub(super) async fn do_call(
    session: &Session,
    who: &Who<'_>,
    tool: &str,
    args: Option<Map<String, Value>>,
) -> Result<ToolResult, Error> {
    match who.agent {
        Some(a) => session.call_as(a, tool, args).await,
        None => session.call(tool, args).await,
    }
}

/// The `--json` form of a result.
pub(crate) fn result_json(r: &ToolResult) -> Value {
    json!({
        "content": r.content,
        "structuredContent": r.structured_content,
        "isError": r.is_error,
        "truncated": r.truncated,
    })
}

pub(super) fn print_result(
    r: &ToolResult,
    json: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, &result_json(r))?;
        writeln!(out)
    } else {
        let text = r.joined_text();
        if text.is_empty() {
            if let Some(s) = &r.structured_content {
                return writeln!(out, "{s}");
            }
        }
        writeln!(out, "{text}")
    }
}

fn print_status(
    st: &[ServerStatus],
    json: bool,
    verbose: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, st)?;
        writeln!(out)
    } else {
        for s in st {
            let noun = if s.tools == 1 { "tool" } else { "tools" };
            write!(out, "{}\t{}\t{} {noun}", s.server, s.state, s.tools)?;
            if let (Some(era), Some(version)) = (s.era, &s.protocol_version) {
                write!(out, "\t{era} {version}")?;
            }
            if s.consecutive_failures > 0 && s.state != "ready" {
                let noun = if s.consecutive_failures == 1 {
                    "failure"
                } else {
                    "consecutive failures"
                };
                write!(out, "\t{} {noun}", s.consecutive_failures)?;
            }
            if let Some(e) = &s.last_error {
                write!(out, "\t{}", e.replace('\n', " "))?;
            }
            writeln!(out)?;
            if !s.held.is_empty() {
                let held: Vec<&str> = s.held.keys().map(String::as_str).collect();
                writeln!(
                    out,
                    "  held by mcp.lock: {} ({}; `kaged-mcp lock --check {}` shows why)",
                    s.held.len(),
                    held.join(", "),
                    s.server
                )?;
            }
            if verbose {
                if let Some(d) = s
                    .error_detail
                    .as_ref()
                    .filter(|d| Some(*d) != s.last_error.as_ref())
                {
                    writeln!(out, "  detail: {}", d.replace('\n', " "))?;
                }
            }
            if s.calls > 0 || s.restarts > 0 {
                let ms =
                    |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1} ms"));
                writeln!(
                    out,
                    "  calls {} · tool errors {} · failed calls {} · timeouts {} · restarts {} · p50 {} · p99 {}",
                    s.calls,
                    s.tool_errors,
                    s.failed_calls,
                    s.timeouts,
                    s.restarts,
                    ms(s.p50_ms),
                    ms(s.p99_ms)
                )?;
            }
            let done = s.tasks_completed + s.tasks_failed + s.tasks_cancelled;
            if s.tasks_in_flight > 0 || done > 0 {
                writeln!(
                    out,
                    "  tasks in flight {} · done {} (completed {} · failed {} · cancelled {})",
                    s.tasks_in_flight, done, s.tasks_completed, s.tasks_failed, s.tasks_cancelled
                )?;
            }
        }
        Ok(())
    }
}

/// Whether every enabled server is ready.
fn all_ready(st: &[ServerStatus]) -> bool {
    st.iter()
        .all(|s| s.state == "ready" || s.state == "disabled")
}

/// `kaged-mcp status`: exit 1 when an enabled server is not ready.
pub(super) fn status(args: &ProjectArgs, json: bool, verbose: bool) -> u8 {
    super::interrupt::block_on(async {
        let (session, _) = match start(args, Scope::All, false, verbose).await {
            Ok(s) => s,
            Err(code) => return code,
        };
        let st = session.status();
        let _ = print_status(&st, json, verbose, &mut std::io::stdout().lock());
        let started = session.start_failures().is_empty();
        super::interrupt::end(session).await;
        if all_ready(&st) && started {
            EXIT_OK
        } else {
            EXIT_FAILED
        }
    })
}

/// Runs one line of the shell; `true` when it asks to quit.
async fn shell_line(
    session: &Session,
    who: &Who<'_>,
    json: bool,
    verbose: bool,
    line: &str,
) -> bool {
    let line = line.trim();
    if line.is_empty() {
        return false;
    }
    let (cmd, rest) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    let rest = rest.trim();
    let mut out = std::io::stdout().lock();
    let err = |out: &mut std::io::StdoutLock<'_>, msg: String| {
        if json {
            let _ = writeln!(out, "{}", json!({"error": msg}));
        } else {
            let _ = writeln!(out, "error: {msg}");
        }
    };
    match cmd {
        "quit" | "exit" => return true,
        "tools" => match catalog(session, who) {
            Ok(t) => {
                let _ = print_catalog(&t, json, &mut out);
            }
            Err(e) => err(&mut out, e.reason()),
        },
        "status" => {
            let _ = print_status(&session.status(), json, verbose, &mut out);
        }
        "enable" if !rest.is_empty() => {
            drop(out);
            let r = session.enable(rest).await;
            let mut out = std::io::stdout().lock();
            match r {
                Ok(()) if json => {
                    let _ = writeln!(out, "{}", json!({"enabled": rest}));
                }
                Ok(()) => {
                    let _ = writeln!(out, "enabled {rest}");
                }
                Err(e) => err(&mut out, e.reason()),
            }
        }
        "call" if !rest.is_empty() => {
            let (tool, a) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            match parse_args(Some(a)) {
                Err(e) => err(&mut out, e),
                Ok(arguments) => {
                    drop(out);
                    let r = do_call(session, who, tool, arguments).await;
                    let mut out = std::io::stdout().lock();
                    match r {
                        Ok(r) => {
                            let _ = print_result(&r, json, &mut out);
                        }
                        Err(e) => err(&mut out, e.reason()),
                    }
                }
            }
        }
        "resources" | "read" | "prompts" | "prompt" | "complete" => {
            match protocol_cmds::parse_shell_line(line) {
                Err(e) => err(&mut out, e),
                Ok(verb) => {
                    drop(out);
                    // One answer per line: binary contents go to `--out` only.
                    let mut answer = Vec::new();
                    let r = protocol_cmds::execute(session, &verb, json, &mut answer, true).await;
                    let mut out = std::io::stdout().lock();
                    match r {
                        Ok(errors) => {
                            let _ = out.write_all(&answer);
                            for e in errors {
                                err(&mut out, e.reason());
                            }
                        }
                        Err(f) => err(&mut out, f.message),
                    }
                }
            }
        }
        _ => err(
            &mut out,
            format!("unknown command `{line}`; commands: tools, call TOOL [JSON], status, enable SERVER, resources [SERVER], read SERVER URI [--out FILE], prompts [SERVER], prompt SERVER NAME [--args JSON], complete SERVER (--prompt NAME | --template URI) ARG PREFIX [--context JSON], quit"),
        ),
    }
    let _ = std::io::stdout().flush();
    false
}

/// `kaged-mcp shell`: one command per line on stdin, one answer each, until `quit` or EOF;
/// SIGINT or SIGTERM cancels the command in flight and ends the shell (see
/// [`super::interrupt`]).
pub(super) fn shell(args: &ProjectArgs, who: Who<'_>, json: bool, verbose: bool) -> u8 {
    runtime().block_on(async {
        // Listening from the start: an interrupt never leaves a server running, and one
        // during a command cancels what it has in flight.
        let mut signals = Signals::listen();
        let (session, _) = match signals.until(start(args, Scope::All, true, verbose)).await {
            Ok(Ok(s)) => s,
            Ok(Err(code)) => return code,
            Err(signal) => {
                signal.announce("stopped while the servers started; they were killed");
                return signal.exit_code();
            }
        };
        let (tx, mut rx) = tokio::sync::mpsc::channel::<String>(1);
        // stdin is read on a thread of its own so the runtime keeps serving the servers
        // (pings, list_changed, restarts) while the operator types.
        std::thread::spawn(move || {
            let stdin = std::io::stdin();
            for line in stdin.lock().lines() {
                let Ok(line) = line else { break };
                if tx.blocking_send(line).is_err() {
                    break;
                }
            }
        });
        loop {
            let next = signals.until(rx.recv()).await;
            let line = match next {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(signal) => return signals.interrupted(session, signal).await,
            };
            match signals
                .until(shell_line(&session, &who, json, verbose, &line))
                .await
            {
                Ok(false) => {}
                Ok(true) => break,
                Err(signal) => return signals.interrupted(session, signal).await,
            }
        }
        session.shutdown().await;
        EXIT_OK
    })
}
