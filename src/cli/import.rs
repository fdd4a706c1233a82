//! `kaged-mcp import FILE`: another client's server list into the project's `mcp:` block.
//!
//! The conversion is [`crate::config::import`], which touches no file; this verb reads the
//! file, finds the project, writes `project.yaml` and `local.toml` (each through a temporary
//! file renamed over it, keeping an existing file's mode; a new `local.toml` gets 0600) and
//! prints one line per server, naming secrets and never showing a value. A `local.toml` that
//! others can read gets no secret: the verb refuses before writing anything.

use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{OpenOptionsExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};

use clap::Args;

use crate::config::import::{self, write, Plan, PlannedServer, PlannedTransport};
use crate::config::MAX_FILE_BYTES;
use crate::escape::visible;
use crate::protocol::uri::redact_uri;

use super::output::Failure;
use super::{find_project, EXIT_OK};

/// `kaged-mcp import` arguments.
#[derive(Debug, Args)]
pub(crate) struct ImportArgs {
    /// The file to import: `.mcp.json`, `claude_desktop_config.json`, Cursor's or VS Code's
    /// `mcp.json`, Codex's `config.toml`.
    pub(crate) file: PathBuf,
    /// The project directory to add the servers to [default: the nearest directory holding
    /// project.yaml, from the current directory upward; else the current directory, where
    /// project.yaml is created].
    #[arg(long, value_name = "DIR")]
    pub(crate) project: Option<PathBuf>,
    /// The local.toml the secrets go to [default: DIR/local.toml].
    #[arg(long, value_name = "FILE")]
    pub(crate) local: Option<PathBuf>,
    /// Print what would be done, and the YAML that would be added; write nothing.
    #[arg(long)]
    pub(crate) dry_run: bool,
}

/// Runs `kaged-mcp import`; returns the exit code.
pub(super) fn run(args: &ImportArgs) -> u8 {
    match import(args) {
        Ok(()) => EXIT_OK,
        Err(f) => f.exit(false, false),
    }
}

fn import(args: &ImportArgs) -> Result<(), Failure> {
    let text = read_input(&args.file)?;
    let dir = project_dir(args)?;
    let project_file = dir.join("project.yaml");
    let existing = read_optional(&project_file)?;
    let keys = write::declared_keys(existing.as_deref().unwrap_or(""))
        .map_err(|e| Failure::config(vec![format!("{e}; fix it first")]))?;
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let shown_file = args.file.display().to_string();
    let plan = import::plan(&text, &shown_file, &keys)
        .map_err(|e| Failure::usage(format!("{shown_file}: {e}")))?;
    let project_text = if plan.servers.is_empty() {
        None
    } else {
        Some(write::project_yaml(existing.as_deref(), &plan).map_err(Failure::usage)?)
    };
    let local_file = args.local.clone().unwrap_or_else(|| dir.join("local.toml"));
    let local_existing = read_optional(&local_file)?;
    let local_text = write::local_toml(local_existing.as_deref(), &plan).map_err(Failure::usage)?;
    if local_text.is_some() {
        refuse_readable(&local_file)?;
    }
    println!(
        "{shown_file}: {}, {} server(s)",
        plan.format,
        plan.servers.len() + plan.skipped.len()
    );
    report(&plan, &local_file);
    if args.dry_run {
        if !plan.servers.is_empty() {
            println!(
                "dry run: project.yaml would get\n{}",
                write::servers_yaml(&plan, 2)
            );
        }
        println!("dry run: nothing written");
        return Ok(());
    }
    let secrets = plan.secrets().count();
    if let Some(local) = &local_text {
        write_file(&local_file, local, Some(0o600))?;
        let missing = plan.secrets().filter(|(_, m)| m.value.is_none()).count();
        let disabled = plan.servers.iter().filter(|s| s.is_disabled()).count();
        let timed = plan
            .servers
            .iter()
            .filter(|s| s.timeout_ms.is_some() || s.probe_timeout_ms.is_some())
            .count();
        println!(
            "wrote {}: {} secret(s){}{}{}",
            local_file.display(),
            secrets - missing,
            if missing > 0 {
                format!(", {missing} to fill in")
            } else {
                String::new()
            },
            if disabled > 0 {
                format!(", {disabled} server(s) disabled")
            } else {
                String::new()
            },
            if timed > 0 {
                format!(", timeouts of {timed} server(s)")
            } else {
                String::new()
            }
        );
    }
    if let Some(project) = &project_text {
        write_file(&project_file, project, None)?;
        println!(
            "wrote {}: {} server(s) added",
            project_file.display(),
            plan.servers.len()
        );
        println!("next: kaged-mcp check --project {}", dir.display());
    } else {
        println!("nothing to add: project.yaml is unchanged");
    }
    Ok(())
}

