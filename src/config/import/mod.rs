//! Importing other MCP clients' server lists into the `mcp:` block (`kaged-mcp import`).
//!
//! [`plan`] reads one file of another client, as text, and plans the servers to add: Claude
//! Code's `.mcp.json`, Claude Desktop's `claude_desktop_config.json` and Cursor's `mcp.json`
//! (`mcpServers`), VS Code's `mcp.json` (`servers`, `inputs`; also a `settings.json` with
//! `mcp.servers`), Codex's `config.toml` (`[mcp_servers.NAME]`). The format is told by the
//! content; the file name only decides which parser's error to report when neither reads it.
//!
//! No secret goes into `project.yaml`: every `env` value becomes a `{ secret_ref }` except for
//! a few names that never hold one (`PATH`, `NODE_ENV`, `LOG_LEVEL`, …: see
//! [`is_plain_env`]) and whose value is no URL with a credential, since a file gives no way to
//! tell a token from a setting, and a setting in `local.toml` costs a line where a token in
//! `project.yaml` is a leak. A credential header (`Authorization`, names with `key`, `token`,
//! `secret`, `auth`, …, or any value with a `${…}` reference) becomes the server's `auth:`
//! block (`bearer` for `Authorization: Bearer …`, `header` otherwise), and so does the user
//! info of an HTTP server's URL (`Authorization: Basic …`). The secrets are named
//! `import.<server>.<NAME>` and their values are returned for `local.toml`. A value with a
//! `${VAR}`, `${env:VAR}` or `${input:id}` reference is not resolved: its `secret_ref` is
//! written without a value, so `kaged-mcp check` names it until the operator adds it, and the
//! plan says which reference it stood for.
//!
//! A credential inside a command argument or a URL is found too: a URL's password
//! (`postgresql://user:pw@host/db`), its query or fragment parameters named for a secret
//! (`?api_key=`, `#access_token=`), the value after `--header`/`-H` of a credential header,
//! after a flag named for a secret (`--api-key`, `--token=`), and of `-e`/`--env NAME=VALUE`
//! when `NAME` is a secret's. Given to a container runner (`docker`, `podman`, `nerdctl`), such
//! an `-e NAME=VALUE` becomes `-e NAME` with `NAME` an `env` secret, which the runner passes
//! on. kaged-mcp has no way to put a secret in an argument or a URL, so any other is moved to
//! `local.toml` all the same, `<import.<server>.<name>>` stands in its place in
//! `project.yaml`, and the server is imported disabled ([`PlannedServer::disabled`]) until the
//! operator gives it that credential another way; so is a server with a second credential
//! header (`X-Api-Key` beside `Authorization`), since a server sends one, its `auth:`.
//!
//! Codex's `tool_timeout_sec` and `startup_timeout_sec` are carried over to `local.toml` as
//! the server's `timeout_ms` and `probe_timeout_ms`.
//!
//! Server names become valid keys (lower case, other characters as `-`, `mcp-` in front of a
//! name that does not start with a letter, at most 32 characters, `-2`, `-3` for repeats); a
//! key the project already declares is skipped, never overwritten, and so is every server
//! past [`MAX_SERVERS`]. [`mod@write`] turns a plan into the texts of `project.yaml` and
//! `local.toml`, adding to the existing ones; nothing here touches a file.
//!
//! # Example
//! ```
//! use kaged_mcp::config::import::{plan, write, Format};
//! let claude = r#"{"mcpServers": {"GitHub": {"command": "npx",
//!     "args": ["-y", "@modelcontextprotocol/server-github"],
//!     "env": {"GITHUB_TOKEN": "ghp_example", "NODE_ENV": "production"}}}}"#;
//! let plan = plan(claude, ".mcp.json", &[]).unwrap();
//! assert_eq!(plan.format, Format::ClaudeCode);
//! assert_eq!(plan.servers[0].key, "github");
//! let project = write::project_yaml(None, &plan).unwrap();
//! assert!(project.contains("secret_ref: \"import.github.GITHUB_TOKEN\""));
//! assert!(!project.contains("ghp_example"));
//! let local = write::local_toml(None, &plan).unwrap().unwrap();
//! assert!(local.contains("[secrets.import.github]\nGITHUB_TOKEN = \"ghp_example\""));
//! ```

mod convert;
mod credentials;
mod formats;
mod names;
pub mod write;

