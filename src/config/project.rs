//! The `mcp:` block of `project.yaml` (ADR-0043 §1, §4) and the agents' `tools:` grants.
//!
//! Validation walks the located YAML tree and collects every problem it finds, each with its
//! file, key path and line, before giving up; a valid tree becomes [`ProjectConfig`].

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use globset::{Glob, GlobSet, GlobSetBuilder};
use http::{HeaderName, HeaderValue};

use super::error::ConfigError;
use super::secret::SecretRef;
use super::yaml::{self, Entry, Node, Step, Value};

/// Most servers a project may declare (ADR-0043 §1).
pub const MAX_SERVERS: usize = 16;

/// The part of `project.yaml` this crate reads: the `mcp:` block and the agents' grants.
#[derive(Debug, Clone, Default)]
pub struct ProjectConfig {
    /// The declared servers, in the order of the file.
    pub servers: Vec<McpServerConfig>,
    /// `primary.tools` and `primary.subagents.<name>.tools`.
    pub agents: AgentGrants,
}

impl ProjectConfig {
    /// The server declared under `key`.
    pub fn server(&self, key: &str) -> Option<&McpServerConfig> {
        self.servers.iter().find(|s| s.key == key)
    }
}

/// One server of the `mcp:` block.
#[derive(Debug, Clone)]
pub struct McpServerConfig {
    /// The server key, the middle part of `mcp.<key>.<tool>`.
    pub key: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// The auth header, when the server needs one.
    pub auth: Option<AuthConfig>,
    /// Which of its tools get registered.
    pub tools: ToolFilter,
}

/// `transport:` and the fields that go with it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum TransportConfig {
    /// A child process speaking newline-delimited JSON-RPC.
    Stdio(StdioServerConfig),
    /// A remote server over the 2024-11-05 HTTP+SSE transport.
    Sse(HttpServerConfig),
    /// A remote server over the Streamable HTTP transport (2025-03-26 and later).
    StreamableHttp(HttpServerConfig),
}

/// The transports, as `transport:` names them: `(name, kind)`. `http` is another name for
/// `streamable-http`, as other MCP hosts write it.
pub(crate) const TRANSPORT_NAMES: &[(&str, TransportKind)] = &[
    ("stdio", TransportKind::Stdio),
    ("sse", TransportKind::Sse),
    ("streamable-http", TransportKind::StreamableHttp),
    ("http", TransportKind::StreamableHttp),
];

/// A transport, without its fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TransportKind {
    Stdio,
    Sse,
    StreamableHttp,
}

impl TransportKind {
    fn lookup(name: &str) -> Option<Self> {
        TRANSPORT_NAMES
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, k)| *k)
    }

    fn name(self) -> &'static str {
        match self {
            TransportKind::Stdio => "stdio",
            TransportKind::Sse => "sse",
            TransportKind::StreamableHttp => "streamable-http",
        }
    }

    /// The keys of this transport's own fields.
    fn keys(self) -> &'static [&'static str] {
        match self {
            TransportKind::Stdio => STDIO_KEYS,
            TransportKind::Sse | TransportKind::StreamableHttp => HTTP_KEYS,
        }
    }
}

impl TransportConfig {
    /// `stdio`, `sse` or `streamable-http`.
    pub fn name(&self) -> &'static str {
        self.kind().name()
    }

    fn kind(&self) -> TransportKind {
        match self {
            TransportConfig::Stdio(_) => TransportKind::Stdio,
            TransportConfig::Sse(_) => TransportKind::Sse,
            TransportConfig::StreamableHttp(_) => TransportKind::StreamableHttp,
        }
    }

    /// The URL and static headers of a remote server (`sse` or `streamable-http`).
    pub fn http(&self) -> Option<&HttpServerConfig> {
        match self {
            TransportConfig::Stdio(_) => None,
            TransportConfig::Sse(h) | TransportConfig::StreamableHttp(h) => Some(h),
        }
    }
}

/// The fields of a `transport: stdio` server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StdioServerConfig {
    /// Program and arguments; never empty.
    pub command: Vec<String>,
    /// Working directory relative to the project root, checked not to escape it lexically;
    /// [`crate::config::resolve_cwd`] checks symlinks when the server starts.
    pub cwd: Option<PathBuf>,
    /// Variables added on top of the daemon's environment.
    pub env: BTreeMap<String, String>,
}

