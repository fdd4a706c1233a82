//! OAuth 2.1 for remote MCP servers (`auth: {type: oauth}`), as the MCP authorization spec
//! (2025-11-25) says: discovery from the server's 401 (protected resource metadata, RFC 9728;
//! authorization server metadata, RFC 8414 and OpenID discovery, with the 2025-03-26
//! fallbacks), client registration in the spec's order (pre-registered, client ID metadata
//! document, dynamic registration), PKCE (S256), the `resource` parameter (RFC 8707), refresh,
//! step-up on 403 `insufficient_scope`, and the client credentials grant.
//!
//! | module | what lives there |
//! |---|---|
//! | [`source`] | [`OAuthSource`], the [`TokenSource`](kaged_mcp_layers::auth::TokenSource) the auth layer of an OAuth server uses |
//! | `discovery` | resource and authorization server metadata |
//! | `grant` | registration, the authorization URL, the token endpoint (over the `oauth2` crate) |
//! | `loopback` | the `127.0.0.1` redirect listener of a login |
//! | `store` | the token files (`0600`, atomic, outside the project) |
//! | `jwt` | ES256 client assertions (`private_key_jwt`) |
//! | `dpop` | DPoP (RFC 9449): the per-server key, proofs and nonces |
//! | [`workload`] | the JWT-bearer grant of workload identity federation (SEP-1933) |
//! | `http` | the HTTP client of all of it (no redirects followed, bounded answers) |
//!
//! A daemon never waits for a browser: without a usable token a call fails at once with an
//! error naming `kaged-mcp auth login <server>`. A login needs an [`Authorizer`]: it shows the
//! operator the authorization page ([`BrowserAuthorizer`]) or, in tests against an
//! authorization server that approves by itself, fetches it ([`FetchAuthorizer`]).

mod discovery;
#[doc(hidden)]
pub mod documents;
#[doc(hidden)]
pub mod dpop;
mod error;
mod grant;
mod http;
mod jwt;
mod loopback;
pub mod source;
mod store;
mod summary;
#[doc(hidden)]
pub mod workload;

use std::fmt;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use tower::BoxError;
use url::Url;

pub use self::error::{NoStateDir, SetupError};
pub use self::source::{LoginSummary, OAuthSource, StoredSummary, MAX_AUTHORIZATIONS};
pub(crate) use self::store::TokenStore;

/// The future an [`Authorizer`] returns.
pub type OpenFuture<'a> = Pin<Box<dyn Future<Output = Result<(), BoxError>> + Send + 'a>>;

/// Shows an operator the authorization page of a login. The authorization server then sends
/// the browser to the login's loopback listener, which the source awaits.
pub trait Authorizer: fmt::Debug + Send + Sync + 'static {
    /// Shows `url` (the authorization request; it holds no secret but is single use). May
    /// return before the operator is done.
    fn open<'a>(&'a self, url: &'a Url) -> OpenFuture<'a>;

    /// How long to wait for the redirect once [`open`](Self::open) returned.
    fn timeout(&self) -> Duration {
        Duration::from_secs(300)
    }
}

/// Prints the authorization URL on standard error and opens it with `xdg-open` (or `open`)
/// where one exists; waits five minutes for the operator.
#[derive(Debug, Clone, Copy, Default)]
pub struct BrowserAuthorizer;

impl Authorizer for BrowserAuthorizer {
    fn open<'a>(&'a self, url: &'a Url) -> OpenFuture<'a> {
        Box::pin(async move {
            eprintln!("Open this page to authorize kaged-mcp:\n\n  {url}\n");
            for opener in ["xdg-open", "open"] {
                let spawned = tokio::process::Command::new(opener)
                    .arg(url.as_str())
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::null())
                    .stderr(std::process::Stdio::null())
                    .spawn();
                if spawned.is_ok() {
                    break;
                }
            }
            eprintln!("Waiting for the redirect to the loopback listener…");
            Ok(())
        })
    }
}

/// Plays the browser for an authorization server that approves without a user (test
/// servers, the conformance suite): GETs the authorization URL without following it, then GETs
/// the `Location` it redirects to, which must be the loopback listener (`127.0.0.1` or
/// `localhost`). Never use it against a real authorization server.
#[derive(Debug, Clone, Copy, Default)]
pub struct FetchAuthorizer;

impl Authorizer for FetchAuthorizer {
    fn open<'a>(&'a self, url: &'a Url) -> OpenFuture<'a> {
        Box::pin(async move {
            let http = self::http::OAuthHttp::new();
            let get = |u: &Url| {
                ::http::Request::get(u.as_str())
                    .body(Full::new(Bytes::new()))
                    .map_err(BoxError::from)
            };
            let response = http.send(get(url)?).await?;
            let location = response
                .headers()
                .get(::http::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .ok_or_else(|| {
                    format!(
                        "the authorization page answered {} without a redirect",
                        response.status()
                    )
                })?;
            let target = url.join(location)?;
            if !matches!(target.host_str(), Some("127.0.0.1" | "localhost")) {
                return Err(
                    "the authorization server redirected elsewhere than the loopback listener"
                        .into(),
                );
            }
            http.send(get(&target)?).await?;
            Ok(())
        })
    }

    fn timeout(&self) -> Duration {
        Duration::from_secs(10)
    }
}

/// The directory token files go to: `config`'s when set, else the operator's state directory.
///
/// # Errors
/// [`NoStateDir`]: no directory can be named (no absolute `XDG_STATE_HOME` nor `HOME`).
pub fn token_dir(configured: Option<&PathBuf>) -> Result<PathBuf, NoStateDir> {
    match configured {
        Some(d) => Ok(d.clone()),
        None => TokenStore::default_dir().map_err(|_| NoStateDir),
    }
}
