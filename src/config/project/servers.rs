//! The `mcp:` block: the server keys, each server's `transport:` and the fields that go with
//! it (`command`, `cwd`, `env` for stdio; `url`, `headers` for the HTTP transports), its
//! `roots:`, and the unknown or misplaced keys. A server's `auth:` and `tools:` blocks are read by
//! [`super::auth`] and [`super::filter`].

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use http::{HeaderName, HeaderValue};

use crate::config::yaml::{Entry, Node, Value};

use super::auth::auth;
use super::env::env;
use super::filter::tool_filter;
use super::transport::{transport_choices, TransportKind, COMMON_KEYS, HTTP_KEYS, STDIO_KEYS};
use super::walk::Walk;
use super::{AuthConfig, AuthKind};
use super::{
    HttpServerConfig, McpServerConfig, StdioServerConfig, ToolFilter, TransportConfig, MAX_SERVERS,
};

/// Whether `key` is a valid server key: `^[a-z][a-z0-9_-]{0,30}[a-z0-9]$`.
pub fn is_valid_server_key(key: &str) -> bool {
    let b = key.as_bytes();
    (2..=32).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-')
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
}

/// Reads the `mcp:` block: every server, in file order, that has no error.
pub(super) fn servers(w: &mut Walk<'_>, mcp: &Node) -> Vec<McpServerConfig> {
    if matches!(mcp.value, Value::Null) {
        return Vec::new();
    }
    let Some(entries) = w.map(mcp, "mcp") else {
        return Vec::new();
    };
    if entries.len() > MAX_SERVERS {
        w.err(
            mcp,
            "mcp",
            format!(
                "{} servers declared; at most {MAX_SERVERS} are allowed",
                entries.len()
            ),
        );
    }
    let mut out = Vec::new();
    for e in entries {
        let path = format!("mcp.{}", e.key);
        if !is_valid_server_key(&e.key) {
            w.err_key(
                mcp,
                e,
                &path,
                format!(
                    "`{}` is not a valid server key: 2 to 32 characters of a-z, 0-9, `_` and `-`, starting with a letter and ending with a letter or digit",
                    e.key
                ),
            );
            continue;
        }
        if let Some(s) = server(w, &e.key, &e.value, &path) {
            out.push(s);
        }
    }
    out
}

/// Reads one server at `path`: its transport and the fields that go with it, its `auth:`,
/// `tools:` and `roots:`; `None` when any of it has an error.
fn server(w: &mut Walk<'_>, key: &str, node: &Node, path: &str) -> Option<McpServerConfig> {
    let entries = w.map(node, path)?;
    let before = w.errors.len();
    let kind = transport_kind(w, node, path);
    check_keys(w, node, entries, path, kind);
    let transport = match kind {
        Some(TransportKind::Stdio) => stdio(w, node, path).map(TransportConfig::Stdio),
        Some(k @ TransportKind::Sse) => http(w, node, path, k).map(TransportConfig::Sse),
        Some(k @ TransportKind::StreamableHttp) => {
            http(w, node, path, k).map(TransportConfig::StreamableHttp)
        }
        None => None,
    };
    let auth = match node.get("auth") {
        None => None,
        Some(a) => auth(w, key, a, &format!("{path}.auth")),
    };
    if let (Some(transport), Some(auth)) = (&transport, &auth) {
        check_auth_fits(w, key, node, path, transport, auth);
    }
    let tools = match node.get("tools") {
        None => Some(ToolFilter::default()),
        Some(t) => tool_filter(w, t, &format!("{path}.tools")),
    };
    let skills = match node.get("skills") {
        None => Some(ToolFilter::default()),
        Some(t) => tool_filter(w, t, &format!("{path}.skills")),
    };
    let roots = match node.get("roots") {
        None => Some(None),
        Some(r) => roots(w, r, &format!("{path}.roots")).map(Some),
    };
    if w.errors.len() != before {
        return None;
    }
    Some(McpServerConfig {
        key: key.to_owned(),
        transport: transport?,
        auth,
        tools: tools?,
        skills: skills?,
        roots: roots?,
    })
}