/// The fields of a `transport: sse` or `transport: streamable-http` server.
#[derive(Debug, Clone)]
pub struct HttpServerConfig {
    /// The endpoint, an absolute `http` or `https` URL: the event stream (`sse`) or the MCP
    /// endpoint (`streamable-http`).
    pub url: url::Url,
    /// Static headers sent on every request.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

/// The former name of [`HttpServerConfig`].
pub type SseServerConfig = HttpServerConfig;

/// `auth.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AuthKind {
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// `<header_name>: <secret>`.
    Header,
}

/// The `auth:` block of a server (ADR-0043 §4, tiers 1 and 2).
#[derive(Debug, Clone)]
pub struct AuthConfig {
    /// `bearer` or `header`.
    pub kind: AuthKind,
    /// The header that carries the secret (`Authorization` unless `header_name` says otherwise).
    pub header_name: HeaderName,
    /// Where the secret lives in `local.toml` `[secrets]`.
    pub secret_ref: SecretRef,
}

/// The `tools:` filter of a server: applied at registration, deny wins over allow.
#[derive(Debug, Clone)]
pub struct ToolFilter {
    /// `false` registers none of the server's tools.
    pub enabled: bool,
    /// Glob patterns, as written; empty means every tool.
    pub allow: Vec<String>,
    /// Glob patterns, as written.
    pub deny: Vec<String>,
    allow_set: GlobSet,
    deny_set: GlobSet,
}

impl Default for ToolFilter {
    fn default() -> Self {
        Self {
            enabled: true,
            allow: Vec::new(),
            deny: Vec::new(),
            allow_set: GlobSet::empty(),
            deny_set: GlobSet::empty(),
        }
    }
}

impl ToolFilter {
    /// Whether a tool, by the name its server gives it, is registered.
    pub fn permits(&self, tool: &str) -> bool {
        self.enabled
            && (self.allow.is_empty() || self.allow_set.is_match(tool))
            && !self.deny_set.is_match(tool)
    }
}

/// Per-agent tool grants (ADR-0043 §2): pattern → enabled.
#[derive(Debug, Clone, Default)]
pub struct AgentGrants {
    /// `primary.tools`, when present.
    pub primary: Option<ToolGrants>,
    /// `primary.subagents.<name>.tools`, by subagent name.
    pub subagents: BTreeMap<String, ToolGrants>,
}

impl AgentGrants {
    /// The grants of `agent`: `primary` or a subagent's name.
    pub fn for_agent(&self, agent: &str) -> Option<&ToolGrants> {
        if agent == "primary" {
            self.primary.as_ref()
        } else {
            self.subagents.get(agent)
        }
    }

    /// Every agent name with a `tools:` block: `primary` first, then the subagents.
    pub fn agent_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = Vec::new();
        if self.primary.is_some() {
            names.push("primary");
        }
        names.extend(self.subagents.keys().map(String::as_str));
        names
    }
}

/// One agent's `tools:` map, in file order.
#[derive(Debug, Clone, Default)]
pub struct ToolGrants {
    /// The grants.
    pub grants: Vec<ToolGrant>,
}

/// One key of an agent's `tools:` map.
#[derive(Debug, Clone)]
pub struct ToolGrant {
    /// The key as written: an exact name, a dotted prefix or a glob.
    pub pattern: String,
    /// What the pattern means.
    pub kind: GrantPattern,
    /// `enabled:`.
    pub enabled: bool,
}

/// How a grant key matches tool names.
#[derive(Debug, Clone)]
pub enum GrantPattern {
    /// No glob characters: matches that name, and every name below it at a dot boundary.
    Name,
    /// A glob (`*`, `?`, `[`, `{`), matched against whole names.
    Glob(globset::GlobMatcher),
}

const GLOB_CHARS: &[char] = &['*', '?', '[', ']', '{', '}'];

/// Collects errors while walking one tree.
pub(crate) struct Walk<'a> {
    pub(crate) errors: &'a mut Vec<ConfigError>,
}

