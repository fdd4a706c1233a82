//! What each shell verb does on the shell's session: the one-shot commands' own code where a
//! command has a session-level part (`describe`, `skills`, `skill`, the protocol verbs, the
//! pings, printing results and status), a filter over the running session where the command
//! would start servers (`tools SERVER…`, `status SERVER…`).

use std::io::Write;

use serde_json::{json, Map, Value};

use crate::session::Session;
use crate::Error;

use super::super::output::Failure;
use super::super::start::{parse_args, Who};
use super::super::verb_args::PingArgs;
use super::super::{call, catalog_cmds, ping, protocol_cmds, session_cmds, skills_cmds};
use super::super::{typed_args, EXIT_CONFIG};
use super::verbs::{self, CallLine, ShellVerb};

/// The shell's session and how it answers.
pub(super) struct Shell<'a> {
    /// The session every verb acts on.
    pub(super) session: &'a Session,
    /// Who `tools`, `describe` and `call` act as.
    pub(super) who: Who<'a>,
    /// Every answer one line of JSON.
    pub(super) json: bool,
    /// `status` with details.
    pub(super) verbose: bool,
    /// The command running now, for a form asked during it.
    pub(super) current: super::form::Current,
}

/// What a verb left to tell after its answer: the failures of the servers a listing skipped,
/// and notes for stderr.
#[derive(Default)]
pub(super) struct Done {
    /// One failure line each.
    pub(super) errors: Vec<Error>,
    /// One `note:` line each, on stderr.
    pub(super) notes: Vec<String>,
}

impl From<Vec<Error>> for Done {
    fn from(errors: Vec<Error>) -> Self {
        Done {
            errors,
            notes: Vec::new(),
        }
    }
}

