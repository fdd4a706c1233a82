//! The texts an import writes: the planned servers added to `project.yaml`'s `mcp:` block and
//! their secrets appended to `local.toml`, each checked to read back before it is returned.
//!
//! What is there is kept byte for byte: the servers go after the last line of an existing
//! block `mcp:` mapping (with its indentation), in place of an empty `mcp:` / `mcp: {}`, or
//! in a new `mcp:` block at the end; the secrets go in new `[secrets.import.<key>]` tables at
//! the end of `local.toml`. A secret the file had as a `${…}` reference is a commented line
//! there, naming the reference, for the operator to fill in. A server imported disabled gets
//! `[mcp.<key>] disabled = true` there, after comments saying what to move; Codex's timeouts
//! go in that table too.

use std::fmt::Write as _;
use std::path::Path;

use crate::config::project::{self, key_path};
use crate::config::yaml::{self, Value};

use super::{Plan, PlannedAuth, PlannedServer, PlannedTransport, PlannedValue};

/// The server keys `project.yaml` declares under `mcp:` (whether or not they are valid).
///
/// # Errors
/// When the text is not YAML this reader accepts, with the reader's message.
pub fn declared_keys(project_yaml: &str) -> Result<Vec<String>, String> {
    let tree = yaml::parse(project_yaml, Path::new("project.yaml"), key_path)
        .map_err(|e| e.to_string())?;
    Ok(tree
        .get("mcp")
        .and_then(|m| m.as_map())
        .map(|es| es.iter().map(|e| e.key.clone()).collect())
        .unwrap_or_default())
}

/// `project.yaml` with the plan's servers added to `existing` (`None`: no file yet).
///
/// # Errors
/// When `existing` cannot be added to without rewriting it (not YAML, not a mapping, an
/// inline `mcp: {…}`), or the result does not read back with every planned server.
pub fn project_yaml(existing: Option<&str>, plan: &Plan) -> Result<String, String> {
    let text = existing.unwrap_or("");
    let tree = yaml::parse(text, Path::new("project.yaml"), key_path)
        .map_err(|e| format!("project.yaml cannot be read ({e}); fix it first"))?;
    let lines: Vec<&str> = text.split_inclusive('\n').collect();
    let mut out = String::new();
    let mcp = match &tree.value {
        Value::Null => None,
        Value::Map(entries) => entries.iter().position(|e| e.key == "mcp"),
        _ => return Err("project.yaml is not a mapping of keys; fix it first".into()),
    };
    let Some(i) = mcp else {
        out.push_str(text);
        if !out.is_empty() && !out.ends_with('\n') {
            out.push('\n');
        }
        out.push_str("mcp:\n");
        out.push_str(&servers_yaml(plan, 2));
        return checked(out, plan, &tree);
    };
    let Some(entries) = tree.as_map() else {
        return Err("project.yaml is not a mapping of keys".into());
    };
    let entry = &entries[i];
    let line = entry.key_loc.line.saturating_sub(1);
    let Some(key_line) = lines.get(line).copied() else {
        return Err("project.yaml: the `mcp:` line was not found".into());
    };
    let inline = after_colon(key_line);
    let flow = "`mcp:` is written inline in project.yaml: write it as a block (one server key \
                per line) and import again";
    match &entry.value.value {
        Value::Null | Value::Map(_) if inline.is_empty() => {}
        Value::Null | Value::Map(_) if ["~", "null", "Null", "NULL", "{}"].contains(&inline) => {}
        _ => return Err(flow.into()),
    }
    let (indent, at) = match &entry.value.value {
        Value::Map(children) if !children.is_empty() => {
            let next = entries
                .get(i + 1)
                .map_or(lines.len(), |e| e.key_loc.line - 1);
            let mut end = next.min(lines.len());
            while end > line + 1 && skippable(lines[end - 1]) {
                end -= 1;
            }
            (children[0].key_loc.column.saturating_sub(1).max(1), end)
        }
        _ => (2, line + 1),
    };
    for (n, l) in lines.iter().enumerate() {
        if n == line && !inline.is_empty() {
            out.push_str("mcp:");
            out.push_str(
                comment(l)
                    .map_or(String::new(), |c| format!(" {c}"))
                    .as_str(),
            );
            out.push('\n');
        } else {
            out.push_str(l);
        }
        if n + 1 == at {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&servers_yaml(plan, indent));
        }
    }
    checked(out, plan, &tree)
}

