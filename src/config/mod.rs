//! Configuration: the project DSL, its local overlay, the operator's `local.toml` and the
//! daemon's `config.toml`.
//!
//! [`load`] reads the four files of [`ConfigPaths`]: `project.yaml` (the `mcp:` block of
//! ADR-0043 §1 and the agents' `tools:` grants; every other block belongs to the rest of kaged
//! and is left alone), `project.local.yaml` deep-merged over it before validation (`null`
//! removes a key), `local.toml` (`[mcp.<key>]` overrides and `[secrets]`) and `config.toml`
//! (`[mcp]` daemon knobs). Every problem found is reported, each naming its file, key path and,
//! for YAML and TOML, line and column; nothing panics on bad input, and files are bounded in
//! size, nesting and alias expansion.
//!
//! # Example
//! ```
//! use kaged_mcp::config::Sources;
//! let config = Sources::new(
//!     "mcp:\n  db:\n    transport: stdio\n    command: [\"node\", \"db.js\"]\n",
//! )
//! .load()
//! .unwrap();
//! assert_eq!(config.project.servers[0].key, "db");
//! assert_eq!(config.daemon.result_max_bytes, 65536);
//! ```

mod daemon;
mod era;
mod error;
pub mod import;
mod local;
mod overlay;
mod project;
mod secret;
mod tasks;
mod toml_doc;
mod validation;
pub(crate) mod yaml;

/// The keys each configuration parser accepts, from the lists the parsers use for their
/// "unknown key" messages. `tests/docs.rs` checks that docs/configuration.md documents each.
#[doc(hidden)]
pub mod keys {
    pub use super::daemon::KEYS as DAEMON_MCP;
    pub use super::local::SERVER_KEYS as LOCAL_SERVER;
    pub use super::project::agents::GRANT_KEYS as AGENT_GRANT;
    pub use super::project::auth::{
        IDP_KEYS as AUTH_IDENTITY_PROVIDER, OAUTH_KEYS as AUTH_OAUTH, STATIC_KEYS as AUTH_STATIC,
    };
    pub use super::project::filter::KEYS as SERVER_TOOLS;
    pub use super::project::transport::{
        COMMON_KEYS as SERVER_COMMON, HTTP_KEYS as SERVER_HTTP, STDIO_KEYS as SERVER_STDIO,
    };
}

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

pub use daemon::DaemonConfig;
pub use era::EraPreference;
pub use error::{ConfigError, ConfigErrors, Location};
pub use local::{LocalConfig, ServerOverrides};
#[cfg(feature = "oauth")]
pub(crate) use project::auth::may_receive_secrets;
pub use project::{
    is_valid_server_key, AgentGrants, AuthConfig, AuthKind, ClientAuthMethod, EnvValue,
    GrantPattern, HttpServerConfig, IdentityProvider, McpServerConfig, OAuthConfig, OAuthGrant,
    ProjectConfig, SseServerConfig, StdioServerConfig, ToolFilter, ToolGrant, ToolGrants,
    TransportConfig, MAX_SERVERS,
};
pub use secret::{Secret, SecretRef};
pub use tasks::TaskMode;
pub use validation::Validation;

/// The largest configuration file read, in bytes; larger ones are refused unread.
pub const MAX_FILE_BYTES: u64 = 1024 * 1024;

/// Where the configuration files are.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct ConfigPaths {
    /// The project directory: `project.yaml`, and `project.local.yaml` when it exists.
    pub project_dir: PathBuf,
    /// `local.toml`; `None` reads `<project_dir>/local.toml` when it exists.
    pub local: Option<PathBuf>,
    /// `config.toml`; `None` uses the built-in defaults.
    pub config: Option<PathBuf>,
}

impl ConfigPaths {
    /// The files of the project in `dir`, with the default `local.toml` and no `config.toml`.
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            project_dir: dir.into(),
            local: None,
            config: None,
        }
    }

    /// Reads `local.toml` from `path` (it must exist).
    pub fn local(mut self, path: impl Into<PathBuf>) -> Self {
        self.local = Some(path.into());
        self
    }

    /// Reads `config.toml` from `path` (it must exist).
    pub fn config(mut self, path: impl Into<PathBuf>) -> Self {
        self.config = Some(path.into());
        self
    }
}

/// The texts of the configuration files, for loading without a file system: [`Sources::new`]
/// and its builder methods, or its fields set after `new` (a file's name as it should appear
/// in messages, the project root).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Sources {
    /// The project root the paths in the project are relative to.
    pub project_root: PathBuf,
    /// `(file name, text)` of `project.yaml`.
    pub project: (PathBuf, String),
    /// `project.local.yaml`, if any.
    pub overlay: Option<(PathBuf, String)>,
    /// `local.toml`, if any.
    pub local: Option<(PathBuf, String)>,
    /// `config.toml`, if any.
    pub config: Option<(PathBuf, String)>,
    /// `mcp.lock`, if the project has one ([`crate::pin`]).
    pub lock: Option<(PathBuf, String)>,
}

