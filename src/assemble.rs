//! One place maps the configuration to a server's components: its transport (with its
//! secret or token source), its client's options and its stack's settings. The components
//! themselves know nothing of the configuration files: the transports take typed configs
//! ([`StdioConfig`], `SseConfig`, `StreamableHttpConfig`), the client [`ClientOptions`], the
//! stack [`StackSettings`]. [`Session`](crate::Session) builds every server through here; an
//! embedder that assembles its own can too.
//!
//! # Example
//! ```
//! use kaged_mcp::assemble;
//! use kaged_mcp::config::Sources;
//!
//! let config = Sources::new("mcp:\n  local:\n    transport: stdio\n    command: [\"my-server\"]\n")
//!     .local("[mcp.local]\ntimeout_ms = 5000\n")
//!     .load()?;
//! let server = &config.project.servers[0];
//! let transport = assemble::transport(&config, server, None, None)?;
//! assert_eq!(transport.describe(), "stdio: my-server");
//! assert_eq!(assemble::client_options(&config, server).request_timeout.as_millis(), 5000);
//! assert_eq!(assemble::stack_settings(&config, "local").timeout.as_millis(), 5000);
//! # Ok::<_, Box<dyn std::error::Error>>(())
//! ```

use std::sync::Arc;

use kaged_mcp_layers::auth::TokenSource;

use crate::client::{ClientOptions, EraMemory};
use crate::config::{self, Config, McpServerConfig, Secret, TransportConfig};
use crate::stack::StackSettings;
use crate::transport::{StdioConfig, StdioTransport, Transport};
#[cfg(feature = "http")]
use crate::{
    config::{AuthConfig, AuthKind, HttpServerConfig},
    transport::http::{InvalidHttpConfig, InvalidKind},
    transport::sse::{SseConfig, SseTransport},
    transport::streamable_http::{StreamableHttpConfig, StreamableHttpTransport},
};
#[cfg(feature = "http")]
use kaged_mcp_layers::auth::{AuthHeader, StaticToken};

/// The transport of the configured server `server`, with the secret its `auth` block refers to
/// (resolved from `local.toml` by [`Config::resolve_secrets`]) and, for `auth: {type: oauth}`
/// or an embedder's credential store, the token source that gives its header (`source` wins
/// over `secret`).
///
/// # Errors
/// [`InvalidTransport`] naming the server: a `cwd` that escapes the project or does not
/// exist, an `env` secret that was not resolved (the server is disabled in `local.toml`), an
/// `auth` block whose secret was not resolved or cannot make a header, an OAuth
/// server without a token source, a URL or header the transport refuses, an HTTP server in a
/// build without the `http` feature.
pub fn transport(
    config: &Config,
    server: &McpServerConfig,
    secret: Option<&Secret>,
    source: Option<Arc<dyn TokenSource>>,
) -> Result<Box<dyn Transport>, InvalidTransport> {
    let invalid = |message: String| InvalidTransport {
        server: server.key.clone(),
        message,
    };
    let auth = match (&server.auth, secret, &source) {
        (_, _, Some(_)) | (None, _, _) => None,
        (Some(a), _, None) if a.kind == config::AuthKind::OAuth => {
            return Err(invalid(format!(
                "server `{}`: `auth: {{type: oauth}}` needs a token source",
                server.key
            )))
        }
        (Some(a), Some(s), None) => Some((a, s)),
        (Some(a), None, None) => {
            return Err(invalid(format!(
                "server `{}`: its secret `{}` is not resolved",
                server.key,
                a.secret_ref
                    .as_ref()
                    .map_or_else(|| "(none)".to_owned(), ToString::to_string)
            )))
        }
    };
    match &server.transport {
        TransportConfig::Stdio(s) => {
            let cwd = match &s.cwd {
                Some(rel) => config::resolve_cwd(&config.project_root, rel)
                    .map_err(|e| invalid(format!("server `{}`: {e}", server.key)))?,
                None => config.project_root.canonicalize().map_err(|e| {
                    invalid(format!(
                        "server `{}`: project root {}: {e}",
                        server.key,
                        config.project_root.display()
                    ))
                })?,
            };
            let mut env = Vec::with_capacity(s.env.len());
            for (name, value) in &s.env {
                let Some(v) = value.expose() else {
                    return Err(invalid(format!(
                        "server `{}`: the secret `{}` of its environment variable `{name}` is not resolved",
                        server.key,
                        value.secret_ref().map_or("", |r| r.as_str())
                    )));
                };
                env.push((name.clone(), v.to_owned()));
            }
            let stdio = StdioConfig::from_command(&s.command)
                .ok_or_else(|| invalid(format!("server `{}`: empty command", server.key)))?
                .cwd(cwd)
                .env(env)
                .frame_limit(config.daemon.frame_limit_bytes);
            Ok(Box::new(StdioTransport::new(stdio)))
        }
        #[cfg(not(feature = "http"))]
        TransportConfig::Sse(_) | TransportConfig::StreamableHttp(_) => {
            let _ = (auth, source);
            Err(invalid(format!(
                "server `{}`: transport `{}` needs kaged-mcp built with its `http` feature",
                server.key,
                server.transport.name()
            )))
        }
        #[cfg(feature = "http")]
        TransportConfig::Sse(http) => {
            let mut sse =
                sse_config(&server.key, http, auth).map_err(|e| invalid(e.to_string()))?;
            if let Some(source) = source {
                sse = sse.token_source(source);
            }
            SseTransport::checked(&server.key, sse)
                .map(|t| Box::new(t) as Box<dyn Transport>)
                .map_err(|e| invalid(e.to_string()))
        }
        #[cfg(feature = "http")]
        TransportConfig::StreamableHttp(http) => {
            let mut cfg = streamable_http_config(&server.key, http, auth)
                .map_err(|e| invalid(e.to_string()))?;
            if let Some(source) = source {
                cfg = cfg.token_source(source);
            }
            StreamableHttpTransport::checked(&server.key, cfg)
                .map(|t| Box::new(t) as Box<dyn Transport>)
                .map_err(|e| invalid(e.to_string()))
        }
    }
}

