//! `kaged-mcp call`: one tool through the full stack, starting only its server; the
//! arguments inline, from a file or stdin; the server's progress on stderr while it runs; the
//! result (or, with `--json`, the error as JSON) on stdout. SIGINT or SIGTERM cancels the call
//! on the wire and shuts the session down (see [`super::interrupt`]).

use std::io::{IsTerminal, Read, Write};

use serde_json::{Map, Value};

use crate::protocol::ToolResult;
use crate::session::Session;
use crate::Error;
use kaged_mcp_layers::timeout::{Progress, ProgressHandle};

use super::interrupt::Signals;
use super::output::Failure;
use super::session_cmds::print_result;
use super::start::{parse_args, runtime, server_of, start, Scope, Who};
use super::{typed_args, ServerArgs, EXIT_OK};

/// How `call` prints.
pub(super) struct CallOutput {
    /// One JSON object on stdout, the result or the error.
    pub(super) json: bool,
    /// The error's whole chain too.
    pub(super) verbose: bool,
    /// No progress on stderr.
    pub(super) quiet: bool,
}

/// The arguments of a call as given: `--args` and each `--arg key=value`.
pub(super) struct Arguments<'a> {
    /// `--args`: inline JSON, `@FILE`, or `-`.
    pub(super) args: Option<&'a str>,
    /// Each `--arg key=value`, typed once the tool's schema is known.
    pub(super) pairs: &'a [String],
}

/// The input schema of `tool` as its server listed it (`{}` when it is not registered: the
/// call then fails naming the tool, and `--arg` values stay strings until then).
pub(super) fn input_schema(session: &Session, tool: &str) -> Value {
    server_of(tool)
        .and_then(|s| session.registry().server_catalog(s))
        .and_then(|c| c.tools.get(tool).map(|t| t.tool.input_schema.clone()))
        .unwrap_or_else(|| Value::Object(Map::new()))
}

/// The text of `--args`: inline JSON, `@FILE`, or `-` for stdin.
pub(super) fn read_args(arg: Option<&str>) -> Result<Option<String>, String> {
    match arg {
        None => Ok(None),
        Some("-") => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("cannot read the arguments from stdin: {e}"))?;
            Ok(Some(text))
        }
        Some(a) => match a.strip_prefix('@') {
            Some(path) => std::fs::read_to_string(path)
                .map(Some)
                .map_err(|e| format!("cannot read the arguments from `{path}`: {e}")),
            None => Ok(Some(a.to_owned())),
        },
    }
}

/// A failure of `call`, naming the tool and its server: `{"error": {"kind", "message",
/// "server", "tool"}}`.
fn about(f: Failure, tool: &str) -> Failure {
    // The error's own server comes first; `with` keeps the first value of a key.
    let f = f.with("tool", tool);
    match server_of(tool) {
        Some(s) => f.with("server", s),
        None => f.with("server", Value::Null),
    }
}

/// Shows a call's progress on stderr: one line rewritten in place on a terminal, one line per
/// report otherwise.
struct ProgressLine {
    terminal: bool,
    shown: bool,
}

