//! A server's `auth:` block (ADR-0043 §4): tiers 1 and 2 (`bearer`, `header`) with the
//! `secret_ref` that names the secret in `local.toml`; tier 3 (`oauth`) parses but is refused.

use http::HeaderName;

use crate::config::secret::SecretRef;
use crate::config::yaml::{Node, Value};

use super::walk::Walk;
use super::{AuthConfig, AuthKind};

/// Reads `auth:` of the server `server`.
pub(super) fn auth(w: &mut Walk<'_>, server: &str, node: &Node, path: &str) -> Option<AuthConfig> {
    let entries = w.map(node, path)?;
    let kind = match node.get("type") {
        None => {
            w.err(
                node,
                &format!("{path}.type"),
                "missing; `type` is `bearer` or `header`",
            );
            None
        }
        Some(t) => {
            match &t.value {
                Value::Str(s) if s == "bearer" => Some(AuthKind::Bearer),
                Value::Str(s) if s == "header" => Some(AuthKind::Header),
                Value::Str(s) if s == "oauth" => {
                    // Tier 3 parses (type, provider, scopes) but is refused.
                    w.err(
                    t,
                    &format!("{path}.type"),
                    format!("server `{server}`: OAuth is not supported yet; use `bearer` or `header` with a secret_ref"),
                );
                    return None;
                }
                Value::Str(s) => {
                    w.err(
                    t,
                    &format!("{path}.type"),
                    format!("unknown auth type `{s}`; supported: `bearer`, `header` (`oauth` later)"),
                );
                    None
                }
                _ => {
                    w.err(
                        t,
                        &format!("{path}.type"),
                        format!("expected `bearer` or `header`, found {}", t.type_name()),
                    );
                    None
                }
            }
        }
    };
    for e in entries {
        if !matches!(e.key.as_str(), "type" | "header_name" | "secret_ref") {
            w.err_key(
                node,
                e,
                &format!("{path}.{}", e.key),
                format!(
                    "unknown key `{}`; auth has type, header_name, secret_ref",
                    e.key
                ),
            );
        }
    }
    let header_name = match node.get("header_name") {
        None => Some(http::header::AUTHORIZATION),
        Some(h) => {
            let p = format!("{path}.header_name");
            let s = w.string(h, &p)?;
            if kind == Some(AuthKind::Bearer) && !s.eq_ignore_ascii_case("authorization") {
                w.err(
                    h,
                    &p,
                    "`type: bearer` always uses `Authorization`; use `type: header` for another header",
                );
                None
            } else {
                match HeaderName::from_bytes(s.as_bytes()) {
                    Ok(n) => Some(n),
                    Err(_) => {
                        w.err(h, &p, format!("`{s}` is not a valid HTTP header name"));
                        None
                    }
                }
            }
        }
    };
    let secret_ref = match node.get("secret_ref") {
        None => {
            w.err(
                node,
                &format!("{path}.secret_ref"),
                "missing; name the secret in local.toml [secrets], such as `api_keys.example`",
            );
            None
        }
        Some(r) => {
            let p = format!("{path}.secret_ref");
            let s = w.string(r, &p)?;
            match SecretRef::parse(&s) {
                Ok(r) => Some(r),
                Err(msg) => {
                    w.err(r, &p, msg);
                    None
                }
            }
        }
    };
    Some(AuthConfig {
        kind: kind?,
        header_name: header_name?,
        secret_ref: secret_ref?,
    })
}