/// A configured server whose transport cannot be built: see [`transport`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct InvalidTransport {
    server: String,
    message: String,
}

impl InvalidTransport {
    /// The server's key.
    pub fn server(&self) -> &str {
        &self.server
    }
}

/// The legacy SSE transport of the `mcp.<server>` entry `http`, with its `auth` block and the
/// secret it refers to (resolved by the caller from `local.toml`); errors name `server`.
///
/// # Errors
/// [`InvalidHttpConfig`] when the secret cannot make a header (empty, a line break, a control
/// byte), or the URL or a header is refused. The error names the server and never holds the
/// secret.
#[cfg(feature = "http")]
pub fn sse(
    server: &str,
    http: &HttpServerConfig,
    auth: Option<(&AuthConfig, &Secret)>,
) -> Result<SseTransport, InvalidHttpConfig> {
    SseTransport::checked(server, sse_config(server, http, auth)?)
}

/// The Streamable HTTP transport of the `mcp.<server>` entry `http`: as [`sse`].
///
/// # Errors
/// As [`sse`].
#[cfg(feature = "http")]
pub fn streamable_http(
    server: &str,
    http: &HttpServerConfig,
    auth: Option<(&AuthConfig, &Secret)>,
) -> Result<StreamableHttpTransport, InvalidHttpConfig> {
    StreamableHttpTransport::checked(server, streamable_http_config(server, http, auth)?)
}

/// The static parts of an HTTP server's configuration: its headers, its auth header's token
/// source and the reference of its secret (for refusal messages).
#[cfg(feature = "http")]
struct HttpParts {
    headers: Vec<(http::HeaderName, http::HeaderValue)>,
    auth: Option<Arc<dyn TokenSource>>,
    secret_ref: Option<String>,
}

#[cfg(feature = "http")]
fn http_parts(
    server: &str,
    http: &HttpServerConfig,
    auth: Option<(&AuthConfig, &Secret)>,
) -> Result<HttpParts, InvalidHttpConfig> {
    let mut parts = HttpParts {
        headers: http.headers.clone(),
        auth: None,
        secret_ref: None,
    };
    if let Some((auth, secret)) = auth {
        parts.auth = Some(static_token(server, auth, secret)?);
        parts.secret_ref = auth.secret_ref.as_ref().map(ToString::to_string);
    }
    Ok(parts)
}

#[cfg(feature = "http")]
fn sse_config(
    server: &str,
    http: &HttpServerConfig,
    auth: Option<(&AuthConfig, &Secret)>,
) -> Result<SseConfig, InvalidHttpConfig> {
    let parts = http_parts(server, http, auth)?;
    let mut config = SseConfig::new(http.url.clone());
    config.headers = parts.headers;
    config.auth = parts.auth;
    config.secret_ref = parts.secret_ref;
    Ok(config)
}