impl Walk<'_> {
    pub(crate) fn err(&mut self, node: &Node, path: &str, msg: impl Into<String>) {
        self.errors.push(ConfigError::new(
            node.file.to_path_buf(),
            path,
            Some(node.loc),
            msg,
        ));
    }

    fn err_key(&mut self, _parent: &Node, entry: &Entry, path: &str, msg: impl Into<String>) {
        self.errors.push(ConfigError::new(
            entry.file.to_path_buf(),
            path,
            Some(entry.key_loc),
            msg,
        ));
    }

    fn map<'n>(&mut self, node: &'n Node, path: &str) -> Option<&'n [Entry]> {
        match &node.value {
            Value::Map(entries) => Some(entries),
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected a mapping, found {}", node.type_name()),
                );
                None
            }
        }
    }

    fn string(&mut self, node: &Node, path: &str) -> Option<String> {
        match &node.value {
            Value::Str(s) if s.is_empty() => {
                self.err(node, path, "must not be empty");
                None
            }
            Value::Str(s) => Some(s.clone()),
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected a string, found {}", node.type_name()),
                );
                None
            }
        }
    }

    fn boolean(&mut self, node: &Node, path: &str) -> Option<bool> {
        match node.value {
            Value::Bool(b) => Some(b),
            _ => {
                self.err(
                    node,
                    path,
                    format!("expected true or false, found {}", node.type_name()),
                );
                None
            }
        }
    }

    fn string_list(&mut self, node: &Node, path: &str) -> Option<Vec<(String, Node)>> {
        let Value::Seq(items) = &node.value else {
            self.err(
                node,
                path,
                format!("expected a list of strings, found {}", node.type_name()),
            );
            return None;
        };
        let mut out = Vec::with_capacity(items.len());
        let mut ok = true;
        for (i, item) in items.iter().enumerate() {
            match self.string(item, &format!("{path}[{i}]")) {
                Some(s) => out.push((s, item.clone())),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }

    fn string_map(&mut self, node: &Node, path: &str) -> Option<Vec<(String, String, Node)>> {
        let entries = self.map(node, path)?;
        let mut out = Vec::with_capacity(entries.len());
        let mut ok = true;
        for e in entries {
            let p = format!("{path}.{}", e.key);
            // Numbers and booleans written bare are accepted as their text: `PORT: 8080`.
            let v = match &e.value.value {
                Value::Str(s) => Some(s.clone()),
                Value::Int(i) => Some(i.to_string()),
                Value::Bool(b) => Some(b.to_string()),
                Value::Float(f) => Some(f.to_string()),
                _ => {
                    self.err(
                        &e.value,
                        &p,
                        format!("expected a string, found {}", e.value.type_name()),
                    );
                    None
                }
            };
            match v {
                Some(v) => out.push((e.key.clone(), v, e.value.clone())),
                None => ok = false,
            }
        }
        ok.then_some(out)
    }
}

/// Whether `key` is a valid server key: `^[a-z][a-z0-9_-]{0,30}[a-z0-9]$`.
pub fn is_valid_server_key(key: &str) -> bool {
    let b = key.as_bytes();
    (2..=32).contains(&b.len())
        && b[0].is_ascii_lowercase()
        && b.iter()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == b'_' || *c == b'-')
        && (b[b.len() - 1].is_ascii_lowercase() || b[b.len() - 1].is_ascii_digit())
}

