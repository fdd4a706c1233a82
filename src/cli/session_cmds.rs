//! `kaged-mcp status`, and what `call` ([`super::call`]) and the shell ([`super::shell`])
//! share with it: printing results (every content block, [`super::render`]) and each server's
//! status.

use std::io::Write;

use serde_json::{json, Value};

use crate::protocol::ToolResult;
use crate::session::ServerStatus;
use crate::transport::text::clean;

use super::start::{start, Scope};
use super::{render, ServerArgs, EXIT_FAILED, EXIT_OK};

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
        let text = serde_json::to_string(&result_json(r))?;
        out.write_all(crate::escape::json(&text).as_bytes())?;
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

/// Writes each server's status: the JSON array, or a line each with the indented details.
pub(super) fn print_status(
    st: &[ServerStatus],
    json: bool,
    verbose: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    if json {
        let text = serde_json::to_string(st)?;
        out.write_all(crate::escape::json(&text).as_bytes())?;
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
                write!(out, "\t{}", crate::escape::visible(e))?;
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
                writeln!(out, "{}", super::hints::line(&line))?;
            }
            write_identity(s, out)?;
            if verbose {
                if let Some(d) = s
                    .error_detail
                    .as_ref()
                    .filter(|d| Some(*d) != s.last_error.as_ref())
                {
                    writeln!(out, "  detail: {}", crate::escape::visible(d))?;
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
                let flags: Vec<std::borrow::Cow<'_, str>> = v
                    .as_object()
                    .map(|o| {
                        o.iter()
                            .filter(|(_, f)| **f == Value::Bool(true))
                            .map(|(k, _)| crate::escape::visible(k))
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
    if s.instructions_held {
        let line = format!(
            "  instructions: the server's changed since mcp.lock and are held (agents see the approved ones); `kaged-mcp lock --check {}` shows them",
            s.server
        );
        writeln!(out, "{}", super::hints::line(&line))?;
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
