//! `kaged-mcp skills [SERVER]` and `kaged-mcp skill SERVER NAME [--file PATH]`: the skills
//! servers serve (SEP-2640), listed without reading a file, and one skill loaded and verified
//! (size, digest, frontmatter) before it is printed.
//!
//! Every string a server chose is printed through [`visible`](crate::escape::visible): names,
//! descriptions, URIs and the words of a refusal on one line each, a skill's text line by line
//! ([`visible_lines`](crate::escape::visible_lines)). A file's exact bytes go to `--out FILE`,
//! and a binary file's (one that is not UTF-8) to a stdout that is not a terminal; a binary
//! file is never drawn on a terminal.

use std::io::{IsTerminal as _, Write};
use std::path::PathBuf;

use base64::Engine as _;

use clap::Args;
use serde_json::json;

use crate::client::SkillContent;
use crate::escape::{visible, visible_lines};
use crate::session::Session;
use crate::Error;

use super::output::Failure;
use super::start::{start, Scope};
use super::{ServerArgs, EXIT_FAILED, EXIT_OK};

/// `skills [SERVER]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SkillsArgs {
    /// Only this server's skills (only it is started).
    pub(crate) server: Option<String>,
}

/// `skill SERVER NAME [--file PATH]`.
#[derive(Debug, Clone, Args)]
pub(crate) struct SkillArgs {
    /// The server key.
    pub(crate) server: String,
    /// The skill's name (its frontmatter's `name`), or its `SKILL.md` URI.
    pub(crate) name: String,
    /// A file of the skill instead of its `SKILL.md`: a listed URI, or a path within the skill
    /// (`references/FORMS.md`). The skill is loaded and verified first.
    #[arg(long)]
    pub(crate) file: Option<String>,
    /// Write the file's exact bytes to FILE instead of stdout. On stdout a text is shown with
    /// control and invisible characters escaped, and a binary file needs --out on a terminal.
    #[arg(long, value_name = "FILE")]
    pub(crate) out: Option<PathBuf>,
}

/// `kaged-mcp skills`: server, name and description of each skill, one a line (`--json`: an
/// array of `{server, uri, name, description, frontmatter, files}`). Exit 0; 1 when a server
/// failed or its list did; 2 for an undeclared server.
pub(super) fn list(project: &ServerArgs, args: &SkillsArgs, json: bool, verbose: bool) -> u8 {
    super::interrupt::block_on(async {
        let scope = args.server.as_deref().map_or(Scope::All, Scope::Server);
        let (session, failed) = match start(project, scope, args.server.is_none(), verbose).await {
            Ok(s) => s,
            Err(f) => return f.exit(json, verbose),
        };
        let mut out = std::io::stdout().lock();
        let code = match list_on(&session, args, json, &mut out).await {
            Ok(errors) => {
                for e in &errors {
                    Failure::of(e).escaped().tell(verbose);
                }
                if failed > 0 || !errors.is_empty() {
                    EXIT_FAILED
                } else {
                    EXIT_OK
                }
            }
            Err(f) => {
                drop(out);
                let code = f.exit(json, verbose);
                super::interrupt::end(session).await;
                return code;
            }
        };
        let _ = out.flush();
        drop(out);
        super::interrupt::end(session).await;
        code
    })
}