/// What follows `mcp:` on its line, without a comment.
fn after_colon(line: &str) -> &str {
    let rest = line.split_once(':').map_or("", |(_, r)| r);
    let rest = match comment_start(rest) {
        Some(i) => &rest[..i],
        None => rest,
    };
    rest.trim()
}

/// The comment of a `key: value  # comment` line, from its `#`.
fn comment(line: &str) -> Option<&str> {
    let rest = line.split_once(':')?.1;
    comment_start(rest).map(|i| rest[i..].trim_end())
}

fn comment_start(s: &str) -> Option<usize> {
    s.char_indices()
        .find(|(i, c)| *c == '#' && (*i == 0 || s[..*i].ends_with([' ', '\t'])))
        .map(|(i, _)| i)
}

/// A line that belongs to what follows a block rather than to it: blank, a comment at the
/// start of the line, a document marker.
fn skippable(line: &str) -> bool {
    let t = line.trim_end();
    t.trim_start().is_empty() || t.starts_with('#') || t == "..." || t == "---"
}

/// Checks that `out` reads back with the old servers and every planned one, error-free.
fn checked(out: String, plan: &Plan, before: &yaml::Node) -> Result<String, String> {
    let mut old_errors = Vec::new();
    let _ = project::from_tree(before, &mut old_errors);
    let tree = yaml::parse(&out, Path::new("project.yaml"), key_path)
        .map_err(|e| format!("the servers could not be added to project.yaml ({e})"))?;
    let mut errors = Vec::new();
    let config = project::from_tree(&tree, &mut errors);
    if errors.len() > old_errors.len() {
        let first = errors
            .iter()
            .find(|e| !old_errors.iter().any(|o| o.message == e.message));
        return Err(format!(
            "the servers could not be added to project.yaml: {}",
            first
                .or(errors.first())
                .map_or(String::new(), ToString::to_string)
        ));
    }
    if let Some(s) = plan
        .servers
        .iter()
        .find(|s| config.server(&s.key).is_none())
    {
        return Err(format!(
            "the server `{}` did not read back from project.yaml; add it by hand",
            s.key
        ));
    }
    Ok(out)
}

/// The planned servers as `mcp:` entries indented by `indent` spaces.
pub fn servers_yaml(plan: &Plan, indent: usize) -> String {
    let mut out = String::new();
    let pad = " ".repeat(indent);
    let _ = writeln!(
        out,
        "{pad}# imported from {} by kaged-mcp import",
        plan.format
    );
    for s in &plan.servers {
        server_yaml(&mut out, s, &pad);
    }
    out
}