/// The key path of a place in `project.yaml`, as the validators write it: the keys of an
/// agent's `tools:` block are tool patterns, dotted themselves, so they are quoted
/// (`primary.tools."mcp.db.query"`). The YAML reader names duplicate keys with it.
pub(crate) fn key_path(steps: &[Step<'_>]) -> String {
    yaml::write_path(steps, is_tools_block)
}

/// Whether `steps` lead to an agent's `tools:` block: `primary.tools` or
/// `primary.subagents.<name>.tools`.
fn is_tools_block(steps: &[Step<'_>]) -> bool {
    matches!(
        steps,
        [Step::Key("primary"), Step::Key("tools")]
            | [
                Step::Key("primary"),
                Step::Key("subagents"),
                Step::Key(_),
                Step::Key("tools")
            ]
    )
}

/// Reads the project tree (after the overlay) into a [`ProjectConfig`].
pub(crate) fn from_tree(root: &Node, errors: &mut Vec<ConfigError>) -> ProjectConfig {
    let mut w = Walk { errors };
    let mut out = ProjectConfig::default();
    let Some(_) = (match &root.value {
        Value::Null => return out,
        _ => w.map(root, ""),
    }) else {
        return out;
    };
    if let Some(mcp) = root.get("mcp") {
        out.servers = servers(&mut w, mcp);
    }
    if let Some(primary) = root.get("primary") {
        out.agents = agents(&mut w, primary);
    }
    out
}

fn servers(w: &mut Walk<'_>, mcp: &Node) -> Vec<McpServerConfig> {
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

const COMMON_KEYS: &[&str] = &["transport", "auth", "tools"];
const STDIO_KEYS: &[&str] = &["command", "cwd", "env"];
const HTTP_KEYS: &[&str] = &["url", "headers"];

/// `stdio`, `sse`, `streamable-http` (or `http`), for messages.
fn transport_choices() -> String {
    let names: Vec<String> = TRANSPORT_NAMES
        .iter()
        .map(|(n, _)| format!("`{n}`"))
        .collect();
    names.join(", ")
}

fn server(w: &mut Walk<'_>, key: &str, node: &Node, path: &str) -> Option<McpServerConfig> {
    let entries = w.map(node, path)?;
    let before = w.errors.len();
    let kind = match node.get("transport") {
        None => {
            w.err(
                node,
                &format!("{path}.transport"),
                format!("missing; `transport` is required: {}", transport_choices()),
            );
            None
        }
        Some(t) => match &t.value {
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
        },
    };
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
                    "unknown key `{k}`; a server has {}",
                    "transport, command, cwd, env (stdio), url, headers (sse, streamable-http), \
                     auth, tools"
                ),
            ),
        }
    }
    let transport = match kind {
        Some(TransportKind::Stdio) => stdio(w, node, path).map(TransportConfig::Stdio),
        Some(TransportKind::Sse) => http(w, node, path, "sse").map(TransportConfig::Sse),
        Some(TransportKind::StreamableHttp) => {
            http(w, node, path, "streamable-http").map(TransportConfig::StreamableHttp)
        }
        None => None,
    };
    let auth = match node.get("auth") {
        None => None,
        Some(a) => auth(w, key, a, &format!("{path}.auth")),
    };
    if let (Some(remote), Some(a)) = (transport.as_ref().and_then(|t| t.http()), &auth) {
        if remote.headers.iter().any(|(n, _)| *n == a.header_name) {
            let headers = node.get("headers").unwrap_or(node);
            let written = headers.as_map().and_then(|es| {
                es.iter()
                    .find(|e| e.key.eq_ignore_ascii_case(a.header_name.as_str()))
            });
            let (loc_node, name) = match written {
                Some(e) => (&e.value, e.key.clone()),
                None => (headers, a.header_name.to_string()),
            };
            w.err(
                loc_node,
                &format!("{path}.headers.{name}"),
                format!(
                    "collides with the auth header `{}`; the secret goes there, set it only through `auth`",
                    a.header_name
                ),
            );
        }
    }
    let tools = match node.get("tools") {
        None => Some(ToolFilter::default()),
        Some(t) => tool_filter(w, t, &format!("{path}.tools")),
    };
    if w.errors.len() != before {
        return None;
    }
    Some(McpServerConfig {
        key: key.to_owned(),
        transport: transport?,
        auth,
        tools: tools?,
    })
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
                Some(s) => match check_relative(&s) {
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
        Some(e) => {
            let p = format!("{path}.env");
            let pairs = w.string_map(e, &p)?;
            let mut out = BTreeMap::new();
            let mut ok = true;
            for (k, v, vnode) in pairs {
                if k.is_empty() || k.contains('=') || k.contains('\0') {
                    w.err(
                        &vnode,
                        &format!("{p}.{k}"),
                        "not a valid environment variable name (empty, or contains `=` or NUL)",
                    );
                    ok = false;
                } else if v.contains('\0') {
                    w.err(&vnode, &format!("{p}.{k}"), "contains a NUL byte");
                    ok = false;
                } else {
                    out.insert(k, v);
                }
            }
            ok.then_some(out)
        }
    };
    Some(StdioServerConfig {
        command: command?,
        cwd: cwd?,
        env: env?,
    })
}

/// Checks that `s` is a relative path that stays inside the directory it is relative to.
fn check_relative(s: &str) -> Result<PathBuf, String> {
    let p = Path::new(s);
    if p.is_absolute() {
        return Err(format!(
            "`{s}` is absolute; `cwd` is relative to the project root"
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
                    "`{s}` is absolute; `cwd` is relative to the project root"
                ))
            }
        }
    }
    Ok(p.to_path_buf())
}

