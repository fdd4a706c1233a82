//! `kaged-mcp resources`, `read`, `prompts`, `prompt` and `complete`: the rest of the client
//! protocol for the operator, one verb each, also answered by `kaged-mcp shell` (the same
//! arguments, parsed by the same clap types). A verb about one server starts only that server.
//!
//! Exit codes as for `call`: 0 done; 1 a server failed (its line names the server, the method
//! and the cause); 2 a usage or configuration error (an undeclared server, bad `--args` or
//! `--context`, a binary read with nowhere to go).

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use base64::Engine as _;
use clap::{Args, Subcommand};
use serde_json::{json, Map, Value};

use crate::protocol::{
    CompletionRef, Prompt, ReadResourceResult, Resource, ResourceContents, ResourceTemplate,
};
use crate::session::Session;
use crate::transport::text::{clean, redact_uri};
use crate::Error;

use super::output::Failure;
use super::start::{parse_args, report, start, Scope};
use super::{render, ServerArgs, EXIT_FAILED, EXIT_OK};

/// `resources [SERVER]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ResourcesArgs {
    /// Only this server [default: every server].
    pub(crate) server: Option<String>,
}

/// `read SERVER URI [--out FILE]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct ReadArgs {
    /// The server's key.
    pub(crate) server: String,
    /// The resource's URI, such as `demo://resource/dynamic/text/1`.
    pub(crate) uri: String,
    /// Write the contents (text or binary) to this file instead of stdout. Binary contents
    /// need it on a terminal.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
}

/// `prompts [SERVER]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PromptsArgs {
    /// Only this server [default: every server].
    pub(crate) server: Option<String>,
}

/// `prompt SERVER NAME [--args JSON]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct PromptArgs {
    /// The server's key.
    pub(crate) server: String,
    /// The prompt's name.
    pub(crate) name: String,
    /// The prompt's arguments, a JSON object of strings, e.g. `{"city": "Paris"}`.
    #[arg(long, value_name = "JSON")]
    pub(crate) args: Option<String>,
    /// One argument, `key=value` (repeatable; prompt arguments are strings), merged over
    /// `--args`, `--arg` winning.
    #[arg(long = "arg", value_name = "KEY=VALUE")]
    pub(crate) arg: Vec<String>,
}

/// `complete SERVER (--prompt NAME | --template URI_TEMPLATE) ARG PREFIX [--context JSON]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct CompleteArgs {
    /// The server's key.
    pub(crate) server: String,
    /// Complete an argument of this prompt.
    #[arg(
        long,
        value_name = "NAME",
        conflicts_with = "template",
        required_unless_present = "template"
    )]
    pub(crate) prompt: Option<String>,
    /// Complete a variable of this resource template (as listed, e.g.
    /// `demo://resource/dynamic/text/{resourceId}`).
    #[arg(long, value_name = "URI_TEMPLATE")]
    pub(crate) template: Option<String>,
    /// The argument (or template variable) to complete.
    pub(crate) argument: String,
    /// What is typed so far ("" for everything).
    pub(crate) prefix: String,
    /// The arguments already chosen, a JSON object of strings, e.g. `{"department": "Sales"}`.
    #[arg(long, value_name = "JSON")]
    pub(crate) context: Option<String>,
}

/// One verb, as the command line and the shell give it.
#[derive(Debug, Clone, Subcommand)]
pub(crate) enum Verb {
    /// The resources and resource templates of every (or one) server.
    Resources(ResourcesArgs),
    /// Read one resource.
    Read(ReadArgs),
    /// The prompts of every (or one) server, with their arguments.
    Prompts(PromptsArgs),
    /// Get one prompt's messages.
    Prompt(PromptArgs),
    /// Complete a prompt's argument or a resource template's variable.
    Complete(CompleteArgs),
}

impl Verb {
    /// The one server the verb is about, if it is about one.
    fn server(&self) -> Option<&str> {
        match self {
            Verb::Resources(a) => a.server.as_deref(),
            Verb::Prompts(a) => a.server.as_deref(),
            Verb::Read(a) => Some(&a.server),
            Verb::Prompt(a) => Some(&a.server),
            Verb::Complete(a) => Some(&a.server),
        }
    }
}

