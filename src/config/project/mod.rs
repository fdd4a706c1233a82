//! The `mcp:` block of `project.yaml` (ADR-0043 §1, §4) and the agents' `tools:` grants: the
//! public data model, and [`from_tree`], which turns the located YAML tree into it.
//!
//! Validation walks the tree and collects every problem it finds, each with its file, key path
//! and line, before giving up; a valid tree becomes [`ProjectConfig`]. The reading is split by
//! concern: [`walk`] is the walker that collects errors and reads plain values, [`transport`]
//! the table of transport names, [`servers`] the `mcp:` block with each server's transport
//! fields, [`env`] a stdio server's `env:` (and, once `local.toml` is read, its secrets),
//! [`auth`] and [`filter`] a server's `auth:` and `tools:` blocks, and [`agents`] the agents'
//! grants. This module keeps the types, the entry point and the way key paths are
//! written.

pub(super) mod agents;
pub(super) mod auth;
mod env;
pub(super) mod filter;
mod servers;
pub(super) mod transport;
mod walk;

use std::collections::BTreeMap;
use std::path::PathBuf;

use globset::GlobSet;
use http::{HeaderName, HeaderValue};

use super::error::ConfigError;
use super::secret::{Secret, SecretRef};
use super::yaml::{self, Node, Step, Value};
use transport::TransportKind;
use walk::Walk;

pub(crate) use env::resolve_env_secrets;
pub use servers::is_valid_server_key;

/// Most servers a project may declare (ADR-0043 §1).
pub const MAX_SERVERS: usize = 16;

/// The part of `project.yaml` this crate reads: the `mcp:` block and the agents' grants.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ProjectConfig {
    /// The declared servers, in the order of the file.
    pub servers: Vec<McpServerConfig>,
    /// `primary.tools` and `primary.subagents.<name>.tools`.
    pub agents: AgentGrants,
}

impl McpServerConfig {
    /// How the server is reached, as `mcp.lock` records it ([`crate::pin`]): the transport,
    /// and the command (stdio) or the URL without user info or query.
    pub fn reached(&self) -> crate::pin::Reached {
        match &self.transport {
            TransportConfig::Stdio(s) => {
                crate::pin::Reached::new(self.transport.name(), Some(s.command.clone()), None)
            }
            TransportConfig::Sse(h) | TransportConfig::StreamableHttp(h) => {
                crate::pin::Reached::new(
                    self.transport.name(),
                    None,
                    Some(crate::protocol::uri::redact_uri(h.url.as_str()).into_owned()),
                )
            }
        }
    }
}

impl ProjectConfig {
    /// The server declared under `key`.
    pub fn server(&self, key: &str) -> Option<&McpServerConfig> {
        self.servers.iter().find(|s| s.key == key)
    }
}

/// One server of the `mcp:` block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpServerConfig {
    /// The server key, the middle part of `mcp.<key>.<tool>`.
    pub key: String,
    /// How to reach it.
    pub transport: TransportConfig,
    /// The auth header, when the server needs one.
    pub auth: Option<AuthConfig>,
    /// Which of its tools get registered.
    pub tools: ToolFilter,
    /// `skills:`: which of the skills it serves (SEP-2640) are listed and may be loaded, the
    /// same `enabled`/`allow`/`deny` globs over skill names as `tools:`.
    pub skills: ToolFilter,
    /// `roots:`: the directories the server may see, relative to the project root (checked
    /// not to climb out of it; symlinks are checked at start by
    /// [`resolve_inside`](crate::config::resolve_inside)). `None` when not declared: the client
    /// then advertises no `roots` capability.
    pub roots: Option<Vec<PathBuf>>,
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
#[non_exhaustive]
pub struct StdioServerConfig {
    /// Program and arguments; never empty.
    pub command: Vec<String>,
    /// Working directory relative to the project root, checked not to escape it lexically;
    /// [`crate::config::resolve_cwd`] checks symlinks when the server starts.
    pub cwd: Option<PathBuf>,
    /// Variables added on top of the daemon's environment.
    pub env: BTreeMap<String, EnvValue>,
}