fn server_yaml(out: &mut String, s: &PlannedServer, pad: &str) {
    if s.is_disabled() {
        let _ = writeln!(
            out,
            "{pad}# disabled in local.toml: a credential of the imported file that kaged-mcp \
             cannot pass from a secret is in local.toml ([secrets.import.{}]), not here",
            s.key
        );
    }
    let _ = writeln!(out, "{pad}{}:", s.key);
    let _ = writeln!(out, "{pad}  transport: {}", s.transport.name());
    match &s.transport {
        PlannedTransport::Stdio { command, env } => {
            let items: Vec<String> = command.iter().map(|c| quoted(c)).collect();
            let _ = writeln!(out, "{pad}  command: [{}]", items.join(", "));
            if !env.is_empty() {
                let _ = writeln!(out, "{pad}  env:");
            }
            for (name, value) in env {
                let v = match value {
                    PlannedValue::Plain(v) => quoted(v),
                    PlannedValue::Secret(r) => format!("{{ secret_ref: {} }}", quoted(r.as_str())),
                };
                entry(out, &format!("{pad}    "), name, &v);
            }
        }
        PlannedTransport::Http {
            url, headers, auth, ..
        } => {
            let _ = writeln!(out, "{pad}  url: {}", quoted(url));
            if !headers.is_empty() {
                let _ = writeln!(out, "{pad}  headers:");
            }
            for (name, value) in headers {
                entry(out, &format!("{pad}    "), name, &quoted(value));
            }
            if let Some(PlannedAuth {
                header_name,
                secret_ref,
            }) = auth
            {
                let r = quoted(secret_ref.as_str());
                let _ = match header_name {
                    None => writeln!(out, "{pad}  auth: {{ type: bearer, secret_ref: {r} }}"),
                    Some(h) => writeln!(
                        out,
                        "{pad}  auth: {{ type: header, header_name: {}, secret_ref: {r} }}",
                        quoted(h)
                    ),
                };
            }
        }
    }
}

/// The longest key, as written, that YAML reads in the `key: value` form: a plain (implicit)
/// key ends within 1024 characters of its start (YAML 1.2, 7.4.2; yaml-rust2's scanner).
const MAX_IMPLICIT_KEY_CHARS: usize = 1024;

/// One `key: value` line of a block mapping at `pad`; a key too long for that form is written
/// as an explicit `? key` with its `: value` on the next line.
fn entry(out: &mut String, pad: &str, k: &str, value: &str) {
    let k = key(k);
    if k.chars().count() < MAX_IMPLICIT_KEY_CHARS {
        let _ = writeln!(out, "{pad}{k}: {value}");
    } else {
        let _ = writeln!(out, "{pad}? {k}\n{pad}: {value}");
    }
}

/// A mapping key: bare when it cannot be read as anything but itself, quoted otherwise.
fn key(k: &str) -> String {
    let bare = k.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && k.chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        && !matches!(k.to_ascii_lowercase().as_str(), "null" | "true" | "false");
    if bare {
        k.to_owned()
    } else {
        quoted(k)
    }
}