/// The server's `transport:`, required and one of the supported kinds.
fn transport_kind(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<TransportKind> {
    let Some(t) = node.get("transport") else {
        w.err(
            node,
            &format!("{path}.transport"),
            format!("missing; `transport` is required: {}", transport_choices()),
        );
        return None;
    };
    match &t.value {
        Value::Str(s) => {
            let kind = TransportKind::lookup(s);
            if kind.is_none() {
                w.err(
                    t,
                    &format!("{path}.transport"),
                    format!(
                        "unsupported transport `{s}`; supported transports are {}",
                        transport_choices()
                    ),
                );
            }
            kind
        }
        _ => {
            w.err(
                t,
                &format!("{path}.transport"),
                format!(
                    "expected one of {}, found {}",
                    transport_choices(),
                    t.type_name()
                ),
            );
            None
        }
    }
}

/// Refuses the server's unknown keys and the keys of another transport than `kind` (when the
/// transport is unknown, any transport's keys pass).
fn check_keys(
    w: &mut Walk<'_>,
    node: &Node,
    entries: &[Entry],
    path: &str,
    kind: Option<TransportKind>,
) {
    let transport_keys = |k: &str| STDIO_KEYS.contains(&k) || HTTP_KEYS.contains(&k);
    for e in entries {
        let k = e.key.as_str();
        if COMMON_KEYS.contains(&k) {
            continue;
        }
        let p = format!("{path}.{k}");
        match kind {
            Some(t) if t.keys().contains(&k) => {}
            Some(t) if transport_keys(k) => {
                let other = if STDIO_KEYS.contains(&k) {
                    "`transport: stdio`"
                } else {
                    "`transport: sse` or `streamable-http`"
                };
                w.err_key(
                    node,
                    e,
                    &p,
                    format!("`{k}` belongs to {other}, not to a {} server", t.name()),
                );
            }
            None if transport_keys(k) => {}
            _ => w.err_key(
                node,
                e,
                &p,
                format!(
                    "unknown key `{k}`; a server has {}, {} (stdio), {} (sse, streamable-http)",
                    COMMON_KEYS.join(", "),
                    STDIO_KEYS.join(", "),
                    HTTP_KEYS.join(", ")
                ),
            ),
        }
    }
}

/// Refuses an `auth:` that does not fit the transport: OAuth on a stdio server, or an auth
/// header also set in `headers:`.
fn check_auth_fits(
    w: &mut Walk<'_>,
    key: &str,
    node: &Node,
    path: &str,
    transport: &TransportConfig,
    auth: &AuthConfig,
) {
    if let TransportConfig::Stdio(_) = transport {
        if auth.kind == AuthKind::OAuth {
            let a_node = node.get("auth").unwrap_or(node);
            w.err(
                a_node,
                &format!("{path}.auth.type"),
                format!("server `{key}`: OAuth authorizes HTTP requests; it applies to `sse` and `streamable-http` servers, not `stdio` (pass a stdio server its credentials in `env`)"),
            );
        }
    }
    if let Some(remote) = transport.http() {
        if remote.headers.iter().any(|(n, _)| *n == auth.header_name) {
            let headers = node.get("headers").unwrap_or(node);
            let written = headers.as_map().and_then(|es| {
                es.iter()
                    .find(|e| e.key.eq_ignore_ascii_case(auth.header_name.as_str()))
            });
            let (loc_node, name) = match written {
                Some(e) => (&e.value, e.key.clone()),
                None => (headers, auth.header_name.to_string()),
            };
            w.err(
                loc_node,
                &format!("{path}.headers.{name}"),
                format!(
                    "collides with the auth header `{}`; the secret goes there, set it only through `auth`",
                    auth.header_name
                ),
            );
        }
    }
}

fn stdio(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<StdioServerConfig> {
    let command = match node.get("command") {
        None => {
            w.err(
                node,
                &format!("{path}.command"),
                "missing; a stdio server needs `command`, a list such as [\"node\", \"server.js\"]",
            );
            None
        }
        Some(c) => {
            let p = format!("{path}.command");
            if let Value::Str(_) = c.value {
                w.err(
                    c,
                    &p,
                    "expected a list of strings (program and arguments), found a string",
                );
                None
            } else {
                match w.string_list(c, &p) {
                    Some(list) if list.is_empty() => {
                        w.err(c, &p, "must not be empty: name the program to run");
                        None
                    }
                    Some(list) => Some(list.into_iter().map(|(s, _)| s).collect()),
                    None => None,
                }
            }
        }
    };
    let cwd = match node.get("cwd") {
        None => Some(None),
        Some(c) => {
            let p = format!("{path}.cwd");
            match w.string(c, &p) {
                None => None,
                Some(s) => match check_relative(&s, "cwd") {
                    Ok(pb) => Some(Some(pb)),
                    Err(msg) => {
                        w.err(c, &p, msg);
                        None
                    }
                },
            }
        }
    };
    let env = match node.get("env") {
        None => Some(BTreeMap::new()),
        Some(e) => env(w, e, &format!("{path}.env")),
    };
    Some(StdioServerConfig {
        command: command?,
        cwd: cwd?,
        env: env?,
    })
}

/// `roots:`: a list of directories inside the project, each checked like `cwd` (relative,
/// never above the project root); symlinks are followed, and checked, when the server starts
/// ([`crate::config::resolve_inside`]).
fn roots(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<Vec<PathBuf>> {
    let list = w.string_list(node, path)?;
    if list.is_empty() {
        w.err(
            node,
            path,
            "must not be empty: name the directories the server may see (`.` for the project), or leave `roots` out",
        );
        return None;
    }
    let mut out = Vec::with_capacity(list.len());
    let mut ok = true;
    for (i, (s, item)) in list.into_iter().enumerate() {
        let checked = if s.trim().is_empty() {
            Err("an empty path; write `.` for the project root".to_owned())
        } else {
            check_relative(&s, "roots")
        };
        match checked {
            Ok(p) => out.push(p),
            Err(msg) => {
                w.err(&item, &format!("{path}[{i}]"), msg);
                ok = false;
            }
        }
    }
    ok.then_some(out)
}

/// Checks that `s` is a relative path that stays inside the directory it is relative to
/// (`key` names the setting in the error).
fn check_relative(s: &str, key: &str) -> Result<PathBuf, String> {
    let p = Path::new(s);
    if p.is_absolute() {
        return Err(format!(
            "`{s}` is absolute; `{key}` is relative to the project root"
        ));
    }
    let mut depth: i64 = 0;
    for c in p.components() {
        match c {
            Component::ParentDir => {
                depth -= 1;
                if depth < 0 {
                    return Err(format!("`{s}` escapes the project root"));
                }
            }
            Component::Normal(_) => depth += 1,
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => {
                return Err(format!(
                    "`{s}` is absolute; `{key}` is relative to the project root"
                ))
            }
        }
    }
    Ok(p.to_path_buf())
}

fn http(
    w: &mut Walk<'_>,
    node: &Node,
    path: &str,
    kind: TransportKind,
) -> Option<HttpServerConfig> {
    let url = match node.get("url") {
        None => {
            w.err(
                node,
                &format!("{path}.url"),
                format!(
                    "missing; a {} server needs `url`, such as {}",
                    kind.name(),
                    kind.example_url()
                ),
            );
            None
        }
        Some(u) => {
            let p = format!("{path}.url");
            let s = w.string(u, &p)?;
            match url::Url::parse(&s) {
                Ok(url) if matches!(url.scheme(), "http" | "https") && url.host().is_some() => {
                    Some(url)
                }
                Ok(url) => {
                    w.err(
                        u,
                        &p,
                        format!(
                            "`{s}`: the scheme must be http or https with a host, found `{}`",
                            url.scheme()
                        ),
                    );
                    None
                }
                Err(e) => {
                    w.err(u, &p, format!("`{s}` is not an absolute URL: {e}"));
                    None
                }
            }
        }
    };
    let headers = match node.get("headers") {
        None => Some(Vec::new()),
        Some(h) => {
            let p = format!("{path}.headers");
            let pairs = w.string_map(h, &p)?;
            let mut out = Vec::new();
            let mut ok = true;
            for (k, v, vnode) in pairs {
                let kp = format!("{p}.{k}");
                match header_pair(&k, &v) {
                    Ok(pair) => out.push(pair),
                    Err(msg) => {
                        w.err(&vnode, &kp, msg);
                        ok = false;
                    }
                }
            }
            ok.then_some(out)
        }
    };
    Some(HttpServerConfig {
        url: url?,
        headers: headers?,
    })
}

fn header_pair(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    let name = HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("`{name}` is not a valid HTTP header name"))?;
    if value.contains(['\r', '\n']) {
        return Err("the value contains CR or LF, which would split the header".into());
    }
    let value = HeaderValue::from_str(value).map_err(|_| {
        "the value is not a valid HTTP header value (control characters?)".to_string()
    })?;
    Ok((name, value))
}
