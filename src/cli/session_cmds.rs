//! `kaged-mcp tools`, `call`, `status` and `shell`: the commands that start a session.

use std::io::{BufRead, Write};

use serde_json::{json, Map, Value};

use crate::protocol::ToolResult;
use crate::registry::ToolDefinition;
use crate::session::{ServerStatus, Session};
use crate::Error;

use super::{load_config, ProjectArgs, EXIT_CONFIG, EXIT_FAILED, EXIT_OK};

/// What `tools`, `call` and `shell` act as: the daemon itself, or one agent.
pub(super) struct Who<'a> {
    pub(super) agent: Option<&'a str>,
}

/// The runtime every command runs its session on.
pub(super) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread runtime can always be built")
}

/// Loads the configuration and starts a session; prints errors and returns the exit code on
/// failure. Failed servers are listed on stderr.
async fn start(args: &ProjectArgs) -> Result<Session, u8> {
    let config = load_config(args)?;
    match Session::start(config).await {
        Ok(s) => {
            for st in s.status() {
                if st.state == "failed" {
                    eprintln!(
                        "error: server `{}` failed: {}",
                        st.server,
                        st.last_error.as_deref().unwrap_or("unknown error")
                    );
                }
            }
            Ok(s)
        }
        Err(Error::Config(errs)) => {
            for e in &errs {
                eprintln!("error: {e}");
            }
            Err(EXIT_CONFIG)
        }
        Err(e) => {
            eprintln!("error: {e}");
            Err(EXIT_FAILED)
        }
    }
}

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

/// `kaged-mcp tools`.
pub(super) fn tools(args: &ProjectArgs, who: Who<'_>, json: bool) -> u8 {
    runtime().block_on(async {
        let session = match start(args).await {
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
                EXIT_OK
            }
            Err(e @ Error::LoginRequired { .. }) => {
                eprintln!("error: {e}");
                EXIT_CONFIG
            }
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_FAILED
            }
        };
        session.shutdown().await;
        code
    })
}

fn parse_args(text: Option<&str>) -> Result<Option<Map<String, Value>>, String> {
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

async fn do_call(
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

fn print_result(r: &ToolResult, json: bool, out: &mut impl Write) -> std::io::Result<()> {
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

/// `kaged-mcp call`.
pub(super) fn call(
    args: &ProjectArgs,
    who: Who<'_>,
    tool: &str,
    arguments: Option<&str>,
    json: bool,
) -> u8 {
    let arguments = match parse_args(arguments) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("error: --args: {e}");
            return EXIT_CONFIG;
        }
    };
    runtime().block_on(async {
        let session = match start(args).await {
            Ok(s) => s,
            Err(code) => return code,
        };
        let code = match do_call(&session, &who, tool, arguments).await {
            Ok(r) => {
                let _ = print_result(&r, json, &mut std::io::stdout().lock());
                if r.is_error {
                    eprintln!("note: tool `{tool}` reported an error (isError: true)");
                }
                if r.truncated {
                    eprintln!("note: the result was truncated to the result cap");
                }
                EXIT_OK
            }
            Err(e @ Error::LoginRequired { .. }) => {
                eprintln!("error: {e}");
                EXIT_CONFIG
            }
            Err(e) => {
                eprintln!("error: {e}");
                EXIT_FAILED
            }
        };
        session.shutdown().await;
        code
    })
}

fn print_status(st: &[ServerStatus], json: bool, out: &mut impl Write) -> std::io::Result<()> {
    if json {
        serde_json::to_writer(&mut *out, st)?;
        writeln!(out)
    } else {
        for s in st {
            let noun = if s.tools == 1 { "tool" } else { "tools" };
            write!(out, "{}\t{}\t{} {noun}", s.server, s.state, s.tools)?;
            if let Some(era) = s.era {
                write!(
                    out,
                    "\t{era} {}",
                    s.protocol_version.as_deref().unwrap_or("")
                )?;
            }
            if let Some(e) = &s.last_error {
                write!(out, "\t{}", e.replace('\n', " "))?;
            }
            writeln!(out)?;
            if s.calls > 0 || s.restarts > 0 {
                let ms =
                    |v: Option<f64>| v.map_or_else(|| "-".to_owned(), |v| format!("{v:.1} ms"));
                writeln!(
                    out,
                    "  calls {} · tool errors {} · failures {} · timeouts {} · restarts {} · p50 {} · p99 {}",
                    s.calls,
                    s.tool_errors,
                    s.failures,
                    s.timeouts,
                    s.restarts,
                    ms(s.p50_ms),
                    ms(s.p99_ms)
                )?;
            }
        }
        Ok(())
    }
}

/// `kaged-mcp status`.
pub(super) fn status(args: &ProjectArgs, json: bool) -> u8 {
    runtime().block_on(async {
        let session = match start(args).await {
            Ok(s) => s,
            Err(code) => return code,
        };
        let _ = print_status(&session.status(), json, &mut std::io::stdout().lock());
        session.shutdown().await;
        EXIT_OK
    })
}

/// `kaged-mcp shell`: one command per line on stdin, one answer each, until `quit` or EOF.
pub(super) fn shell(args: &ProjectArgs, who: Who<'_>, json: bool) -> u8 {
    runtime().block_on(async {
        let session = match start(args).await {
            Ok(s) => s,
            Err(code) => return code,
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
        while let Some(line) = rx.recv().await {
            let line = line.trim();
            if line.is_empty() {
                continue;
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
                "quit" | "exit" => break,
                "tools" => match catalog(&session, &who) {
                    Ok(t) => {
                        let _ = print_catalog(&t, json, &mut out);
                    }
                    Err(e) => err(&mut out, e.to_string()),
                },
                "status" => {
                    let _ = print_status(&session.status(), json, &mut out);
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
                        Err(e) => err(&mut out, e.to_string()),
                    }
                }
                "call" if !rest.is_empty() => {
                    let (tool, a) = rest.split_once(char::is_whitespace).unwrap_or((rest, ""));
                    match parse_args(Some(a)) {
                        Err(e) => err(&mut out, e),
                        Ok(arguments) => {
                            drop(out);
                            let r = do_call(&session, &who, tool, arguments).await;
                            let mut out = std::io::stdout().lock();
                            match r {
                                Ok(r) => {
                                    let _ = print_result(&r, json, &mut out);
                                }
                                Err(e) => err(&mut out, e.to_string()),
                            }
                        }
                    }
                }
                _ => err(
                    &mut out,
                    format!("unknown command `{line}`; commands: tools, call TOOL [JSON], status, enable SERVER, quit"),
                ),
            }
            let _ = std::io::stdout().flush();
        }
        session.shutdown().await;
        EXIT_OK
    })
}