/// The value of one variable of a stdio server's `env`: a plain string, or `{ secret_ref: a.b }`
/// for a token the server reads from its environment.
///
/// `Display` prints a plain value as written and a secret as `***`; `Debug` never shows a
/// secret either (see [`Secret`]).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum EnvValue {
    /// A value written in the project (bare numbers and booleans read as their text).
    Plain(String),
    /// `{ secret_ref: a.b }`: the secret `[secrets.a] b` of `local.toml`, resolved when the
    /// configuration loads. A missing one leaves `value` `None` and is an error of its server
    /// alone: [`Config::resolve_secrets`](crate::config::Config::resolve_secrets) reports it,
    /// so a session that starts the server refuses to start (one that starts other servers
    /// only does not), and `kaged-mcp check` names it.
    Secret {
        /// Where the secret lives in `local.toml` `[secrets]`.
        secret_ref: SecretRef,
        /// The secret, once resolved.
        value: Option<Secret>,
    },
}

impl EnvValue {
    /// The value the server's process gets; `None` for a secret that was not resolved. Call
    /// it only where the value goes to the child process.
    pub fn expose(&self) -> Option<&str> {
        match self {
            EnvValue::Plain(s) => Some(s),
            EnvValue::Secret { value, .. } => value.as_ref().map(Secret::expose),
        }
    }

    /// The reference of a secret value; `None` for a plain one.
    pub fn secret_ref(&self) -> Option<&SecretRef> {
        match self {
            EnvValue::Plain(_) => None,
            EnvValue::Secret { secret_ref, .. } => Some(secret_ref),
        }
    }
}

impl std::fmt::Display for EnvValue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EnvValue::Plain(s) => f.write_str(s),
            EnvValue::Secret { .. } => f.write_str("***"),
        }
    }
}

/// The fields of a `transport: sse` or `transport: streamable-http` server.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpServerConfig {
    /// The endpoint, an absolute `http` or `https` URL: the event stream (`sse`) or the MCP
    /// endpoint (`streamable-http`).
    pub url: url::Url,
    /// Static headers sent on every request.
    pub headers: Vec<(HeaderName, HeaderValue)>,
}

impl HttpServerConfig {
    /// The server at `url`, with no static header.
    pub fn new(url: url::Url) -> Self {
        Self {
            url,
            headers: Vec::new(),
        }
    }

    /// Adds the static header `name: value`.
    pub fn with_header(mut self, name: HeaderName, value: HeaderValue) -> Self {
        self.headers.push((name, value));
        self
    }
}

/// The former name of [`HttpServerConfig`].
pub type SseServerConfig = HttpServerConfig;

/// `auth.type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthKind {
    /// `Authorization: Bearer <secret>`.
    Bearer,
    /// `<header_name>: <secret>`.
    Header,
    /// OAuth 2.1 as the MCP authorization spec says (`Authorization: Bearer <access token>`).
    OAuth,
}

/// The `auth:` block of a server (ADR-0043 §4, tiers 1 to 3).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct AuthConfig {
    /// `bearer`, `header` or `oauth`.
    pub kind: AuthKind,
    /// The header that carries the secret (`Authorization` unless `header_name` says otherwise;
    /// always `Authorization` for OAuth).
    pub header_name: HeaderName,
    /// Where the secret lives in `local.toml` `[secrets]`: the static secret (`bearer`,
    /// `header`: required), or the OAuth client's secret (`oauth`: optional).
    pub secret_ref: Option<SecretRef>,
    /// The OAuth settings, for `type: oauth`.
    pub oauth: Option<OAuthConfig>,
}

impl AuthConfig {
    /// `type: bearer`: the secret at `secret_ref` as `Authorization: Bearer …`.
    pub fn bearer(secret_ref: SecretRef) -> Self {
        Self {
            kind: AuthKind::Bearer,
            header_name: http::header::AUTHORIZATION,
            secret_ref: Some(secret_ref),
            oauth: None,
        }
    }

    /// `type: header`: the secret at `secret_ref` as the value of `header_name`.
    pub fn header(header_name: HeaderName, secret_ref: SecretRef) -> Self {
        Self {
            kind: AuthKind::Header,
            header_name,
            secret_ref: Some(secret_ref),
            oauth: None,
        }
    }
}