#[cfg(feature = "http")]
fn streamable_http_config(
    server: &str,
    http: &HttpServerConfig,
    auth: Option<(&AuthConfig, &Secret)>,
) -> Result<StreamableHttpConfig, InvalidHttpConfig> {
    let parts = http_parts(server, http, auth)?;
    let mut config = StreamableHttpConfig::new(http.url.clone());
    config.headers = parts.headers;
    config.auth = parts.auth;
    config.secret_ref = parts.secret_ref;
    Ok(config)
}

/// The token source of a server's static `auth` block (`bearer` or `header`) with its resolved
/// secret.
#[cfg(feature = "http")]
fn static_token(
    server: &str,
    auth: &AuthConfig,
    secret: &Secret,
) -> Result<Arc<dyn TokenSource>, InvalidHttpConfig> {
    let header = match auth.kind {
        AuthKind::Bearer => AuthHeader::bearer(secret.expose()),
        AuthKind::Header => AuthHeader::header(auth.header_name.as_str(), secret.expose()),
        AuthKind::OAuth => return Err(InvalidHttpConfig::new(server, InvalidKind::NoTokenSource)),
    }
    .map_err(|e| InvalidHttpConfig::new(server, InvalidKind::Auth(e)))?;
    Ok(Arc::new(StaticToken::new(header)))
}

/// The options of the client of `server`: its frame limit, its era and probe timeout from
/// `local.toml`, every request it sends on its own bounded by the server's call timeout, a
/// call allowed to wait that long for a restart, and its bound on requests in flight kept
/// above the stack's limit (with room for discovery and the listen stream).
pub fn client_options(config: &Config, server: &McpServerConfig) -> ClientOptions {
    let timeout = config.timeout_for(&server.key);
    let overrides = config.local.overrides(&server.key);
    let mut options = ClientOptions::default()
        .frame_limit(config.daemon.frame_limit_bytes)
        .wait_for_restart(timeout)
        .request_timeout(timeout)
        .era(overrides.era)
        .tasks(overrides.tasks)
        // A task the client asks for outlives the longest call: the stack's progress cap, or
        // the call timeout when that is longer (the stack's rule too).
        .task_ttl(config.daemon.progress_cap.max(timeout));
    options.max_in_flight = options
        .max_in_flight
        .max(config.daemon.max_in_flight.saturating_add(64));
    if let Some(probe_timeout) = overrides.probe_timeout {
        options.probe_timeout = probe_timeout;
    }
    options.log_level = overrides.log_level;
    options
}

/// The [`EraMemory`] of `server` in `dir`: a file named for a digest of what identifies the
/// server as configured, so a server configured differently is probed afresh (see
/// [`era_memory`](crate::client::era_memory)).
///
/// For a stdio server: its command and arguments, its working directory (against the project
/// root) and the names of its environment variables; for an HTTP one: its transport and its URL
/// without credentials, query values or fragment (the names of its query parameters), and the
/// names of its headers. Never a secret's value, nor its digest: an `env` value or a header
/// value may be one, and a digest of a short secret can be guessed back.
///
/// # Example
/// ```
/// use kaged_mcp::assemble;
/// use kaged_mcp::config::Sources;
///
/// let yaml = "mcp:\n  one:\n    transport: stdio\n    command: [server, --one]\n  two:\n    transport: stdio\n    command: [server, --two]\n";
/// let config = Sources::new(yaml).load()?;
/// let [one, two] = &config.project.servers[..] else { unreachable!() };
/// let one = assemble::era_memory(&config, one, "/state/eras");
/// let two = assemble::era_memory(&config, two, "/state/eras");
/// assert!(one.path().starts_with("/state/eras"));
/// assert_ne!(one.path(), two.path(), "another command, another server");
/// # Ok::<_, Box<dyn std::error::Error>>(())
/// ```
pub fn era_memory(
    config: &Config,
    server: &McpServerConfig,
    dir: impl AsRef<std::path::Path>,
) -> EraMemory {
    use sha2::{Digest, Sha256};
    let mut digest = Sha256::new();
    // Each part length-prefixed, so no two configurations write the same bytes.
    let mut part = |bytes: &[u8]| {
        digest.update((bytes.len() as u64).to_le_bytes());
        digest.update(bytes);
    };
    part(server.transport.name().as_bytes());
    match &server.transport {
        TransportConfig::Stdio(s) => {
            let root = config
                .project_root
                .canonicalize()
                .unwrap_or_else(|_| config.project_root.clone());
            let cwd = s.cwd.as_ref().map_or(root.clone(), |rel| root.join(rel));
            part(cwd.as_os_str().as_encoded_bytes());
            for word in &s.command {
                part(word.as_bytes());
            }
            part(b"env");
            for name in s.env.keys() {
                part(name.as_bytes());
            }
        }
        TransportConfig::Sse(h) | TransportConfig::StreamableHttp(h) => {
            let url = &h.url;
            part(url.scheme().as_bytes());
            part(url.host_str().unwrap_or_default().as_bytes());
            part(
                &url.port_or_known_default()
                    .unwrap_or_default()
                    .to_le_bytes(),
            );
            part(url.path().as_bytes());
            let mut names: Vec<_> = url.query_pairs().map(|(name, _)| name).collect();
            names.sort();
            part(b"query");
            for name in &names {
                part(name.as_bytes());
            }
            let mut headers: Vec<_> = h.headers.iter().map(|(name, _)| name.as_str()).collect();
            headers.sort_unstable();
            part(b"headers");
            for name in headers {
                part(name.as_bytes());
            }
        }
    }
    let hex: String = digest.finalize()[..16]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    EraMemory::new(dir.as_ref().join(hex))
}

