//! [`from_config`]: the transport of a configured server, with its secret or token source.

use std::sync::Arc;

use kaged_mcp_layers::auth::TokenSource;

#[cfg(feature = "http")]
use super::sse::{self, SseTransport};
#[cfg(feature = "http")]
use super::streamable_http::{self, StreamableHttpTransport};
use super::{StdioConfig, StdioTransport, Transport};
use crate::config::{self, Config, McpServerConfig, Secret, TransportConfig};

/// The transport of the configured server `server`, with the secret its `auth` block refers to
/// (resolved from `local.toml` by [`Config::resolve_secrets`]) and, for `auth: {type: oauth}`
/// or an embedder's credential store, the token source that gives its header (`source` wins
/// over `secret`).
///
/// # Errors
/// [`InvalidTransport`] naming the server: a `cwd` that escapes the project or does not
/// exist, an `auth` block whose secret was not resolved or cannot make a header, an OAuth
/// server without a token source, a URL or header the transport refuses.
pub fn from_config(
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
            let stdio = StdioConfig::from_command(&s.command)
                .ok_or_else(|| invalid(format!("server `{}`: empty command", server.key)))?
                .cwd(cwd)
                .env(s.env.iter().map(|(k, v)| (k.clone(), v.clone())))
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
            let mut sse = sse::SseConfig::from_config(&server.key, http, auth)
                .map_err(|e| invalid(e.to_string()))?;
            if let Some(source) = source {
                sse = sse.token_source(source);
            }
            SseTransport::checked(&server.key, sse)
                .map(|t| Box::new(t) as Box<dyn Transport>)
                .map_err(|e| invalid(e.to_string()))
        }
        #[cfg(feature = "http")]
        TransportConfig::StreamableHttp(http) => {
            let mut cfg =
                streamable_http::StreamableHttpConfig::from_config(&server.key, http, auth)
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

/// A configured server whose transport cannot be built: see [`from_config`].
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