impl Sources {
    /// A project with just `project.yaml`, rooted at the current directory.
    pub fn new(project_yaml: impl Into<String>) -> Self {
        Self {
            project_root: PathBuf::from("."),
            project: ("project.yaml".into(), project_yaml.into()),
            overlay: None,
            local: None,
            config: None,
            lock: None,
        }
    }

    /// Adds `mcp.lock`.
    pub fn lock(mut self, text: impl Into<String>) -> Self {
        self.lock = Some((crate::pin::LOCK_FILE.into(), text.into()));
        self
    }

    /// Adds `project.local.yaml`.
    pub fn overlay(mut self, text: impl Into<String>) -> Self {
        self.overlay = Some(("project.local.yaml".into(), text.into()));
        self
    }

    /// Adds `local.toml`.
    pub fn local(mut self, text: impl Into<String>) -> Self {
        self.local = Some(("local.toml".into(), text.into()));
        self
    }

    /// Adds `config.toml`.
    pub fn config(mut self, text: impl Into<String>) -> Self {
        self.config = Some(("config.toml".into(), text.into()));
        self
    }

    /// Parses and validates everything; see [`load`].
    pub fn load(&self) -> Result<Config, ConfigErrors> {
        let mut errors = Vec::new();
        let mut warnings = Vec::new();
        let tree = match yaml::parse(&self.project.1, &self.project.0, project::key_path) {
            Ok(t) => Some(t),
            Err(e) => {
                errors.push(e);
                None
            }
        };
        let tree = match (&self.overlay, tree) {
            (Some((file, text)), Some(base)) => match yaml::parse(text, file, project::key_path) {
                Ok(over) => Some(overlay::merge(base, over)),
                Err(e) => {
                    errors.push(e);
                    None
                }
            },
            (Some((file, text)), None) => {
                if let Err(e) = yaml::parse(text, file, project::key_path) {
                    errors.push(e);
                }
                None
            }
            (None, tree) => tree,
        };
        let mut project = tree
            .as_ref()
            .map(|t| project::from_tree(t, &mut errors))
            .unwrap_or_default();
        let before_local = errors.len();
        let local = match &self.local {
            Some((file, text)) => local::parse(text, file, &mut errors),
            None => LocalConfig::default(),
        };
        // A local.toml with errors may have lost secrets: reporting them missing would mislead
        // (and the load fails on those errors anyway). A missing one is not a load error: it is
        // its server's, reported by `resolve_secrets` for a session that starts that server.
        let mut env_secrets_missing = Vec::new();
        if let (Some(tree), true) = (&tree, errors.len() == before_local) {
            let local_file = match &self.local {
                Some((file, _)) => file.clone(),
                None => self.project_root.join("local.toml"),
            };
            project::resolve_env_secrets(
                tree,
                &mut project,
                &local,
                &local_file,
                &mut env_secrets_missing,
            );
        }
        if let Some((file, _)) = &self.local {
            for (key, o) in &local.servers {
                let sse = project
                    .server(key)
                    .is_some_and(|s| matches!(s.transport, project::TransportConfig::Sse(_)));
                if sse && o.era == EraPreference::Modern {
                    errors.push(ConfigError::new(
                        file.clone(),
                        format!("mcp.{key}.era"),
                        None,
                        format!(
                            "server `{key}` uses the sse transport (2024-11-05 HTTP+SSE), which \
                             carries only legacy MCP; era \"modern\" needs stdio or \
                             streamable-http (use \"auto\" or \"legacy\")"
                        ),
                    ));
                }
            }
            for key in local.servers.keys() {
                if project.server(key).is_none() {
                    warnings.push(ConfigError::new(
                        file.clone(),
                        format!("mcp.{key}"),
                        None,
                        format!(
                            "overrides a server `{key}` that the project does not declare; ignored"
                        ),
                    ));
                }
            }
        }
        let daemon = match &self.config {
            Some((file, text)) => daemon::parse(text, file, &mut errors, &mut warnings),
            None => DaemonConfig::default(),
        };
        // A lock that cannot be read or parsed is an error, never "no lock": pins fail closed.
        let lock = match &self.lock {
            Some((file, text)) => match crate::pin::Lock::parse(text, file) {
                Ok(lock) => Some(Arc::new(lock)),
                Err(e) => {
                    errors.push(ConfigError::new(
                        e.file,
                        e.key_path,
                        e.at.map(|(line, column)| Location { line, column }),
                        e.message,
                    ));
                    None
                }
            },
            None => None,
        };
        if let Some(errs) = ConfigErrors::from_vec(errors) {
            return Err(errs);
        }
        Ok(Config {
            project_root: self.project_root.clone(),
            project,
            local,
            daemon,
            lock,
            warnings,
            local_file: self.local.as_ref().map(|(f, _)| f.clone()),
            env_secrets_missing,
        })
    }
}