/// The roots of `server` (`roots:` in `project.yaml`), resolved against the project root with
/// symlinks followed: `None` when it declares none.
///
/// # Errors
/// [`InvalidTransport`] naming the server when a root does not exist, is not a directory, or
/// resolves outside the project (a symlink out of it).
pub fn roots(
    config: &Config,
    server: &McpServerConfig,
) -> Result<Option<Vec<crate::client::Root>>, InvalidTransport> {
    let Some(roots) = &server.roots else {
        return Ok(None);
    };
    roots
        .iter()
        .map(|rel| {
            config::resolve_inside(&config.project_root, rel, "roots")
                .map(|dir| crate::client::Root::for_dir(&dir, Some(rel.display().to_string())))
                .map_err(|message| InvalidTransport {
                    server: server.key.clone(),
                    message: format!("server `{}`: {message}", server.key),
                })
        })
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

/// The settings of `server`'s stack: the result cap, its call timeout (`timeout_ms`, else
/// `default_timeout_ms`), the total cap of a call that reports progress (`progress_cap_ms`),
/// the limit on its calls running at once and what its validation layer checks (`validate`).
pub fn stack_settings(config: &Config, server: &str) -> StackSettings {
    StackSettings::new(server)
        .result_max_bytes(config.daemon.result_max_bytes)
        .timeout(config.timeout_for(server))
        .progress_cap(config.daemon.progress_cap)
        .max_in_flight(config.daemon.max_in_flight)
        .validate(config.local.overrides(server).validate)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Sources;

    fn built(project: &str) -> Result<Box<dyn Transport>, InvalidTransport> {
        let config = Sources::new(project.to_owned()).load().unwrap();
        transport(&config, &config.project.servers[0], None, None)
    }

    /// The era memory's file of the first server of `project` (with `local` as local.toml).
    fn era_file(project: &str, local: &str) -> std::path::PathBuf {
        let config = Sources::new(project.to_owned())
            .local(local.to_owned())
            .load()
            .unwrap();
        era_memory(&config, &config.project.servers[0], "/s")
            .path()
            .to_owned()
    }

    #[test]
    fn the_era_memory_is_keyed_by_the_server_as_configured_never_by_a_secret() {
        let stdio = |command: &str, env: &str| {
            format!("mcp:\n  srv:\n    transport: stdio\n    command: {command}\n    env: {env}\n")
        };
        let secret = |value: &str| format!("[secrets.k]\nt = \"{value}\"\n");
        let base = era_file(
            &stdio("[srv, -x]", "{T: {secret_ref: k.t}, P: one}"),
            &secret("s1"),
        );
        assert_eq!(base.parent().unwrap(), std::path::Path::new("/s"));
        assert_eq!(base.file_name().unwrap().len(), 32, "{}", base.display());
        // Values are not identity: a new secret or plain value is the same server.
        for same in [
            era_file(
                &stdio("[srv, -x]", "{T: {secret_ref: k.t}, P: one}"),
                &secret("s2"),
            ),
            era_file(
                &stdio("[srv, -x]", "{P: two, T: {secret_ref: k.t}}"),
                &secret("s1"),
            ),
        ] {
            assert_eq!(same, base);
        }
        // The command, its arguments, its working directory and its variables' names are.
        for other in [
            era_file(
                &stdio("[srv, -y]", "{T: {secret_ref: k.t}, P: one}"),
                &secret("s1"),
            ),
            era_file(
                &stdio("[srv2, -x]", "{T: {secret_ref: k.t}, P: one}"),
                &secret("s1"),
            ),
            era_file(&stdio("[srv, -x]", "{T: {secret_ref: k.t}}"), &secret("s1")),
            era_file(
                &format!(
                    "{}    cwd: sub\n",
                    stdio("[srv, -x]", "{T: {secret_ref: k.t}, P: one}")
                ),
                &secret("s1"),
            ),
        ] {
            assert_ne!(other, base);
        }
        let http = |url: &str, headers: &str| {
            era_file(
                &format!("mcp:\n  srv:\n    transport: streamable-http\n    url: {url}\n    headers: {headers}\n"),
                "",
            )
        };
        let base = http("https://h/mcp?key=1", "{X-Key: v1}");
        // Credentials, query values, the fragment and header values are not identity.
        assert_eq!(http("https://u:p@h/mcp?key=2#f", "{X-Key: v2}"), base);
        assert_eq!(http("https://h:443/mcp?key=3", "{x-key: v3}"), base);
        for other in [
            http("https://h/mcp?other=1", "{X-Key: v1}"),
            http("https://h/mcp?key=1", "{X-Other: v1}"),
            http("https://h:8443/mcp?key=1", "{X-Key: v1}"),
            http("http://h/mcp?key=1", "{X-Key: v1}"),
            http("https://h/mcp2?key=1", "{X-Key: v1}"),
        ] {
            assert_ne!(other, base);
        }
    }

    #[test]
    fn a_stdio_server_is_built_with_any_features() {
        let t = built("mcp:\n  local:\n    transport: stdio\n    command: [\"true\"]\n").unwrap();
        assert!(t.describe().starts_with("stdio:"), "{}", t.describe());
    }

    /// Without the `http` feature an HTTP server's transport fails to build, naming the
    /// server and the feature (run by CI's `cargo test --no-default-features --lib`).
    #[cfg(not(feature = "http"))]
    #[test]
    fn without_the_http_feature_an_http_server_names_the_feature() {
        for transport in ["sse", "streamable-http"] {
            let project =
                format!("mcp:\n  remote:\n    transport: {transport}\n    url: http://h/mcp\n");
            let Err(err) = built(&project) else {
                panic!("{transport}: built without the http feature")
            };
            assert_eq!(err.server(), "remote");
            assert_eq!(
                err.to_string(),
                format!(
                    "server `remote`: transport `{transport}` needs kaged-mcp built with its \
                     `http` feature"
                )
            );
        }
    }

    #[cfg(feature = "http")]
    #[test]
    fn http_parts_build_bearer_and_custom_headers_and_debug_hides_the_secret() {
        use crate::config::SecretRef;
        use http::header::{self, HeaderValue};
        const SECRET: &str = "tok-very-secret";
        let sse = HttpServerConfig {
            url: "https://h/sse".parse().unwrap(),
            headers: vec![("x-flag".parse().unwrap(), HeaderValue::from_static("1"))],
        };
        let secret = Secret::new(SECRET);
        let bearer = AuthConfig {
            kind: AuthKind::Bearer,
            header_name: header::AUTHORIZATION,
            secret_ref: Some(SecretRef::parse("api.key").unwrap()),
            oauth: None,
        };
        let config = sse_config("gh", &sse, Some((&bearer, &secret))).unwrap();
        assert_eq!(
            config.auth.as_ref().unwrap().header_name(),
            header::AUTHORIZATION
        );
        assert_eq!(config.headers.len(), 1);
        assert_eq!(config.secret_ref.as_deref(), Some("api.key"));
        let text = format!("{config:?}");
        assert!(!text.contains(SECRET), "{text}");
        assert!(
            text.contains("authorization") && text.contains("x-flag"),
            "{text}"
        );

        let custom = AuthConfig {
            kind: AuthKind::Header,
            header_name: "x-api-key".parse().unwrap(),
            ..bearer.clone()
        };
        let config = streamable_http_config("gh", &sse, Some((&custom, &secret))).unwrap();
        assert_eq!(config.auth.unwrap().header_name().as_str(), "x-api-key");

        let bad = Secret::new(format!("{SECRET}\n"));
        let err = sse_config("gh", &sse, Some((&bearer, &bad))).unwrap_err();
        assert!(matches!(err.kind(), InvalidKind::Auth(_)));
        assert!(err.to_string().starts_with("server `gh`: "), "{err}");
        assert!(!err.to_string().contains(SECRET), "{err}");
    }
}