/// One line per server, its notes indented below, then one line per value to fill in.
fn report(plan: &Plan, local_file: &Path) {
    for s in &plan.servers {
        println!("added {}", server_line(s));
        for note in &s.notes {
            println!("  note: {}", visible(note));
        }
        if s.is_disabled() {
            println!(
                "  disabled: `disabled = true` under [mcp.{}] in {}, until each credential \
                 below is given to the server another way (an `env` or `auth:` secret_ref) and \
                 that line is removed; their values are in local.toml, not in project.yaml",
                s.key,
                local_file.display()
            );
            for reason in &s.disabled {
                println!("    {}", visible(reason));
            }
        }
    }
    for s in &plan.skipped {
        println!("skipped \"{}\": {}", visible(&s.name), visible(&s.reason));
    }
    for (s, m) in plan.secrets().filter(|(_, m)| m.value.is_none()) {
        let leaf = m.secret_ref.as_str().rsplit('.').next().unwrap_or_default();
        println!(
            "needs a value: {} of `{}` had {}: set `{leaf} = \"…\"` under [secrets.import.{}] in {}",
            visible(&m.what),
            s.key,
            visible(&m.references.join(", ")),
            s.key,
            local_file.display()
        );
    }
}

/// `key (from "Name"): transport, command or URL; secrets: … → ref, …`.
fn server_line(s: &PlannedServer) -> String {
    let mut line = s.key.clone();
    if s.name != s.key {
        line.push_str(&format!(" (from \"{}\")", visible(&s.name)));
    }
    let target = match &s.transport {
        PlannedTransport::Stdio { command, .. } => command
            .iter()
            .map(|a| shell_word(a))
            .collect::<Vec<_>>()
            .join(" "),
        PlannedTransport::Http { url, auth, .. } => {
            let mut t = redact_uri(url).into_owned();
            if let Some(a) = auth {
                t.push_str(match a.header_name {
                    None => " (auth: bearer)",
                    Some(_) => " (auth: header)",
                });
            }
            t
        }
    };
    line.push_str(&format!(": {}, {}", s.transport.name(), visible(&target)));
    if s.is_disabled() {
        line.push_str(" (disabled)");
    }
    if !s.secrets.is_empty() {
        let moved: Vec<String> = s
            .secrets
            .iter()
            .map(|m| {
                let state = match (&m.value, m.used) {
                    (None, _) => " (needs a value)",
                    (Some(_), false) => " (kept, not used)",
                    (Some(_), true) => "",
                };
                format!("{} → {}{state}", visible(&m.what), m.secret_ref)
            })
            .collect();
        line.push_str(&format!("; secrets: {}", moved.join(", ")));
    }
    line
}

/// A command word as a shell would need it: single-quoted when it has blanks or quotes.
fn shell_word(a: &str) -> String {
    if !a.is_empty()
        && a.chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c))
    {
        a.to_owned()
    } else {
        format!("'{}'", a.replace('\'', r"'\''"))
    }
}

/// The file to import, bounded in size, as UTF-8.
fn read_input(file: &Path) -> Result<String, Failure> {
    let unreadable =
        |e: &dyn std::fmt::Display| Failure::usage(format!("cannot read {}: {e}", file.display()));
    let meta = fs::metadata(file).map_err(|e| unreadable(&e))?;
    if meta.len() > MAX_FILE_BYTES {
        return Err(unreadable(&format!(
            "{} bytes, more than the {MAX_FILE_BYTES} read",
            meta.len()
        )));
    }
    let bytes = fs::read(file).map_err(|e| unreadable(&e))?;
    String::from_utf8(bytes).map_err(|_| unreadable(&"not UTF-8 text"))
}