/// The whole validated configuration.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct Config {
    /// The project directory; `cwd` of stdio servers is relative to it.
    pub project_root: PathBuf,
    /// The `mcp:` block and agents' grants, after the overlay.
    pub project: ProjectConfig,
    /// Operator overrides and secrets.
    pub local: LocalConfig,
    /// Daemon-level knobs.
    pub daemon: DaemonConfig,
    /// The project's `mcp.lock`, if it has one: the tool definitions the operator approved
    /// ([`crate::pin`]).
    pub lock: Option<Arc<crate::pin::Lock>>,
    /// Things worth telling the operator that do not stop the session.
    pub warnings: Vec<ConfigError>,
    local_file: Option<PathBuf>,
    /// The `env` secrets `local.toml` lacks, each with its server's key: errors of that server
    /// alone, which [`Config::resolve_secrets`] reports.
    env_secrets_missing: Vec<(String, ConfigError)>,
}

impl Config {
    /// How `server`'s catalog is held to `mcp.lock`: its `pins` in local.toml, else `pins`
    /// under `[mcp]` in config.toml, else `enforce` when the project has a lock and `off`
    /// when it has none.
    pub fn pin_policy(&self, server: &str) -> crate::pin::PinPolicy {
        self.local
            .overrides(server)
            .pins
            .or(self.daemon.pins)
            .unwrap_or(if self.lock.is_some() {
                crate::pin::PinPolicy::Enforce
            } else {
                crate::pin::PinPolicy::Off
            })
    }

    /// What the lock says of server `key`, to judge its tools by ([`crate::pin`]).
    pub fn server_pins<'a>(&'a self, key: &'a str) -> crate::pin::ServerPins<'a> {
        crate::pin::ServerPins {
            policy: self.pin_policy(key),
            lock: self.lock.as_deref(),
            server: key,
        }
    }

    /// The per-call timeout of `server`: its `timeout_ms`, else the daemon default.
    pub fn timeout_for(&self, server: &str) -> Duration {
        self.local
            .overrides(server)
            .timeout
            .unwrap_or(self.daemon.default_timeout)
    }

    /// Resolves the `auth` `secret_ref` of every server that is not disabled, and checks that
    /// `local.toml` held each `{ secret_ref }` of their `env` (those values are filled in when
    /// the configuration loads, [`EnvValue::Secret`]).
    ///
    /// A missing secret, of either kind, is an error naming the server and the ref (an `env`
    /// one also its variable and the line it is written on), as ADR-0043 §4 says the session
    /// must refuse to start; a session that starts some servers only
    /// ([`SessionOptions::only_servers`](crate::SessionOptions::only_servers)) resolves theirs
    /// only, so one server's missing secret stops that server alone.
    pub fn resolve_secrets(&self) -> Result<BTreeMap<String, Secret>, ConfigErrors> {
        let mut out = BTreeMap::new();
        let mut errors = Vec::new();
        let local_file = self
            .local_file
            .clone()
            .unwrap_or_else(|| self.project_root.join("local.toml"));
        for s in &self.project.servers {
            if self.local.overrides(&s.key).disabled {
                continue;
            }
            errors.extend(
                self.env_secrets_missing
                    .iter()
                    .filter(|(server, _)| *server == s.key)
                    .map(|(_, e)| e.clone()),
            );
            let Some(auth) = &s.auth else { continue };
            let key_ref = auth.oauth.as_ref().and_then(|o| o.private_key_ref.as_ref());
            let refs = [
                (auth.secret_ref.as_ref(), "secret_ref"),
                (key_ref, "oauth private_key_ref"),
            ];
            for (r, what) in refs {
                let Some(r) = r else { continue };
                match self.local.secret(r) {
                    Some(secret) if what == "secret_ref" => {
                        out.insert(s.key.clone(), secret.clone());
                    }
                    Some(_) => {}
                    None => {
                        let (table, leaf) = r.table_and_key();
                        let key = if what == "secret_ref" {
                            "secret_ref"
                        } else {
                            "private_key_ref"
                        };
                        errors.push(ConfigError::new(
                            local_file.clone(),
                            format!("secrets.{r}"),
                            None,
                            format!(
                                "server `{}` needs secret `{r}` (mcp.{}.auth.{key}), which is not set: add `{leaf} = \"…\"` under {table}",
                                s.key, s.key
                            ),
                        ));
                    }
                }
            }
        }
        match ConfigErrors::from_vec(errors) {
            Some(e) => Err(e),
            None => Ok(out),
        }
    }
}