/// The skills of a started session's servers (`args.server`, or those that started) written
/// to `out`; the servers whose list failed come back as errors, an undeclared server as the
/// failure. What `skills` prints, and the shell's `skills`.
pub(super) async fn list_on(
    session: &Session,
    args: &SkillsArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<Vec<Error>, Failure> {
    let servers = match &args.server {
        Some(server) => vec![server.clone()],
        // Those that started (a failed one was announced when it failed).
        None => {
            let failed: Vec<String> = session
                .start_failures()
                .into_iter()
                .map(|f| f.server)
                .collect();
            session
                .status()
                .into_iter()
                .map(|s| s.server)
                .filter(|s| !failed.contains(s) && session.client(s).is_ok())
                .collect()
        }
    };
    let mut errors = Vec::new();
    let mut rows = Vec::new();
    for server in &servers {
        match session.skills(server).await {
            Ok(skills) => {
                for s in skills.iter() {
                    if json {
                        rows.push(json!({
                            "server": server, "uri": s.uri, "name": s.name(),
                            "description": s.description(), "frontmatter": s.frontmatter,
                            "files": s.resources,
                        }));
                    } else {
                        let _ = writeln!(
                            out,
                            "{}\t{}\t{}",
                            visible(server),
                            visible(s.name()),
                            visible(s.description().unwrap_or(""))
                        );
                    }
                }
            }
            Err(e @ Error::UnknownServer { .. }) => return Err(Failure::of(&e).escaped()),
            Err(e) => errors.push(e),
        }
    }
    if json {
        let _ = writeln!(out, "{}", serde_json::Value::Array(rows));
    }
    Ok(errors)
}

/// `kaged-mcp skill`: the verified `SKILL.md` (or `--file`) on stdout, or its exact bytes in
/// `--out` (`--json`: `{server, skill, uri, mimeType, text}`, `blob` in base64 instead of
/// `text` for a file that is not UTF-8). Exit 0; 1 when the skill is refused (the line names
/// the check: `digest`, `size`, `frontmatter`) or the server failed; 2 for an undeclared
/// server, and for a binary file bound for a terminal.
pub(super) fn show(project: &ServerArgs, args: &SkillArgs, json: bool, verbose: bool) -> u8 {
    super::interrupt::block_on(async {
        let (session, _) = match start(project, Scope::Server(&args.server), false, verbose).await {
            Ok(s) => s,
            Err(f) => return f.exit(json, verbose),
        };
        let terminal = std::io::stdout().is_terminal();
        let mut out = std::io::stdout().lock();
        let code = match show_on(&session, args, json, &mut out, terminal).await {
            Ok(()) => EXIT_OK,
            Err(f) => f.exit(json, verbose),
        };
        let _ = out.flush();
        drop(out);
        super::interrupt::end(session).await;
        code
    })
}

/// One skill of a started session, loaded, verified and written to `out` (or `--out`); the
/// failure naming the check that refused it. `terminal`: `out` is a terminal, which is never
/// sent a binary file. What `skill` prints, and the shell's `skill` (always as a terminal).
pub(super) async fn show_on(
    session: &Session,
    args: &SkillArgs,
    json: bool,
    out: &mut dyn Write,
    terminal: bool,
) -> Result<(), Failure> {
    let content = load(session, args).await.map_err(|e| failure(&e))?;
    write_content(&content, args, json, out, terminal)
}

/// Writes a verified file: its exact bytes to `--out`; else JSON; else a text line by line,
/// escaped, or a binary file's exact bytes when `out` is not a terminal.
fn write_content(
    content: &SkillContent,
    args: &SkillArgs,
    json: bool,
    out: &mut dyn Write,
    terminal: bool,
) -> Result<(), Failure> {
    let io =
        |e: std::io::Error| Failure::new(EXIT_FAILED, "io", format!("cannot write the file: {e}"));
    let text = content.text();
    if let Some(path) = &args.out {
        std::fs::write(path, &content.bytes).map_err(|e| {
            Failure::new(
                EXIT_FAILED,
                "io",
                format!("cannot write {}: {e}", path.display()),
            )
        })?;
        if json {
            let answer = json!({"server": args.server, "skill": args.name, "uri": content.uri,
                                "mimeType": content.mime_type, "out": path.display().to_string(),
                                "size": content.bytes.len()});
            writeln!(out, "{answer}").map_err(io)?;
        }
        return Ok(());
    }
    if json {
        let mut answer = json!({"server": args.server, "skill": args.name, "uri": content.uri,
                                "mimeType": content.mime_type});
        // A text as it is; anything else in base64, never a lossy conversion.
        match text {
            Some(text) => answer["text"] = json!(text),
            None => {
                let blob = base64::engine::general_purpose::STANDARD.encode(&content.bytes);
                answer["blob"] = json!(blob);
            }
        }
        return writeln!(out, "{answer}").map_err(io);
    }
    match text {
        Some(text) => {
            let lines = visible_lines(text);
            let shown = lines.join("\n");
            out.write_all(shown.as_bytes()).map_err(io)?;
            if !shown.ends_with('\n') {
                writeln!(out).map_err(io)?;
            }
            Ok(())
        }
        None if terminal => Err(Failure::usage(format!(
            "{} is binary ({} bytes): write it with --out FILE (or redirect stdout)",
            visible(&content.uri),
            content.bytes.len()
        ))),
        None => out.write_all(&content.bytes).map_err(io),
    }
}

/// The skill's `SKILL.md`, or the file `--file` names.
async fn load(session: &Session, args: &SkillArgs) -> Result<SkillContent, Error> {
    match &args.file {
        Some(file) => session.skill_file(&args.server, &args.name, file).await,
        None => session
            .load_skill(&args.server, &args.name)
            .await
            .map(|loaded| loaded.skill_md),
    }
}

/// The failure of `skill`: `{"error": {"kind", "message", "server", "check"}}`, a refused
/// skill naming its check; exit 2 for an undeclared server, 1 otherwise.
fn failure(e: &Error) -> Failure {
    let check = match e {
        Error::Request { source, .. } => source.skill_check().map(|(check, ..)| check.as_str()),
        _ => None,
    };
    let code = match e {
        Error::UnknownServer { .. } => super::EXIT_CONFIG,
        _ => EXIT_FAILED,
    };
    Failure::of(e)
        .escaped()
        .code(code)
        .with("server", e.server())
        .with("check", check)
}