use std::fmt;

use super::secret::{Secret, SecretRef};
use super::MAX_SERVERS;

pub use names::{is_credential_header, is_plain_env, server_key};

/// The other client a file came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Format {
    /// Claude Code's `.mcp.json` (`mcpServers`).
    ClaudeCode,
    /// Claude Desktop's `claude_desktop_config.json` (`mcpServers`).
    ClaudeDesktop,
    /// Cursor's `mcp.json` (`mcpServers`).
    Cursor,
    /// `mcpServers` in a file whose name says no more (Claude Code, Claude Desktop and Cursor
    /// write the same shape).
    McpServers,
    /// VS Code's `mcp.json` (`servers`, `inputs`), or its `settings.json` (`mcp.servers`).
    VsCode,
    /// Codex's `config.toml` (`[mcp_servers.NAME]`).
    Codex,
}

impl Format {
    /// The format's name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            Format::ClaudeCode => "Claude Code (mcpServers)",
            Format::ClaudeDesktop => "Claude Desktop (mcpServers)",
            Format::Cursor => "Cursor (mcpServers)",
            Format::McpServers => "Claude Code / Claude Desktop / Cursor (mcpServers)",
            Format::VsCode => "VS Code (servers)",
            Format::Codex => "Codex (mcp_servers)",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The file is not one this importer reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError(String);

impl ImportError {
    fn new(msg: impl Into<String>) -> Self {
        Self(msg.into())
    }
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ImportError {}

/// What one file brings: the servers to add and the ones left out.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Plan {
    /// The format the file was read as.
    pub format: Format,
    /// The servers to add, in the order of their names in the file (sorted).
    pub servers: Vec<PlannedServer>,
    /// The servers left out, with why.
    pub skipped: Vec<Skipped>,
}

impl Plan {
    /// Every secret of every planned server.
    pub fn secrets(&self) -> impl Iterator<Item = (&PlannedServer, &MovedSecret)> {
        self.servers
            .iter()
            .flat_map(|s| s.secrets.iter().map(move |m| (s, m)))
    }
}

/// A server of the file that is not imported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Skipped {
    /// Its name in the file.
    pub name: String,
    /// Why: the key is taken, the project is full, the entry cannot be read.
    pub reason: String,
}

/// One server to add to the `mcp:` block.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct PlannedServer {
    /// Its key under `mcp:`.
    pub key: String,
    /// Its name in the file.
    pub name: String,
    /// How it is reached.
    pub transport: PlannedTransport,
    /// The secrets it needs, in `local.toml` `[secrets.import.<key>]`.
    pub secrets: Vec<MovedSecret>,
    /// What was not carried over or needs a look (ignored keys, `${…}` in arguments, …).
    pub notes: Vec<String>,
    /// Why the server is imported disabled (`disabled = true` under `[mcp.<key>]` in
    /// `local.toml`): one line per credential the file passed in a way kaged-mcp cannot pass
    /// from a secret (in a command argument, in a URL's query or fragment, as a second
    /// credential header). Each one's value is among [`secrets`](Self::secrets), unused, and
    /// `project.yaml` has `<its secret_ref>` in its place (or, for a header, nothing). Empty:
    /// the server is enabled.
    pub disabled: Vec<String>,
    /// `timeout_ms` under `[mcp.<key>]` in `local.toml`: Codex's `tool_timeout_sec`.
    pub timeout_ms: Option<u64>,
    /// `probe_timeout_ms` under `[mcp.<key>]` in `local.toml`: Codex's `startup_timeout_sec`,
    /// the time a server has to start and answer (the daemon's `startup_timeout_ms` still
    /// bounds the whole start).
    pub probe_timeout_ms: Option<u64>,
}

impl PlannedServer {
    /// Whether the server is imported disabled (see [`disabled`](Self::disabled)).
    pub fn is_disabled(&self) -> bool {
        !self.disabled.is_empty()
    }

    /// Whether the server gets an `[mcp.<key>]` table in `local.toml`: it is disabled, or
    /// has a timeout carried over.
    pub fn has_overrides(&self) -> bool {
        self.is_disabled() || self.timeout_ms.is_some() || self.probe_timeout_ms.is_some()
    }
}