/// `kaged-mcp <verb>`: starts the servers the verb needs, runs it, prints its answer on stdout
/// and any failure as `error:` lines on stderr (with `json`, and as one JSON object on stdout).
pub(super) fn run(project: &ServerArgs, verb: &Verb, json: bool, verbose: bool) -> u8 {
    super::interrupt::block_on(async {
        let scope = match verb.server() {
            Some(server) => Scope::Server(server),
            None => Scope::All,
        };
        let (session, _) = match start(project, scope, verb.server().is_none(), verbose).await {
            Ok(s) => s,
            Err(f) => return f.exit(json, verbose),
        };
        let mut out = std::io::stdout().lock();
        let code = match execute(
            &session,
            verb,
            json,
            &mut out,
            std::io::stdout().is_terminal(),
        )
        .await
        {
            Ok(errors) => {
                for e in &errors {
                    report(e, verbose);
                }
                let failed = !errors.is_empty()
                    || (verb.server().is_none() && !session.start_failures().is_empty());
                if failed {
                    EXIT_FAILED
                } else {
                    EXIT_OK
                }
            }
            Err(f) => f.exit(json, verbose),
        };
        let _ = out.flush();
        drop(out);
        super::interrupt::end(session).await;
        code
    })
}

/// Runs `verb` on `session`, writing its answer to `out` (`terminal`: `out` is one, so
/// binary contents are refused). A verb over every server lists what it can: the servers that
/// failed come back as errors, to print after the answer; a verb about one server fails whole.
pub(super) async fn execute(
    session: &Session,
    verb: &Verb,
    json: bool,
    out: &mut dyn Write,
    terminal: bool,
) -> Result<Vec<Error>, Failure> {
    match verb {
        Verb::Resources(a) => list_resources(session, a, json, out).await,
        Verb::Read(a) => read_resource(session, a, json, out, terminal).await,
        Verb::Prompts(a) => list_prompts(session, a, json, out).await,
        Verb::Prompt(a) => get_prompt(session, a, json, out).await,
        Verb::Complete(a) => complete(session, a, json, out).await,
    }
}

/// The failure of writing the answer to `out`.
fn unwritten(e: std::io::Error) -> Failure {
    Failure::new(EXIT_FAILED, "io", format!("cannot write the answer: {e}"))
}