/// A YAML double-quoted scalar: `\`, `"`, every character YAML does not print and every
/// control, invisible or direction-changing one ([`crate::escape::is_hidden`]) escaped, so that
/// whoever reviews `project.yaml` sees it.
pub(super) fn quoted(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if crate::escape::is_hidden(c) || matches!(c, '\u{fffe}' | '\u{ffff}') => {
                let _ = match u32::from(c) {
                    n @ ..=0xFFFF => write!(out, "\\u{n:04X}"),
                    n => write!(out, "\\U{n:08X}"),
                };
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// `local.toml` with the plan's secrets, and an `[mcp.<key>]` table for each server imported
/// disabled (`disabled = true`) or with a timeout carried over, appended to `existing` (`None`: no file yet), or `None` when the plan
/// has neither.
///
/// # Errors
/// When `existing` is not TOML, already has a `[secrets.import.<key>]` or `[mcp.<key>]` table
/// of a planned server, or the result does not read back with every value.
pub fn local_toml(existing: Option<&str>, plan: &Plan) -> Result<Option<String>, String> {
    let overridden: Vec<&PlannedServer> =
        plan.servers.iter().filter(|s| s.has_overrides()).collect();
    if plan.secrets().next().is_none() && overridden.is_empty() {
        return Ok(None);
    }
    let text = existing.unwrap_or("");
    let before = text.parse::<toml::Table>().map_err(|e| {
        format!(
            "local.toml cannot be read ({}); fix it first",
            e.message().trim()
        )
    })?;
    let import = before
        .get("secrets")
        .and_then(|s| s.get("import"))
        .and_then(toml::Value::as_table);
    let mut out = text.to_owned();
    if !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    if !out.is_empty() {
        out.push('\n');
    }
    out.push_str("# Secrets of the servers `kaged-mcp import` added to project.yaml.\n");
    for (i, s) in plan
        .servers
        .iter()
        .filter(|s| !s.secrets.is_empty())
        .enumerate()
    {
        if import.is_some_and(|t| t.contains_key(&s.key)) {
            return Err(format!(
                "local.toml already has [secrets.import.{}] (from an earlier import?): remove \
                 that table and import again",
                s.key
            ));
        }
        if i > 0 {
            out.push('\n');
        }
        let _ = writeln!(out, "[secrets.import.{}]", s.key);
        for m in &s.secrets {
            let leaf = m.secret_ref.as_str().rsplit('.').next().unwrap_or_default();
            match &m.value {
                Some(v) => {
                    let _ = writeln!(out, "{leaf} = {}", toml_string(v.expose()));
                }
                None => {
                    let _ = writeln!(
                        out,
                        "# {leaf} = \"\"  # needs a value: the file had {}",
                        m.references.join(", ")
                    );
                }
            }
        }
    }
    let overrides = before.get("mcp").and_then(toml::Value::as_table);
    for s in &overridden {
        if overrides.is_some_and(|t| t.contains_key(&s.key)) {
            return Err(format!(
                "local.toml already has [mcp.{}], and the import must add to it: remove that \
                 table (or declare the server by hand) and import again",
                s.key
            ));
        }
        out.push('\n');
        if s.is_disabled() {
            let _ = writeln!(
                out,
                "# Imported disabled: kaged-mcp cannot pass these credentials as the imported \
                 file did.\n# Give the server each one another way (an `env` or `auth:` \
                 secret_ref), then remove `disabled = true`."
            );
            for reason in &s.disabled {
                let _ = writeln!(out, "# - {}", crate::escape::visible(reason));
            }
        }
        let _ = writeln!(out, "[mcp.{}]", s.key);
        if s.is_disabled() {
            let _ = writeln!(out, "disabled = true");
        }
        if let Some(ms) = s.timeout_ms {
            let _ = writeln!(out, "timeout_ms = {ms}");
        }
        if let Some(ms) = s.probe_timeout_ms {
            let _ = writeln!(out, "probe_timeout_ms = {ms}");
        }
    }
    let after = out.parse::<toml::Table>().map_err(|e| {
        format!(
            "the secrets could not be added to local.toml ({})",
            e.message().trim()
        )
    })?;
    for (s, m) in plan.secrets() {
        let Some(v) = &m.value else { continue };
        let mut read = after.get("secrets");
        for seg in m.secret_ref.segments() {
            read = read.and_then(|t| t.get(seg));
        }
        let read = read.and_then(toml::Value::as_str);
        if read != Some(v.expose()) {
            return Err(format!(
                "the secret `{}` of `{}` did not read back from local.toml",
                m.secret_ref, s.key
            ));
        }
    }
    for s in &overridden {
        let table = after.get("mcp").and_then(|m| m.get(&s.key));
        let read = |k: &str| table.and_then(|t| t.get(k)).cloned();
        let wanted = [
            (
                "disabled",
                s.is_disabled().then_some(toml::Value::Boolean(true)),
            ),
            (
                "timeout_ms",
                s.timeout_ms.map(|ms| toml::Value::Integer(ms as i64)),
            ),
            (
                "probe_timeout_ms",
                s.probe_timeout_ms.map(|ms| toml::Value::Integer(ms as i64)),
            ),
        ];
        if let Some((k, _)) = wanted.iter().find(|(k, v)| read(k) != *v) {
            return Err(format!(
                "`{k}` of [mcp.{}] did not read back from local.toml",
                s.key
            ));
        }
    }
    Ok(Some(out))
}

/// A TOML basic string.
fn toml_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04X}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
