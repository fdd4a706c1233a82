//! `kaged-mcp skills [SERVER]` and `kaged-mcp skill SERVER NAME [--file PATH]`: the skills
//! servers serve (SEP-2640), listed without reading a file, and one skill loaded and verified
//! (size, digest, frontmatter) before it is printed.

use std::io::Write;

use clap::Args;
use serde_json::json;

use crate::session::Session;
use crate::Error;

use super::output::Failure;
use super::start::{report, start, Scope};
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
                    report(e, verbose);
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
                            "{server}\t{}\t{}",
                            s.name(),
                            s.description().unwrap_or("")
                        );
                    }
                }
            }
            Err(e @ Error::UnknownServer { .. }) => return Err(Failure::of(&e)),
            Err(e) => errors.push(e),
        }
    }
    if json {
        let _ = writeln!(out, "{}", serde_json::Value::Array(rows));
    }
    Ok(errors)
}

/// `kaged-mcp skill`: the verified `SKILL.md` (or `--file`) on stdout (`--json`: `{server,
/// skill, uri, mimeType, text}`). Exit 0; 1 when the skill is refused (the line names the
/// check: `digest`, `size`, `frontmatter`) or the server failed; 2 for an undeclared server.
pub(super) fn show(project: &ServerArgs, args: &SkillArgs, json: bool, verbose: bool) -> u8 {
    super::interrupt::block_on(async {
        let (session, _) = match start(project, Scope::Server(&args.server), false, verbose).await {
            Ok(s) => s,
            Err(f) => return f.exit(json, verbose),
        };
        let mut out = std::io::stdout().lock();
        let code = match show_on(&session, args, json, &mut out).await {
            Ok(()) => EXIT_OK,
            Err(f) => f.exit(json, verbose),
        };
        let _ = out.flush();
        drop(out);
        super::interrupt::end(session).await;
        code
    })
}

/// One skill of a started session, loaded, verified and written to `out`; the failure naming
/// the check that refused it. What `skill` prints, and the shell's `skill`.
pub(super) async fn show_on(
    session: &Session,
    args: &SkillArgs,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let content = load(session, args).await.map_err(|e| failure(&e))?;
    let text = String::from_utf8_lossy(&content.bytes);
    if json {
        let _ = writeln!(
            out,
            "{}",
            json!({"server": args.server, "skill": args.name, "uri": content.uri,
                   "mimeType": content.mime_type, "text": text})
        );
    } else {
        let _ = out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = writeln!(out);
        }
    }
    Ok(())
}

/// The skill's `SKILL.md`, or the file `--file` names.
async fn load(session: &Session, args: &SkillArgs) -> Result<crate::client::SkillContent, Error> {
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
        .code(code)
        .with("server", e.server())
        .with("check", check)
}