impl ProgressLine {
    fn show(&mut self, tool: &str, p: &Progress) {
        let mut line = format!("{tool}: ");
        let n = |v: f64| {
            if v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{}", v as i64)
            } else {
                format!("{v:.2}")
            }
        };
        match (&p.status, p.total) {
            // A task's status change: its message says the status and the server's words.
            (Some(_), _) => line.push_str("task"),
            (None, Some(total)) => line.push_str(&format!("{}/{}", n(p.progress), n(total))),
            (None, None) => line.push_str(&n(p.progress)),
        }
        if let Some(m) = &p.message {
            let m = crate::transport::text::clean(m, 200);
            line.push(' ');
            line.push_str(&crate::transport::redact_tokens(&m));
        }
        let mut err = std::io::stderr().lock();
        if self.terminal {
            let _ = write!(err, "\r\x1b[2K{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
        self.shown = true;
    }

    fn end(&self) {
        if self.terminal && self.shown {
            let _ = write!(std::io::stderr().lock(), "\r\x1b[2K");
        }
    }
}

/// Runs the call, showing its progress unless `quiet` (the one-shot `call` and the shell's);
/// `measured` is given the progress handle the call's timeout is measured on (the shell holds
/// it while a person fills a form).
pub(super) async fn call_showing_progress(
    session: &Session,
    who: &Who<'_>,
    tool: &str,
    arguments: Option<Map<String, Value>>,
    quiet: bool,
    measured: impl FnOnce(&ProgressHandle),
) -> Result<ToolResult, Error> {
    // Progress is asked for either way (the same request on the wire, the same timeout rule:
    // `timeout_ms` between reports, the progress cap over all); `--quiet` only shows nothing.
    if quiet {
        let handle = ProgressHandle::new();
        measured(&handle);
        return session
            .call_with_progress(who.agent, tool, arguments, handle)
            .await;
    }
    let (tx, mut rx) = tokio::sync::watch::channel::<Option<Progress>>(None);
    let handle = ProgressHandle::observed(std::sync::Arc::new(move |p: &Progress| {
        tx.send_replace(Some(p.clone()));
    }));
    measured(&handle);
    let call = session.call_with_progress(who.agent, tool, arguments, handle);
    tokio::pin!(call);
    let mut line = ProgressLine {
        terminal: std::io::stderr().is_terminal(),
        shown: false,
    };
    let result = loop {
        tokio::select! {
            r = &mut call => break r,
            Ok(()) = rx.changed() => {
                let p = rx.borrow_and_update().clone();
                if let Some(p) = p {
                    line.show(tool, &p);
                }
            }
        }
    };
    line.end();
    result
}

/// The notes for stderr after a result: the tool reported an error, the result was cut to
/// the cap. The one-shot `call` and the shell's print them alike.
pub(super) fn notes(session: &Session, tool: &str, r: &ToolResult) -> Vec<String> {
    let mut notes = Vec::new();
    if r.is_error {
        notes.push(format!(
            "note: tool `{tool}` reported an error (isError: true)"
        ));
    }
    if r.truncated {
        let cap = session.config().daemon.result_max_bytes;
        let structured = if r.structured_content.is_some() {
            "; structuredContent kept whole"
        } else {
            ""
        };
        let from = r
            .truncated_from
            .map(|n| format!("{n} bytes, "))
            .unwrap_or_default();
        notes.push(format!(
            "note: the result was {from}over the cap of {cap} bytes and was cut to fit \
             it{structured} (`result_max_bytes` under [mcp] in config.toml)"
        ));
    }
    notes
}

/// `kaged-mcp call`: starts only the tool's server, calls it through the full stack.
pub(super) fn run(
    args: &ServerArgs,
    who: Who<'_>,
    tool: &str,
    given: Arguments<'_>,
    out: CallOutput,
) -> u8 {
    let arguments = match read_args(given.args).and_then(|a| parse_args(a.as_deref())) {
        Ok(a) => a,
        Err(e) => {
            return about(Failure::usage(format!("--args: {e}")), tool).exit(out.json, out.verbose)
        }
    };
    // A malformed pair is told before any server starts; its type once the schema is known.
    if let Some(e) = given.pairs.iter().find_map(|p| typed_args::split(p).err()) {
        return about(Failure::usage(e), tool).exit(out.json, out.verbose);
    }
    runtime().block_on(async {
        // Listening from the start: an interrupt never leaves the server running.
        let mut signals = Signals::listen();
        let started = match signals
            .until(start(args, Scope::ToolOf(tool), false, out.verbose))
            .await
        {
            Ok(started) => started,
            Err(signal) => {
                signal.announce("stopped while its server started; it was killed");
                return signal.exit_code();
            }
        };
        let (session, _) = match started {
            Ok(s) => s,
            Err(f) => return about(f, tool).exit(out.json, out.verbose),
        };
        let arguments =
            match typed_args::merge(arguments, given.pairs, &input_schema(&session, tool)) {
                Ok(a) => a,
                Err(e) => {
                    let code = about(Failure::usage(e), tool).exit(out.json, out.verbose);
                    super::interrupt::end(session).await;
                    return code;
                }
            };
        let result = match signals
            .until(call_showing_progress(
                &session,
                &who,
                tool,
                arguments,
                out.quiet,
                |_| {},
            ))
            .await
        {
            Ok(result) => result,
            // The call is dropped: its request is cancelled on the wire before the session
            // shuts down.
            Err(signal) => return signals.interrupted(session, signal).await,
        };
        let code = match result {
            Ok(r) => {
                let _ = print_result(&r, out.json, &mut std::io::stdout().lock());
                for note in notes(&session, tool, &r) {
                    eprintln!("{note}");
                }
                EXIT_OK
            }
            Err(e) => {
                // Only a login to make is the operator's to fix (2); an unknown server is an
                // unknown tool here, which the call reports (1).
                let f = Failure::of(&e);
                let f = if matches!(e, Error::LoginRequired { .. }) {
                    f
                } else {
                    f.code(super::EXIT_FAILED)
                };
                about(f, tool).exit(out.json, out.verbose)
            }
        };
        super::interrupt::end(session).await;
        code
    })
}