/// `--project`, else the nearest directory upward holding project.yaml, else the current one.
fn project_dir(args: &ImportArgs) -> Result<PathBuf, Failure> {
    if let Some(dir) = &args.project {
        if !dir.is_dir() {
            return Err(Failure::usage(format!(
                "--project {}: not a directory",
                dir.display()
            )));
        }
        return Ok(dir.clone());
    }
    let cwd = std::env::current_dir().map_err(|e| {
        Failure::usage(format!(
            "cannot read the current directory ({e}); give --project DIR"
        ))
    })?;
    Ok(find_project(&cwd).unwrap_or(cwd))
}

/// The file's text, `None` when it does not exist.
fn read_optional(path: &Path) -> Result<Option<String>, Failure> {
    match fs::read(path) {
        Ok(bytes) => String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| Failure::config(vec![format!("{}: not UTF-8 text", path.display())])),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(Failure::config(vec![format!(
            "cannot read {}: {e}",
            path.display()
        )])),
    }
}

/// Refuses to put secrets in a `local.toml` that others can read.
fn refuse_readable(path: &Path) -> Result<(), Failure> {
    let Ok(meta) = fs::metadata(path) else {
        return Ok(());
    };
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(Failure::usage(format!(
            "{} can be read by others (mode {mode:04o}) and would hold secrets: `chmod 600 {}`, \
             then import again (nothing was written)",
            path.display(),
            path.display()
        )));
    }
    Ok(())
}

/// Writes `text` to `path` through a temporary file renamed over it: an existing file keeps
/// its mode (a symbolic link its target), a new one gets `new_mode` (or the umask's default).
fn write_file(path: &Path, text: &str, new_mode: Option<u32>) -> Result<(), Failure> {
    let failed =
        |e: std::io::Error| Failure::config(vec![format!("cannot write {}: {e}", path.display())]);
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let mode = match fs::metadata(&target) {
        Ok(m) => Some(m.permissions().mode() & 0o7777),
        Err(_) => new_mode,
    };
    let name = target
        .file_name()
        .map_or_else(|| "file".into(), |n| n.to_string_lossy().into_owned());
    let tmp = target.with_file_name(format!(".{name}.import-{}", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options
        .write(true)
        .create_new(true)
        .mode(mode.unwrap_or(0o666));
    let result = options.open(&tmp).and_then(|mut f| {
        if let Some(m) = mode {
            f.set_permissions(fs::Permissions::from_mode(m))?;
        }
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        fs::rename(&tmp, &target)
    });
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(failed(e));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn command_words_are_quoted_as_a_shell_needs() {
        assert_eq!(shell_word("@scope/pkg"), "@scope/pkg");
        assert_eq!(shell_word("a b"), "'a b'");
        assert_eq!(shell_word("it's"), r"'it'\''s'");
        assert_eq!(shell_word(""), "''");
    }

    #[test]
    fn a_new_local_toml_is_private_and_an_existing_one_keeps_its_mode() {
        let dir = tempfile::tempdir().unwrap();
        let new = dir.path().join("local.toml");
        write_file(&new, "a = 1\n", Some(0o600)).unwrap();
        assert_eq!(
            fs::metadata(&new).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let old = dir.path().join("project.yaml");
        fs::write(&old, "x: 1\n").unwrap();
        fs::set_permissions(&old, fs::Permissions::from_mode(0o640)).unwrap();
        write_file(&old, "x: 2\n", None).unwrap();
        assert_eq!(
            fs::metadata(&old).unwrap().permissions().mode() & 0o777,
            0o640
        );
        assert_eq!(fs::read_to_string(&old).unwrap(), "x: 2\n");
        fs::set_permissions(&new, fs::Permissions::from_mode(0o644)).unwrap();
        assert!(refuse_readable(&new).is_err());
    }
}