/// The settings of `auth: {type: oauth}`: all optional. Without any, the client discovers the
/// authorization server, registers itself (client ID metadata document or dynamic
/// registration) and runs the authorization-code flow with PKCE at `kaged-mcp auth login`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OAuthConfig {
    /// `client_id`: a client registered beforehand with the authorization server.
    pub client_id: Option<String>,
    /// `token_endpoint_auth_method`: how the client authenticates at the token endpoint; by
    /// default the registration's, else `client_secret_basic` with a secret, else `none`.
    pub token_endpoint_auth_method: Option<ClientAuthMethod>,
    /// `client_metadata_url`: the HTTPS URL of this client's metadata document, used as its
    /// client id where the authorization server supports client ID metadata documents.
    pub client_metadata_url: Option<url::Url>,
    /// `scopes`: the scopes to ask for, overriding the server's `WWW-Authenticate` and
    /// `scopes_supported`.
    pub scopes: Option<Vec<String>>,
    /// `grant`: `authorization_code` (default: an operator logs in) or `client_credentials`
    /// (machine to machine, no browser).
    pub grant: OAuthGrant,
    /// `private_key_ref`: the client's PKCS#8 PEM EC P-256 key in `local.toml`, for
    /// `private_key_jwt`.
    pub private_key_ref: Option<SecretRef>,
    /// `assertion_file`: for `grant: jwt_bearer`, the file holding the workload's identity token
    /// (a Kubernetes projected service-account token, a cloud provider's token file), read
    /// again at each grant since such files rotate.
    pub assertion_file: Option<std::path::PathBuf>,
    /// `identity_provider`: for `grant: jwt_bearer` instead of `assertion_file`, enterprise-managed
    /// authorization (SEP-990): the assertion is an identity assertion grant (ID-JAG) the
    /// enterprise IdP issues in exchange for an ID token (RFC 8693 token exchange).
    pub identity_provider: Option<IdentityProvider>,
    /// `dpop`: bind the tokens to a per-server P-256 key (RFC 9449): a DPoP proof on every
    /// token request and every MCP request, and the `DPoP` authorization scheme.
    pub dpop: bool,
    /// `issuer`: the authorization server the operator names (its issuer identifier, https or
    /// http on a loopback address). When set, the server's metadata must name this one, or
    /// nothing is sent; without it, a JWT-bearer assertion goes only to the authorization
    /// server its `aud` names.
    pub issuer: Option<url::Url>,
}

/// `auth.identity_provider`: the enterprise IdP of SEP-990, where an ID token is exchanged for
/// an ID-JAG (RFC 8693) that the JWT-bearer grant then presents.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct IdentityProvider {
    /// `token_endpoint`: the IdP's token endpoint (https, or http on a loopback address).
    pub token_endpoint: url::Url,
    /// `id_token_file`: the file holding the ID token the IdP issued (read at each grant).
    pub id_token_file: std::path::PathBuf,
    /// `client_id`: this client at the IdP, if it wants one.
    pub client_id: Option<String>,
    /// `secret_ref`: the client's secret at the IdP in `local.toml` (`client_secret_basic`).
    pub secret_ref: Option<SecretRef>,
}

/// `auth.grant` of an OAuth server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OAuthGrant {
    /// An operator logs in with a browser (`kaged-mcp auth login`).
    AuthorizationCode,
    /// The client's own credentials, no browser.
    ClientCredentials,
    /// The workload's identity token as a JWT-bearer assertion (RFC 7523 section 2.1,
    /// SEP-1933 workload identity federation), read from `assertion_file`; no browser.
    JwtBearer,
}

impl OAuthGrant {
    /// The name `grant:` gives it (`authorization_code`, `client_credentials`, `jwt_bearer`).
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::AuthorizationCode => "authorization_code",
            Self::ClientCredentials => "client_credentials",
            Self::JwtBearer => "jwt_bearer",
        }
    }
}

/// `auth.token_endpoint_auth_method`: how an OAuth client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ClientAuthMethod {
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// `client_id` and `client_secret` in the form.
    ClientSecretPost,
    /// A public client: `client_id` in the form, no secret.
    None,
    /// A JWT signed with the client's private key (RFC 7523).
    PrivateKeyJwt,
}

impl ClientAuthMethod {
    /// The method of its RFC 7591 name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "client_secret_basic" => Self::ClientSecretBasic,
            "client_secret_post" => Self::ClientSecretPost,
            "none" => Self::None,
            "private_key_jwt" => Self::PrivateKeyJwt,
            _ => return None,
        })
    }

    /// Its RFC 7591 name.
    pub const fn as_str(self) -> &'static str {
        match self {
            Self::ClientSecretBasic => "client_secret_basic",
            Self::ClientSecretPost => "client_secret_post",
            Self::None => "none",
            Self::PrivateKeyJwt => "private_key_jwt",
        }
    }
}