fn http(w: &mut Walk<'_>, node: &Node, path: &str, name: &str) -> Option<HttpServerConfig> {
    let url = match node.get("url") {
        None => {
            let example = if name == "sse" {
                "https://example.com/sse"
            } else {
                "https://example.com/mcp"
            };
            w.err(
                node,
                &format!("{path}.url"),
                format!("missing; a {name} server needs `url`, such as {example}"),
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

fn auth(w: &mut Walk<'_>, server: &str, node: &Node, path: &str) -> Option<AuthConfig> {
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

fn globs(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<(Vec<String>, GlobSet)> {
    let list = w.string_list(node, path)?;
    let mut b = GlobSetBuilder::new();
    let mut ok = true;
    let mut pats = Vec::new();
    for (i, (pat, item)) in list.into_iter().enumerate() {
        match Glob::new(&pat) {
            Ok(g) => {
                b.add(g);
                pats.push(pat);
            }
            Err(e) => {
                w.err(
                    &item,
                    &format!("{path}[{i}]"),
                    format!("`{pat}` is not a valid glob: {}", e.kind()),
                );
                ok = false;
            }
        }
    }
    if !ok {
        return None;
    }
    match b.build() {
        Ok(set) => Some((pats, set)),
        Err(e) => {
            w.err(node, path, format!("the globs do not compile: {e}"));
            None
        }
    }
}

fn tool_filter(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<ToolFilter> {
    let entries = w.map(node, path)?;
    let mut f = ToolFilter::default();
    let mut ok = true;
    for e in entries {
        let p = format!("{path}.{}", e.key);
        match e.key.as_str() {
            "enabled" => match w.boolean(&e.value, &p) {
                Some(b) => f.enabled = b,
                None => ok = false,
            },
            "allow" => match globs(w, &e.value, &p) {
                Some((pats, set)) => {
                    f.allow = pats;
                    f.allow_set = set;
                }
                None => ok = false,
            },
            "deny" => match globs(w, &e.value, &p) {
                Some((pats, set)) => {
                    f.deny = pats;
                    f.deny_set = set;
                }
                None => ok = false,
            },
            k => {
                w.err_key(
                    node,
                    e,
                    &p,
                    format!("unknown key `{k}`; tools has enabled, allow, deny"),
                );
                ok = false;
            }
        }
    }
    ok.then_some(f)
}

fn agents(w: &mut Walk<'_>, primary: &Node) -> AgentGrants {
    let mut out = AgentGrants::default();
    if !matches!(primary.value, Value::Map(_)) {
        // `primary` belongs to the rest of kaged; only its tools blocks are ours.
        return out;
    }
    if let Some(t) = primary.get("tools") {
        out.primary = grants(w, t, "primary.tools");
    }
    if let Some(subs) = primary.get("subagents") {
        if let Value::Map(entries) = &subs.value {
            for e in entries {
                if let Some(t) = e.value.get("tools") {
                    let p = format!("primary.subagents.{}.tools", e.key);
                    if let Some(g) = grants(w, t, &p) {
                        out.subagents.insert(e.key.clone(), g);
                    }
                }
            }
        }
    }
    out
}

fn grants(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<ToolGrants> {
    if matches!(node.value, Value::Null) {
        return Some(ToolGrants::default());
    }
    let entries = w.map(node, path)?;
    let mut out = ToolGrants::default();
    let mut ok = true;
    for e in entries {
        let p = format!("{path}.\"{}\"", e.key);
        let pattern = e.key.trim();
        if pattern.is_empty() {
            w.err_key(node, e, &p, "a tool pattern must not be empty");
            ok = false;
            continue;
        }
        if let Some(c) = pattern.chars().find(|c| {
            !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-') || GLOB_CHARS.contains(c))
        }) {
            w.err_key(
                node,
                e,
                &p,
                format!("`{pattern}`: {c:?} cannot appear in a tool name or pattern"),
            );
            ok = false;
            continue;
        }
        if pattern.starts_with('.') || pattern.ends_with('.') || pattern.contains("..") {
            w.err_key(node, e, &p, format!("`{pattern}`: empty name segment"));
            ok = false;
            continue;
        }
        let kind = if pattern.contains(GLOB_CHARS) {
            match Glob::new(pattern) {
                Ok(g) => GrantPattern::Glob(g.compile_matcher()),
                Err(err) => {
                    w.err_key(
                        node,
                        e,
                        &p,
                        format!("`{pattern}` is not a valid glob: {}", err.kind()),
                    );
                    ok = false;
                    continue;
                }
            }
        } else {
            GrantPattern::Name
        };
        let enabled = match &e.value.value {
            Value::Map(fields) => {
                let mut enabled = Some(true);
                for f in fields {
                    if f.key == "enabled" {
                        enabled = w.boolean(&f.value, &format!("{p}.enabled"));
                    } else {
                        w.err_key(
                            &e.value,
                            f,
                            &format!("{p}.{}", f.key),
                            format!("unknown key `{}`; a tool grant has `enabled`", f.key),
                        );
                        enabled = None;
                    }
                }
                enabled
            }
            _ => {
                w.err(
                    &e.value,
                    &p,
                    format!(
                        "expected {{ enabled: true|false }}, found {}",
                        e.value.type_name()
                    ),
                );
                None
            }
        };
        match enabled {
            Some(enabled) => out.grants.push(ToolGrant {
                pattern: pattern.to_owned(),
                kind,
                enabled,
            }),
            None => ok = false,
        }
    }
    ok.then_some(out)
}
