//! A stdio server's `env:`: each variable a plain string or `{ secret_ref: a.b }`, a token the
//! server reads from its environment, and [`resolve_env_secrets`], which fills those secrets
//! in from `local.toml` once it is read (a missing one is its server's error, at its start).

use std::collections::BTreeMap;
use std::path::Path;

use crate::config::error::ConfigError;
use crate::config::local::LocalConfig;
use crate::config::yaml::{Entry, Node, Value};

use super::auth::secret_ref;
use super::walk::Walk;
use super::{EnvValue, ProjectConfig, TransportConfig};

/// The form of a secret value, for messages.
const SECRET_FORM: &str = "`{ secret_ref: a.b }` (the secret `[secrets.a] b` of local.toml)";

/// Reads `env:` at `path`: one error per bad variable.
pub(super) fn env(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<BTreeMap<String, EnvValue>> {
    let entries = w.map(node, path)?;
    let mut out = BTreeMap::new();
    let mut ok = true;
    for e in entries {
        let p = format!("{path}.{}", e.key);
        match value(w, &e.value, &p) {
            Some(_) if e.key.is_empty() || e.key.contains(['=', '\0']) => {
                w.err(
                    &e.value,
                    &p,
                    "not a valid environment variable name (empty, or contains `=` or NUL)",
                );
                ok = false;
            }
            Some(v) => {
                out.insert(e.key.clone(), v);
            }
            None => ok = false,
        }
    }
    ok.then_some(out)
}

/// One variable's value: a string (bare numbers and booleans read as their text, as in
/// `PORT: 8080`) or a secret reference.
fn value(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<EnvValue> {
    let text = match &node.value {
        Value::Str(s) => s.clone(),
        Value::Int(i) => i.to_string(),
        Value::Bool(b) => b.to_string(),
        Value::Float(f) => f.to_string(),
        Value::Map(entries) => return secret(w, node, entries, path),
        _ => {
            w.err(
                node,
                path,
                format!(
                    "expected a string or {SECRET_FORM}, found {}",
                    node.type_name()
                ),
            );
            return None;
        }
    };
    if text.contains('\0') {
        w.err(node, path, "contains a NUL byte");
        return None;
    }
    Some(EnvValue::Plain(text))
}

/// `{ secret_ref: a.b }`, unresolved.
fn secret(w: &mut Walk<'_>, node: &Node, entries: &[Entry], path: &str) -> Option<EnvValue> {
    let mut ok = true;
    for e in entries.iter().filter(|e| e.key != "secret_ref") {
        w.err_key(
            node,
            e,
            &format!("{path}.{}", e.key),
            format!(
                "unknown key `{}`; a value is a string or {SECRET_FORM}",
                e.key
            ),
        );
        ok = false;
    }
    let Some(r) = node.get("secret_ref") else {
        if ok {
            w.err(
                node,
                path,
                format!("missing `secret_ref`; a value is a string or {SECRET_FORM}"),
            );
        }
        return None;
    };
    let secret_ref = secret_ref(w, r, &format!("{path}.secret_ref"));
    Some(EnvValue::Secret {
        secret_ref: secret_ref.filter(|_| ok)?,
        value: None,
    })
}

/// Fills in the `{ secret_ref }` values of every stdio server's `env` from `local`.
///
/// A missing secret stays `None` and is an error of its server alone, pushed to `missing` with
/// that server's key: an error at the variable in the project tree `root` (its file, its key
/// path and the line of its `secret_ref`), naming the ref and where it goes in `local_file`.
/// [`Config::resolve_secrets`](crate::config::Config::resolve_secrets) reports it with the
/// server's `auth` secrets, so it stops a session that starts that server and no other (as a
/// missing `auth` secret does). A server that `local` disables needs none.
pub(crate) fn resolve_env_secrets(
    root: &Node,
    project: &mut ProjectConfig,
    local: &LocalConfig,
    local_file: &Path,
    missing: &mut Vec<(String, ConfigError)>,
) {
    for server in &mut project.servers {
        let TransportConfig::Stdio(stdio) = &mut server.transport else {
            continue;
        };
        let disabled = local.overrides(&server.key).disabled;
        for (name, v) in &mut stdio.env {
            let EnvValue::Secret { secret_ref, value } = v else {
                continue;
            };
            match local.secret(secret_ref) {
                Some(secret) => *value = Some(secret.clone()),
                None if disabled => {}
                None => {
                    let written = root
                        .get("mcp")
                        .and_then(|m| m.get(&server.key))
                        .and_then(|s| s.get("env"))
                        .and_then(|e| e.get(name))
                        .map_or(root, |v| v.get("secret_ref").unwrap_or(v));
                    let (table, leaf) = secret_ref.table_and_key();
                    let error = ConfigError::new(
                        written.file.to_path_buf(),
                        format!("mcp.{}.env.{name}", server.key),
                        Some(written.loc),
                        format!(
                            "server `{}` needs secret `{secret_ref}` for its environment variable `{name}`, which is not set in {}: add `{leaf} = \"…\"` under {table}",
                            server.key,
                            local_file.display()
                        ),
                    );
                    missing.push((server.key.clone(), error));
                }
            }
        }
    }
}