/// `resources`: the resources and templates of the servers asked for, then written.
async fn list_resources(
    session: &Session,
    a: &ResourcesArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<Vec<Error>, Failure> {
    let mut resources = Vec::new();
    let mut templates = Vec::new();
    let mut errors = Vec::new();
    for server in servers(session, a.server.as_deref()).map_err(|e| Failure::of(&e))? {
        match session.resources(&server).await {
            Ok((r, t)) => {
                resources.extend(r.into_iter().map(|r| (server.clone(), r)));
                templates.extend(t.into_iter().map(|t| (server.clone(), t)));
            }
            Err(e) if a.server.is_some() => return Err(Failure::of(&e)),
            Err(e) => errors.push(e),
        }
    }
    write_resources(&resources, &templates, json, out)?;
    Ok(errors)
}

/// Writes resources and templates, each with its server: one JSON object, or a tab-separated
/// line each (URI, name, MIME type, then the size or `template`).
fn write_resources(
    resources: &[(String, Resource)],
    templates: &[(String, ResourceTemplate)],
    json: bool,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    if json {
        let with_server = |server: &str, item: Value| match item {
            Value::Object(mut m) => {
                m.insert("server".into(), Value::from(server));
                Value::Object(m)
            }
            other => other,
        };
        let answer = json!({
            "resources": resources.iter().map(|(s, r)| with_server(s, json!(r))).collect::<Vec<_>>(),
            "templates": templates.iter().map(|(s, t)| with_server(s, json!(t))).collect::<Vec<_>>(),
        });
        writeln!(out, "{}", crate::escape::json(&answer.to_string())).map_err(unwritten)?;
        return Ok(());
    }
    for (server, r) in resources {
        let size = r.size.map_or_else(|| "-".to_owned(), |s| s.to_string());
        let mime = r.mime_type.as_deref().unwrap_or("-");
        writeln!(
            out,
            "{server}\t{}\t{}\t{}\t{size}",
            cell(&r.uri),
            cell(&r.name),
            cell(mime)
        )
        .map_err(unwritten)?;
    }
    for (server, t) in templates {
        let mime = t.mime_type.as_deref().unwrap_or("-");
        writeln!(
            out,
            "{server}\t{}\t{}\t{}\ttemplate",
            cell(&t.uri_template),
            cell(&t.name),
            cell(mime)
        )
        .map_err(unwritten)?;
    }
    Ok(())
}

/// `read`: one resource, written by [`write_read`], with a note when its text was cut.
async fn read_resource(
    session: &Session,
    a: &ReadArgs,
    json: bool,
    out: &mut dyn Write,
    terminal: bool,
) -> Result<Vec<Error>, Failure> {
    let read = session
        .read_resource(&a.server, &a.uri)
        .await
        .map_err(|e| Failure::of(&e))?;
    write_read(&read, a, json, out, terminal)?;
    if read.truncated {
        eprintln!(
            "note: the text was over the cap of {} bytes and was cut to fit it (`result_max_bytes` under [mcp] in config.toml)",
            session.config().daemon.result_max_bytes
        );
    }
    Ok(Vec::new())
}

/// `prompts`: the prompts of the servers asked for, then written.
async fn list_prompts(
    session: &Session,
    a: &PromptsArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<Vec<Error>, Failure> {
    let mut prompts = Vec::new();
    let mut errors = Vec::new();
    for server in servers(session, a.server.as_deref()).map_err(|e| Failure::of(&e))? {
        match session.prompts(&server).await {
            Ok(p) => prompts.extend(p.into_iter().map(|p| (server.clone(), p))),
            Err(e) if a.server.is_some() => return Err(Failure::of(&e)),
            Err(e) => errors.push(e),
        }
    }
    write_prompts(&prompts, json, out)?;
    Ok(errors)
}

/// Writes prompts, each with its server: a JSON array, or a line each (name, first line of the
/// description) followed by an indented line per argument.
fn write_prompts(
    prompts: &[(String, Prompt)],
    json: bool,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    if json {
        let list: Vec<Value> = prompts
            .iter()
            .map(|(server, p)| {
                let mut v = json!(p);
                if let Value::Object(m) = &mut v {
                    m.insert("server".into(), Value::from(server.as_str()));
                }
                v
            })
            .collect();
        writeln!(out, "{}", Value::Array(list)).map_err(unwritten)?;
        return Ok(());
    }
    for (server, p) in prompts {
        let desc = p
            .description
            .as_deref()
            .and_then(|d| d.lines().next())
            .unwrap_or("");
        writeln!(out, "{server}\t{}\t{}", cell(&p.name), cell(desc)).map_err(unwritten)?;
        for arg in &p.arguments {
            let required = if arg.required { " (required)" } else { "" };
            let desc = arg.description.as_deref().unwrap_or("");
            writeln!(out, "  {}{required}\t{}", cell(&arg.name), cell(desc)).map_err(unwritten)?;
        }
    }
    Ok(())
}

/// `prompt`: one prompt's messages, as JSON or a `role: content` line each.
async fn get_prompt(
    session: &Session,
    a: &PromptArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<Vec<Error>, Failure> {
    let arguments = strings("--args", a.args.as_deref())?;
    // No schema: every value is a string, as prompt arguments are.
    let arguments =
        super::typed_args::merge(arguments, &a.arg, &Value::Null).map_err(Failure::usage)?;
    let got = session
        .prompt(&a.server, &a.name, arguments.as_ref())
        .await
        .map_err(|e| Failure::of(&e))?;
    if json {
        writeln!(out, "{}", crate::escape::json(&json!(got).to_string())).map_err(unwritten)?;
    } else {
        for m in &got.messages {
            writeln!(out, "{}: {}", m.role, render::block(&m.content)).map_err(unwritten)?;
        }
    }
    Ok(Vec::new())
}

/// `complete`: the values offered for a prompt's argument or a template's variable, as JSON or
/// a line each, with a note when the server has more.
async fn complete(
    session: &Session,
    a: &CompleteArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<Vec<Error>, Failure> {
    let reference = match (&a.prompt, &a.template) {
        (Some(name), None) => CompletionRef::Prompt { name: name.clone() },
        (None, Some(uri)) => CompletionRef::ResourceTemplate { uri: uri.clone() },
        _ => {
            return Err(Failure::usage(
                "give exactly one of --prompt NAME and --template URI_TEMPLATE",
            ))
        }
    };
    let chosen = strings("--context", a.context.as_deref())?;
    let completion = session
        .complete(
            &a.server,
            &reference,
            &a.argument,
            &a.prefix,
            chosen.as_ref(),
        )
        .await
        .map_err(|e| Failure::of(&e))?;
    if json {
        writeln!(
            out,
            "{}",
            crate::escape::json(&json!(completion).to_string())
        )
        .map_err(unwritten)?;
        return Ok(Vec::new());
    }
    for v in &completion.values {
        writeln!(out, "{}", crate::escape::visible(v)).map_err(unwritten)?;
    }
    if completion.has_more == Some(true) {
        let total = completion
            .total
            .map(|t| format!(" of {t}"))
            .unwrap_or_default();
        eprintln!(
            "note: {} values shown{total}; type more to narrow them",
            completion.values.len()
        );
    }
    Ok(Vec::new())
}

/// The servers a verb lists: `only` (which must be declared and enabled), or every server
/// that started.
fn servers(session: &Session, only: Option<&str>) -> Result<Vec<String>, Error> {
    if let Some(server) = only {
        session.client(server)?;
        return Ok(vec![server.to_owned()]);
    }
    let failed: Vec<String> = session
        .start_failures()
        .into_iter()
        .map(|f| f.server)
        .collect();
    Ok(session
        .status()
        .into_iter()
        .map(|s| s.server)
        .filter(|s| !failed.contains(s) && session.client(s).is_ok())
        .collect())
}

/// A JSON object of strings from `--args` or `--context` (`flag`).
fn strings(flag: &str, text: Option<&str>) -> Result<Option<Map<String, Value>>, Failure> {
    let map = parse_args(text).map_err(|e| Failure::usage(format!("{flag}: {e}")))?;
    if let Some((key, _)) = map.iter().flatten().find(|(_, v)| !v.is_string()) {
        return Err(Failure::usage(format!(
            "{flag}: `{key}` is not a string (prompt arguments are strings)"
        )));
    }
    Ok(map)
}

/// A server's string fit for one cell of a tab-separated line: no control characters, no
/// escape sequences, no tab or line break (each run of white space one space).
fn cell(text: &str) -> String {
    clean(text, 4096)
}

/// Writes a read: JSON `{"contents", "truncated"}`; or the text to stdout (or `--out`), and the
/// blob's bytes to `--out` (or to stdout when it is not a terminal).
fn write_read(
    read: &ReadResourceResult,
    a: &ReadArgs,
    json: bool,
    out: &mut dyn Write,
    terminal: bool,
) -> Result<(), Failure> {
    let io = |e: std::io::Error| {
        Failure::new(EXIT_FAILED, "io", format!("cannot write the contents: {e}"))
    };
    if json {
        let answer = json!({"contents": read.contents, "truncated": read.truncated});
        return writeln!(out, "{}", crate::escape::json(&answer.to_string())).map_err(io);
    }
    let blobs = read
        .contents
        .iter()
        .filter(|c| matches!(c, ResourceContents::Blob(_)))
        .count();
    let binary = blobs > 0;
    if binary && blobs != read.contents.len() {
        return Err(Failure::usage(format!(
            "{} reads as text and binary contents together: read it with --json",
            redact_uri(&a.uri)
        )));
    }
    let bytes = if binary {
        let mut bytes = Vec::new();
        for c in &read.contents {
            if let ResourceContents::Blob(b) = c {
                let decoded = base64::engine::general_purpose::STANDARD
                    .decode(b.blob.trim())
                    .map_err(|e| {
                        Failure::new(
                            EXIT_FAILED,
                            "invalid_result",
                            format!(
                                "server `{}`: resources/read {}: the blob is not valid base64: {e}",
                                a.server,
                                redact_uri(&b.uri)
                            ),
                        )
                        .with("server", a.server.as_str())
                    })?;
                bytes.extend_from_slice(&decoded);
            }
        }
        bytes
    } else {
        // Texts one after the other, a line between them.
        read.joined_text().into_bytes()
    };
    match &a.out {
        Some(path) => std::fs::write(path, &bytes).map_err(|e| {
            Failure::new(
                EXIT_FAILED,
                "io",
                format!("cannot write {}: {e}", path.display()),
            )
        }),
        None if binary && terminal => Err(Failure::usage(format!(
            "{} is binary ({} bytes): write it with --out FILE (or redirect stdout)",
            redact_uri(&a.uri),
            bytes.len()
        ))),
        // A text for a person: its lines kept, every control and invisible code point shown
        // escaped (`--out` or `--json` give it exactly).
        None if !binary => {
            let text = String::from_utf8_lossy(&bytes);
            let shown = crate::escape::visible_lines(&text).join("\n");
            out.write_all(shown.as_bytes()).map_err(io)?;
            if !shown.ends_with('\n') {
                writeln!(out).map_err(io)?;
            }
            Ok(())
        }
        None => {
            out.write_all(&bytes).map_err(io)?;
            if !binary && !bytes.ends_with(b"\n") {
                writeln!(out).map_err(io)?;
            }
            Ok(())
        }
    }
}