impl Shell<'_> {
    /// Tells a failure: one JSON line on stdout with `--json`, an `error:` line on stderr
    /// otherwise; its hints name the shell's verbs.
    pub(super) fn fail(&self, f: Failure) {
        let f = f.in_shell();
        if self.json {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{}", f.json());
            let _ = out.flush();
        } else {
            eprintln!("error: {}", f.message());
        }
    }

    /// Answers `verb`, writing the answer to `out`.
    pub(super) async fn answer(&self, verb: ShellVerb, out: &mut Vec<u8>) -> Result<Done, Failure> {
        let (session, json) = (self.session, self.json);
        match verb {
            ShellVerb::Help { verb } => help(verb.as_deref(), json, out).map(|()| Done::default()),
            ShellVerb::Tools(a) => {
                let servers = self.known(&a.servers)?;
                let tools =
                    catalog_cmds::catalog(session, &self.who).map_err(|e| Failure::of(&e))?;
                let tools: Vec<_> = tools
                    .into_iter()
                    .filter(|t| {
                        servers.is_empty()
                            || t.mcp_server.as_ref().is_some_and(|s| servers.contains(s))
                    })
                    .collect();
                let _ = catalog_cmds::print_catalog(session, &tools, json, out);
                Ok(Done::default())
            }
            ShellVerb::Describe(a) => {
                catalog_cmds::describe_on(session, &self.who, &a.tool, json, out)?;
                Ok(Done::default())
            }
            ShellVerb::Call(c) => self.call(c, out).await,
            ShellVerb::Status(a) => {
                let servers = self.known(&a.servers)?;
                let st: Vec<_> = session
                    .status()
                    .into_iter()
                    .filter(|s| servers.is_empty() || servers.contains(&s.server))
                    .collect();
                let _ = session_cmds::print_status(&st, json, self.verbose, out);
                Ok(Done::default())
            }
            ShellVerb::Enable { server } => {
                session.enable(&server).await.map_err(|e| Failure::of(&e))?;
                let _ = if json {
                    writeln!(out, "{}", json!({ "enabled": server }))
                } else {
                    writeln!(out, "enabled {server}")
                };
                Ok(Done::default())
            }
            ShellVerb::Ping(p) => self.ping(&p, out).await,
            ShellVerb::Protocol(v) => {
                // One answer per line: binary contents go to `--out` only.
                protocol_cmds::execute(session, &v, json, out, true)
                    .await
                    .map(Done::from)
            }
            ShellVerb::Skills(a) => skills_cmds::list_on(session, &a, json, out)
                .await
                .map(Done::from),
            ShellVerb::Skill(a) => {
                // One answer per line: a binary file goes to `--out` only.
                skills_cmds::show_on(session, &a, json, out, true).await?;
                Ok(Done::default())
            }
            // The caller ends the shell before asking.
            ShellVerb::Quit => Ok(Done::default()),
        }
    }

    /// `names`, each a declared server, or the usage error naming the declared ones.
    fn known(&self, names: &[String]) -> Result<Vec<String>, Failure> {
        let declared: Vec<String> = self
            .session
            .status()
            .into_iter()
            .map(|s| s.server)
            .collect();
        match names.iter().find(|n| !declared.contains(n)) {
            None => Ok(names.to_vec()),
            Some(unknown) => Err(Failure::new(
                EXIT_CONFIG,
                "unknown_server",
                format!(
                    "no server `{}` in the project; the declared servers: {}",
                    crate::transport::text::clean(unknown, 100),
                    declared.join(", ")
                ),
            )
            .with("server", unknown.as_str())),
        }
    }

    /// `call`: the arguments as the one-shot `call` takes them (`--args` inline or `@FILE`,
    /// `--arg`), or the JSON word; the progress and the notes as the one-shot `call` shows
    /// them.
    async fn call(&self, c: CallLine, out: &mut Vec<u8>) -> Result<Done, Failure> {
        let tool = c.call.tool.as_str();
        let usage = |e: String| Failure::usage(e).with("tool", tool);
        let base = match (&c.call.args, &c.json) {
            (Some(_), Some(_)) => {
                return Err(usage(
                    "give the arguments once: a JSON object or --args".to_owned(),
                ))
            }
            (Some(a), None) if a.trim() == "-" => {
                return Err(usage(
                    "--args -: stdin is the shell's input; give the JSON inline or as @FILE"
                        .to_owned(),
                ))
            }
            (Some(a), None) => call::read_args(Some(a))
                .and_then(|t| parse_args(t.as_deref()))
                .map_err(|e| usage(format!("--args: {e}")))?,
            (None, j) => parse_args(j.as_deref()).map_err(usage)?,
        };
        let schema = call::input_schema(self.session, tool);
        let arguments = typed_args::merge(base, &c.call.arg, &schema).map_err(usage)?;
        let r = call::call_showing_progress(
            self.session,
            &self.who,
            tool,
            arguments,
            c.call.quiet,
            |progress| self.current.call_progress(progress),
        )
        .await
        .map_err(|e| Failure::of(&e).with("tool", tool))?;
        let _ = session_cmds::print_result(&r, self.json, out);
        Ok(Done {
            errors: Vec::new(),
            notes: call::notes(self.session, tool, &r),
        })
    }

    /// `ping`: the lines as they come in text mode; with `--json` one object, as `kaged-mcp
    /// ping --json` prints it (`{"server", "method", "sent", "answered", "rtt_ms", …}`).
    async fn ping(&self, p: &PingArgs, out: &mut Vec<u8>) -> Result<Done, Failure> {
        ping::check(p)?;
        let server = match &p.server {
            Some(s) => s.clone(),
            None => {
                let all: Vec<String> = self
                    .session
                    .status()
                    .into_iter()
                    .map(|s| s.server)
                    .collect();
                match <[String; 1]>::try_from(all) {
                    Ok([only]) => only,
                    Err(_) => return Err(Failure::usage("name the server to ping: `ping SERVER`")),
                }
            }
        };
        self.known(std::slice::from_ref(&server))?;
        let json = self.json;
        let measured = ping::pings(self.session, &server, p, &mut |line| {
            if !json {
                println!("{line}");
            }
        })
        .await;
        let _ = if json {
            writeln!(out, "{}", measured.json(&server, p.count))
        } else {
            writeln!(out, "{}", ping::summary(&server, p.count, &measured.rtts))
        };
        Ok(Done::default())
    }
}

/// `help [VERB]`: the verbs, or one verb's arguments; with `--json` `{"verbs": […]}` or
/// `{"verb", "help"}`.
fn help(verb: Option<&str>, json: bool, out: &mut Vec<u8>) -> Result<(), Failure> {
    let Some(verb) = verb else {
        let _ = if json {
            writeln!(out, "{}", verbs::list_json())
        } else {
            write!(out, "{}", verbs::list())
        };
        return Ok(());
    };
    let Some(text) = verbs::verb_help(verb) else {
        return Err(Failure::usage(format!(
            "no verb `{}`; `help` lists them",
            crate::transport::text::clean(verb, 100)
        )));
    };
    let _ = if json {
        let mut m = Map::new();
        m.insert("verb".into(), Value::from(verb));
        m.insert("help".into(), Value::from(text));
        writeln!(out, "{}", Value::Object(m))
    } else {
        writeln!(out, "{}", text.trim_end())
    };
    Ok(())
}
