//! `kaged-mcp status` and `shell`, and what `call` ([`super::call`]) shares with them:
//! printing results (every content block, [`super::render`]) and each server's status.

use std::io::{BufRead, Write};

use serde_json::{json, Map, Value};

use crate::protocol::ToolResult;
use crate::session::{ServerStatus, Session};
use crate::transport::text::clean;
use crate::Error;

use super::catalog_cmds::{catalog, print_catalog};
use super::interrupt::Signals;
use super::output::Failure;
use super::start::{runtime, start, start_lasting, Scope, Who};
use super::{protocol_cmds, render, typed_args, ServerArgs, EXIT_FAILED, EXIT_OK};

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

/// The `--json` form of a result: `{"content", "structuredContent", "isError", "truncated"}`,
/// and the result's `_meta` when it has one.
pub(crate) fn result_json(r: &ToolResult) -> Value {
    let mut v = json!({
        "content": r.content,
        "structuredContent": r.structured_content,
        "isError": r.is_error,
        "truncated": r.truncated,
    });
    if let (Value::Object(m), Some(meta)) = (&mut v, &r.meta) {
        m.insert("_meta".into(), meta.clone());
    }
    v
}

/// Writes a result: its JSON form, or every content block as text ([`render::blocks`]) and,
/// when there is none, the structured content.
pub(super) fn print_result(
    r: &ToolResult,
    json: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, &result_json(r))?;
        writeln!(out)
    } else {
        let text = render::blocks(&r.content);
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
                let line = format!(
                    "  held by mcp.lock: {} ({}; `kaged-mcp lock --check {}` shows why)",
                    s.held.len(),
                    held.join(", "),
                    s.server
                );
                writeln!(out, "{}", super::hints::fix(&line))?;
            }
            write_identity(s, out)?;
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

/// Who the server says it is, indented under its status line: `server: name version (title,
/// website)`, its capabilities, the first line of its instructions. Nothing before it started.
fn write_identity(s: &ServerStatus, out: &mut impl Write) -> std::io::Result<()> {
    if let Some(info) = &s.server_info {
        let mut line = clean(&format!("{} {}", info.name, info.version), 400);
        let website = info.extra.get("websiteUrl").and_then(Value::as_str);
        let more: Vec<String> = info
            .title
            .iter()
            .map(|t| clean(t, 200))
            .chain(website.map(|w| clean(w, 400)))
            .collect();
        if !more.is_empty() {
            line.push_str(&format!(" ({})", more.join(", ")));
        }
        writeln!(out, "  server: {}", line.trim())?;
    }
    if let Some(caps) = s.capabilities.as_ref().and_then(Value::as_object) {
        let shown: Vec<String> = caps
            .iter()
            .map(|(name, v)| {
                let flags: Vec<&str> = v
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .filter(|(_, f)| **f == Value::Bool(true))
                            .map(|(k, _)| k.as_str())
                            .collect()
                    })
                    .unwrap_or_default();
                if flags.is_empty() {
                    clean(name, 80)
                } else {
                    clean(&format!("{name} ({})", flags.join(", ")), 400)
                }
            })
            .collect();
        let shown = if shown.is_empty() {
            "none".to_owned()
        } else {
            shown.join(", ")
        };
        writeln!(out, "  capabilities: {shown}")?;
    }
    if let Some(first) = s
        .instructions
        .as_deref()
        .and_then(|i| i.lines().map(str::trim).find(|l| !l.is_empty()))
    {
        let more = if s.instructions.as_deref().is_some_and(|i| i.trim() != first) {
            " (…; --json has all of them)"
        } else {
            ""
        };
        writeln!(out, "  instructions: {}{more}", clean(first, 400))?;
    }
    Ok(())
}

/// Whether every enabled server is ready.
fn all_ready(st: &[ServerStatus]) -> bool {
    st.iter()
        .all(|s| s.state == "ready" || s.state == "disabled")
}

/// `kaged-mcp status [SERVER…]`: starts the servers named (or all) and prints their status;
/// exit 1 when one of them is enabled and not ready.
pub(super) fn status(args: &ServerArgs, servers: &[String], json: bool, verbose: bool) -> u8 {
    super::interrupt::block_on(async {
        let (session, _) = match start(args, Scope::Servers(servers), false, verbose).await {
            Ok(s) => s,
            Err(f) => return f.exit(json, verbose),
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
    // Every failure is one line: `error: …`, or with --json the one JSON failure.
    let err = |out: &mut std::io::StdoutLock<'_>, f: Failure| {
        let f = f.in_shell();
        if json {
            let _ = writeln!(out, "{}", f.json());
        } else {
            let _ = writeln!(out, "error: {}", f.message());
        }
    };
    match cmd {
        "quit" | "exit" => return true,
        "tools" => match catalog(session, who) {
            Ok(t) => {
                let _ = print_catalog(session, &t, json, &mut out);
            }
            Err(e) => err(&mut out, Failure::of(&e)),
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
                Err(e) => err(&mut out, Failure::of(&e)),
            }
        }
        "call" if !rest.is_empty() => {
            let (tool, a) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
            let schema = super::call::input_schema(session, tool);
            let arguments = typed_args::shell_call(a)
                .and_then(|(args, pairs)| typed_args::merge(args, &pairs, &schema));
            match arguments {
                Err(e) => err(&mut out, Failure::usage(e).with("tool", tool)),
                Ok(arguments) => {
                    drop(out);
                    let r = do_call(session, who, tool, arguments).await;
                    let mut out = std::io::stdout().lock();
                    match r {
                        Ok(r) => {
                            let _ = print_result(&r, json, &mut out);
                        }
                        Err(e) => err(&mut out, Failure::of(&e).with("tool", tool)),
                    }
                }
            }
        }
        "resources" | "read" | "prompts" | "prompt" | "complete" => {
            match protocol_cmds::parse_shell_line(line) {
                Err(e) => err(&mut out, Failure::usage(e)),
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
                                err(&mut out, Failure::of(&e));
                            }
                        }
                        Err(f) => err(&mut out, f),
                    }
                }
            }
        }
        _ => err(
            &mut out,
            Failure::usage(format!("unknown command `{line}`; commands: tools, call TOOL [JSON | --args JSON] [--arg KEY=VALUE]…, status, enable SERVER, resources [SERVER], read SERVER URI [--out FILE], prompts [SERVER], prompt SERVER NAME [--args JSON], complete SERVER (--prompt NAME | --template URI) ARG PREFIX [--context JSON], quit")),
        ),
    }
    let _ = std::io::stdout().flush();
    false
}

/// `kaged-mcp shell`: one command per line on stdin, one answer each, until `quit` or EOF;
/// SIGINT or SIGTERM cancels the command in flight and ends the shell (see
/// [`super::interrupt`]).
pub(super) fn shell(args: &ServerArgs, who: Who<'_>, json: bool, verbose: bool) -> u8 {
    runtime().block_on(async {
        // Listening from the start: an interrupt never leaves a server running, and one
        // during a command cancels what it has in flight.
        let mut signals = Signals::listen();
        let (session, _) = match signals
            .until(start_lasting(args, Scope::All, true, verbose))
            .await
        {
            Ok(Ok(s)) => s,
            Ok(Err(f)) => return f.exit(json, verbose),
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