/// The `tools:` filter of a server: applied at registration, deny wins over allow.
#[derive(Debug, Clone)]
#[non_exhaustive]
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

    /// The rule that keeps a tool out, as the project writes it (`tools.enabled: false`,
    /// `tools.deny`, `tools.allow`), or `None` when it is [`permitted`](Self::permits).
    pub fn refusal(&self, tool: &str) -> Option<&'static str> {
        if !self.enabled {
            Some("tools.enabled: false")
        } else if self.deny_set.is_match(tool) {
            Some("tools.deny")
        } else if !self.allow.is_empty() && !self.allow_set.is_match(tool) {
            Some("tools.allow")
        } else {
            None
        }
    }
}

/// Per-agent tool grants (ADR-0043 §2): pattern → enabled.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct AgentGrants {
    /// `primary.tools`, when present.
    pub primary: Option<ToolGrants>,
    /// `primary.subagents.<name>.tools`, by subagent name.
    pub subagents: BTreeMap<String, ToolGrants>,
    /// `primary.skills`, when present: the skills the agent may load, keyed as
    /// `mcp.<server>.<skill>` (exact, dotted prefix or glob, as tools).
    pub primary_skills: Option<ToolGrants>,
    /// `primary.subagents.<name>.skills`, by subagent name.
    pub subagent_skills: BTreeMap<String, ToolGrants>,
}

impl AgentGrants {
    /// The skill grants of `agent` (`primary` or a subagent's name); `None` when it has no
    /// `skills:` block, which grants no skill.
    pub fn skills_for(&self, agent: &str) -> Option<&ToolGrants> {
        if agent == "primary" {
            self.primary_skills.as_ref()
        } else {
            self.subagent_skills.get(agent)
        }
    }

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
#[non_exhaustive]
pub struct ToolGrants {
    /// The grants.
    pub grants: Vec<ToolGrant>,
}

/// One key of an agent's `tools:` map.
#[derive(Debug, Clone)]
#[non_exhaustive]
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
#[non_exhaustive]
pub enum GrantPattern {
    /// No glob characters: matches that name, and every name below it at a dot boundary.
    Name,
    /// A glob (`*`, `?`, `[`, `{`), matched against whole names.
    Glob(globset::GlobMatcher),
}

/// The key path of a place in `project.yaml`, as the validators write it: the keys of an
/// agent's `tools:` block are tool patterns, dotted themselves, so they are quoted
/// (`primary.tools."mcp.db.query"`). The YAML reader names duplicate keys with it.
pub(crate) fn key_path(steps: &[Step<'_>]) -> String {
    yaml::write_path(steps, agents::is_tools_block)
}

/// The top-level keys other MCP clients keep their servers under (Claude Code, Claude Desktop
/// and Cursor `mcpServers`, Codex `mcp_servers`), and whose format each is. (VS Code's
/// `servers` is not among them: a key that general may be another part of kaged's.)
const FOREIGN_SERVER_BLOCKS: &[(&str, &str)] = &[
    (
        "mcpServers",
        "the Claude Code / Claude Desktop / Cursor format",
    ),
    ("mcp_servers", "Codex's format"),
];

/// A block of servers in another client's format is refused, not ignored: its servers would
/// silently not exist. The error names the key's line and where kaged-mcp's servers go.
fn foreign_server_blocks(w: &mut Walk<'_>, root: &Node) {
    let Some(entries) = root.as_map() else {
        return;
    };
    for entry in entries {
        let Some((key, format)) = FOREIGN_SERVER_BLOCKS.iter().find(|(k, _)| *k == entry.key)
        else {
            continue;
        };
        w.err_key(
            root,
            entry,
            key,
            format!(
                "`{key}:` is {format}, which kaged-mcp does not read: declare each server under \
                 `mcp:` instead (`mcp: {{<name>: {{transport: stdio, command: [...]}}}}`; \
                 `url:` with `transport: streamable-http` for an HTTP server)"
            ),
        );
    }
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
    foreign_server_blocks(&mut w, root);
    if let Some(mcp) = root.get("mcp") {
        out.servers = servers::servers(&mut w, mcp);
    }
    if let Some(primary) = root.get("primary") {
        out.agents = agents::agents(&mut w, primary);
    }
    out
}