/// Loads and validates the configuration files of `paths`.
///
/// `project.yaml` must exist; `project.local.yaml` and the default `local.toml` are read when
/// they exist; an explicit `local` or `config` path must exist. All problems come back
/// together.
pub fn load(paths: &ConfigPaths) -> Result<Config, ConfigErrors> {
    let mut errors = Vec::new();
    let dir = &paths.project_dir;
    let project_file = dir.join("project.yaml");
    let project = read_file(&project_file, &mut errors);
    let overlay_file = dir.join("project.local.yaml");
    let overlay = if overlay_file.exists() {
        read_file(&overlay_file, &mut errors).map(|t| (overlay_file, t))
    } else {
        None
    };
    let local = match &paths.local {
        Some(p) => read_file(p, &mut errors).map(|t| (p.clone(), t)),
        None => {
            let p = dir.join("local.toml");
            if p.exists() {
                read_file(&p, &mut errors).map(|t| (p, t))
            } else {
                None
            }
        }
    };
    let config = match &paths.config {
        Some(p) => read_file(p, &mut errors).map(|t| (p.clone(), t)),
        None => None,
    };
    let lock_file = dir.join(crate::pin::LOCK_FILE);
    let lock = match std::fs::symlink_metadata(&lock_file) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        _ => read_lock(&lock_file, &mut errors).map(|t| (lock_file, t)),
    };
    if let Some(errs) = ConfigErrors::from_vec(errors) {
        return Err(errs);
    }
    let Some(project) = project else {
        // read_file records an error whenever it returns None; this is defensive.
        return Err(ConfigError::new(&project_file, "", None, "cannot read").into());
    };
    Sources {
        project_root: dir.clone(),
        project: (project_file, project),
        overlay,
        local,
        config,
        lock,
    }
    .load()
}

/// Reads `mcp.lock` (larger than a configuration file may be, up to
/// [`MAX_LOCK_BYTES`](crate::pin::MAX_LOCK_BYTES)).
fn read_lock(path: &Path, errors: &mut Vec<ConfigError>) -> Option<String> {
    read_bounded(path, crate::pin::MAX_LOCK_BYTES, "a lock file is", errors)
}

/// Reads a configuration file (at most [`MAX_FILE_BYTES`]).
fn read_file(path: &Path, errors: &mut Vec<ConfigError>) -> Option<String> {
    read_bounded(path, MAX_FILE_BYTES, "configuration files are", errors)
}

/// The regular file at `path` as UTF-8, at most `max` bytes ([`crate::file::read`]: a FIFO,
/// a device or a directory is refused without blocking); each failure one error. `limited`
/// names what the bound is for in the message (`configuration files are`).
fn read_bounded(
    path: &Path,
    max: u64,
    limited: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<String> {
    let bytes = match crate::file::read(path, max) {
        Ok(bytes) => bytes,
        Err(crate::file::ReadError::TooLarge { size, max }) => {
            let msg = match size {
                Some(size) => format!("is {size} bytes; {limited} limited to {max} bytes"),
                None => format!("grew while it was read; {limited} limited to {max} bytes"),
            };
            errors.push(ConfigError::new(path, "", None, msg));
            return None;
        }
        Err(e) => {
            errors.push(ConfigError::new(path, "", None, e.to_string()));
            return None;
        }
    };
    match String::from_utf8(bytes) {
        Ok(s) => Some(s),
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let loc = toml_doc::location(&String::from_utf8_lossy(&e.as_bytes()[..at]), at);
            errors.push(ConfigError::new(path, "", Some(loc), "is not valid UTF-8"));
            None
        }
    }
}

/// Resolves a stdio server's `cwd` against the project root, following symlinks, and checks
/// the result is still inside the project.
pub fn resolve_cwd(project_root: &Path, cwd: &Path) -> Result<PathBuf, String> {
    resolve_inside(project_root, cwd, "cwd")
}

/// Resolves the directory `rel` (the setting `key`: `cwd`, `roots`) against the project root,
/// following symlinks, and checks the result is an existing directory still inside the
/// project.
pub fn resolve_inside(project_root: &Path, rel: &Path, key: &str) -> Result<PathBuf, String> {
    let root = project_root
        .canonicalize()
        .map_err(|e| format!("project root {}: {e}", project_root.display()))?;
    let joined = root.join(rel);
    let real = joined
        .canonicalize()
        .map_err(|e| format!("{key} {}: {e}", joined.display()))?;
    if !real.starts_with(&root) {
        return Err(format!(
            "{key} `{}` resolves to {}, outside the project root {}",
            rel.display(),
            real.display(),
            root.display()
        ));
    }
    if !real.is_dir() {
        return Err(format!("{key} `{}` is not a directory", rel.display()));
    }
    Ok(real)
}

#[cfg(test)]
mod pin_tests;