/// How a planned server is reached.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum PlannedTransport {
    /// `transport: stdio`.
    Stdio {
        /// Program and arguments, never empty.
        command: Vec<String>,
        /// `env:`, in name order.
        env: Vec<(String, PlannedValue)>,
    },
    /// `transport: streamable-http` or `transport: sse`.
    Http {
        /// `true` for the legacy HTTP+SSE transport.
        sse: bool,
        /// The URL, checked to be `http`/`https` with a host and no credential.
        url: String,
        /// `headers:`, none of them a credential.
        headers: Vec<(String, String)>,
        /// `auth:`, when a credential header was found.
        auth: Option<PlannedAuth>,
    },
}

impl PlannedTransport {
    /// `stdio`, `streamable-http` or `sse`.
    pub fn name(&self) -> &'static str {
        match self {
            PlannedTransport::Stdio { .. } => "stdio",
            PlannedTransport::Http { sse: true, .. } => "sse",
            PlannedTransport::Http { sse: false, .. } => "streamable-http",
        }
    }
}

/// An `env:` value: a plain string, or a secret in `local.toml`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PlannedValue {
    /// Written in `project.yaml` as it is.
    Plain(String),
    /// `{ secret_ref: … }`.
    Secret(SecretRef),
}

/// A server's `auth:` block: `bearer`, or `header` with its name.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct PlannedAuth {
    /// `None` for `type: bearer`, the header's name for `type: header`.
    pub header_name: Option<String>,
    /// Where its secret is.
    pub secret_ref: SecretRef,
}

/// A secret taken out of the file for `local.toml`.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct MovedSecret {
    /// What it was: `env GITHUB_TOKEN`, `header Authorization`.
    pub what: String,
    /// Where it goes: `import.<server>.<NAME>`.
    pub secret_ref: SecretRef,
    /// Its value; `None` when the file had a `${…}` reference instead.
    pub value: Option<Secret>,
    /// The references the file had instead of a value (`GITHUB_TOKEN`, `input:pat`), with what
    /// the file said of each (a VS Code input's description); empty when `value` is set.
    pub references: Vec<String>,
    /// `false` when no `project.yaml` entry reads it (a second credential header, left out).
    pub used: bool,
}

/// Reads `text`, a file named `file_name` (only a hint), and plans its servers for a project
/// that declares the keys `existing`.
///
/// # Errors
/// When the text is neither JSON with `mcpServers` / `servers` nor TOML with `mcp_servers`:
/// the message names what was expected, or the parse error of the format the name suggests.
pub fn plan(text: &str, file_name: &str, existing: &[&str]) -> Result<Plan, ImportError> {
    let read = formats::read(text, file_name)?;
    let mut taken: Vec<String> = existing.iter().map(|k| (*k).to_owned()).collect();
    let mut room = MAX_SERVERS.saturating_sub(existing.len());
    let mut out = Plan {
        format: read.format,
        servers: Vec::new(),
        skipped: Vec::new(),
    };
    for foreign in read.servers {
        let key = server_key(&foreign.name);
        if existing.contains(&key.as_str()) {
            out.skipped.push(Skipped {
                reason: format!("the project already declares `{key}`; it is left as it is"),
                name: foreign.name,
            });
            continue;
        }
        let key = unique(&key, &taken);
        if room == 0 {
            out.skipped.push(Skipped {
                reason: format!("a project declares at most {MAX_SERVERS} servers"),
                name: foreign.name,
            });
            continue;
        }
        match convert::server(&foreign, &key, &read.inputs) {
            Ok(server) => {
                taken.push(key);
                room -= 1;
                out.servers.push(server);
            }
            Err(reason) => out.skipped.push(Skipped {
                name: foreign.name,
                reason,
            }),
        }
    }
    Ok(out)
}

/// `key`, or `key-2`, `key-3`, … (kept within 32 characters) when `taken` has it.
fn unique(key: &str, taken: &[String]) -> String {
    if !taken.iter().any(|t| t == key) {
        return key.to_owned();
    }
    (2..)
        .map(|n| {
            let suffix = format!("-{n}");
            let mut base = key[..key.len().min(32 - suffix.len())].to_owned();
            while base.ends_with(['-', '_']) {
                base.pop();
            }
            format!("{base}{suffix}")
        })
        .find(|k| !taken.iter().any(|t| t == k))
        .unwrap_or_else(|| key.to_owned())
}

#[cfg(test)]
mod tests;
