//! [`OAuthSource`]: the token source of an `auth: {type: oauth}` server.
//!
//! It gives the auth layer the stored access token, refreshing it when it is about to expire
//! or the server refused it (one refresh at a time per server: calls that arrive meanwhile wait
//! and get its result). On a 401 it discovers the authorization server and gets a token: the
//! client credentials grant when configured, else the authorization-code flow, but only when
//! an [`Authorizer`] is plugged in (`kaged-mcp auth login`); a daemon never waits for a browser
//! and fails the call at once with a [`TokenError::login_required`] naming the command; a 401
//! of a token it has just renewed goes back to the caller. On a 403 `insufficient_scope` it asks
//! again with the union of the scopes held and asked for (a step-up), never twice for the same
//! set and at most `MAX_AUTHORIZATIONS - 1` times in the life of the source. A token that
//! expires is refreshed or, without a refresh token, obtained again with the scopes it held.

use std::collections::BTreeSet;
use std::fmt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use kaged_mcp_layers::auth::{AuthHeader, BearerChallenge, TokenError};
use tokio::sync::Mutex;
use url::Url;

use super::discovery::{discover, AsMetadata, Discovered};
use super::dpop::Dpop;
use super::error::SetupError;
use super::grant::{self, Client, GrantError, Granted};
use super::http::OAuthHttp;
use super::loopback::Callback;
use super::store::{StoreKey, StoredTokens, Token, TokenStore};
pub use super::summary::{LoginSummary, StoredSummary};
use super::Authorizer;
use crate::config::{ClientAuthMethod, Config, McpServerConfig, OAuthConfig, OAuthGrant, Secret};
use crate::transport::http::redacted;

/// How many authorizations a chain of step-ups reaches at most, the first included (so a source
/// steps up at most `MAX_AUTHORIZATIONS - 1` times): a server that keeps asking for scopes it
/// never accepts is given up. A token obtained again after its expiry does not count.
pub const MAX_AUTHORIZATIONS: u32 = 3;
/// A token this close to its expiry is refreshed before use.
const EXPIRY_MARGIN_SECS: u64 = 30;

/// What the source needs to know of its server.
struct Settings {
    server: String,
    url: Url,
    config: OAuthConfig,
    client_secret: Option<Secret>,
    private_key: Option<Secret>,
    /// The client's secret at the enterprise IdP (SEP-990), if configured.
    idp_secret: Option<Secret>,
}

/// The token source of one OAuth server. See the [module docs](self).
pub struct OAuthSource {
    settings: Settings,
    http: OAuthHttp,
    store: TokenStore,
    key: StoreKey,
    authorizer: Option<Arc<dyn Authorizer>>,
    needs_login: AtomicBool,
    state: Mutex<State>,
    /// The DPoP key and nonces, with `dpop: true`.
    dpop: Option<Arc<Dpop>>,
}

#[derive(Default)]
struct State {
    loaded: bool,
    tokens: Option<StoredTokens>,
    /// The `Authorization` header of `tokens`' access token, built once per token.
    header: Option<AuthHeader>,
    discovered: Option<Discovered>,
    /// The `resource_metadata` URL of the challenge `discovered` came from, if any.
    discovered_from: Option<String>,
    /// The scope sets stepped up to, in order.
    stepped_up: Vec<BTreeSet<String>>,
    /// The digest of the last JWT-bearer assertion the token endpoint refused: never sent again.
    refused_assertion: Option<[u8; 32]>,
    /// The source's DPoP state, told which header is the DPoP-bound token's.
    dpop: Option<Arc<Dpop>>,
}

impl State {
    fn set_tokens(&mut self, tokens: Option<StoredTokens>) {
        let access = tokens.as_ref().and_then(|t| {
            let a = t.access_token.as_ref()?;
            Some((a.expose(), t.token_type.as_deref() == Some("dpop")))
        });
        // A DPoP-bound token without DPoP (turned off since it was issued) is not sent at all:
        // as Bearer it would go out without its proof. A new token is asked for instead.
        self.header = access.and_then(|(a, bound)| match (bound, &self.dpop) {
            (true, Some(_)) => AuthHeader::dpop(a).ok(),
            (true, None) => None,
            (false, _) => AuthHeader::bearer(a).ok(),
        });
        if let Some(dpop) = &self.dpop {
            let bound = access.filter(|(_, b)| *b).map(|(a, _)| a);
            dpop.bind(self.header.clone().zip(bound));
        }
        self.tokens = tokens;
    }

    /// The scopes the stored token holds.
    fn held(&self) -> BTreeSet<String> {
        self.tokens
            .as_ref()
            .map(|t| t.scopes.iter().cloned().collect())
            .unwrap_or_default()
    }
}

impl fmt::Debug for OAuthSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("OAuthSource")
            .field("server", &self.settings.server)
            .field("url", &redacted(&self.settings.url))
            .field("authorizer", &self.authorizer.is_some())
            .finish_non_exhaustive()
    }
}

/// Unix seconds, as the token files keep expiries.
pub(crate) fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Where granted tokens come from: the authorization server's issuer and token endpoint, and
/// the resource (RFC 8707) they are for.
struct Origin {
    issuer: Option<String>,
    token_endpoint: Url,
    resource: Option<String>,
}

impl Origin {
    /// The tokens of a grant at the authorization server `meta`.
    fn of(meta: &AsMetadata, resource: Option<String>) -> Self {
        Self {
            issuer: Some(meta.issuer.clone()),
            token_endpoint: meta.token_endpoint.clone(),
            resource,
        }
    }
}
impl OAuthSource {
    fn new(settings: Settings, store: TokenStore, authorizer: Option<Arc<dyn Authorizer>>) -> Self {
        let client_key = settings
            .config
            .client_id
            .clone()
            .or_else(|| {
                settings
                    .config
                    .client_metadata_url
                    .as_ref()
                    .map(Url::to_string)
            })
            .unwrap_or_else(|| "dynamic".to_owned());
        let key = StoreKey::new(&settings.server, settings.url.as_str(), client_key);
        let dpop = settings
            .config
            .dpop
            .then(|| Arc::new(Dpop::new(store.clone(), key.clone())));
        let http = match &dpop {
            Some(d) => OAuthHttp::new().with_dpop(Arc::clone(d)),
            None => OAuthHttp::new(),
        };
        let state = State {
            dpop: dpop.clone(),
            ..State::default()
        };
        Self {
            settings,
            http,
            store,
            key,
            authorizer,
            needs_login: AtomicBool::new(false),
            state: Mutex::new(state),
            dpop,
        }
    }

    /// The source of the configured server `server` when its `auth` is `type: oauth`
    /// (`Ok(None)` otherwise), its token files under `token_dir` (else `config.toml`'s
    /// `oauth_token_dir`, else the operator's state directory), logging in through `authorizer`
    /// when one is given.
    ///
    /// # Errors
    /// [`SetupError`], naming the server: it is not reached over HTTP, or no token directory
    /// can be named.
    pub fn for_server(
        config: &Config,
        server: &McpServerConfig,
        token_dir: Option<&Path>,
        authorizer: Option<Arc<dyn Authorizer>>,
    ) -> Result<Option<Self>, SetupError> {
        let Some(auth) = &server.auth else {
            return Ok(None);
        };
        let Some(oauth) = &auth.oauth else {
            return Ok(None);
        };
        let Some(http) = server.transport.http() else {
            return Err(SetupError::NotHttp {
                server: server.key.clone(),
            });
        };
        let dir = match token_dir {
            Some(d) => d.to_path_buf(),
            None => super::token_dir(config.daemon.oauth_token_dir.as_ref()).map_err(|source| {
                SetupError::NoTokenDir {
                    server: server.key.clone(),
                    source,
                }
            })?,
        };
        let secret =
            |r: Option<&crate::config::SecretRef>| r.and_then(|r| config.local.secret(r)).cloned();
        let settings = Settings {
            server: server.key.clone(),
            url: http.url.clone(),
            config: oauth.clone(),
            client_secret: secret(auth.secret_ref.as_ref()),
            private_key: secret(oauth.private_key_ref.as_ref()),
            idp_secret: secret(
                oauth
                    .identity_provider
                    .as_ref()
                    .and_then(|i| i.secret_ref.as_ref()),
            ),
        };
        Ok(Some(Self::new(settings, TokenStore::new(dir), authorizer)))
    }

    /// Whether the last attempt to get a token ended in "log in first".
    pub fn needs_login(&self) -> bool {
        self.needs_login.load(Ordering::Relaxed)
    }

    /// The server's key.
    pub fn server(&self) -> &str {
        &self.settings.server
    }

    /// Logs in now: probes the server for its challenge, discovers, and authorizes (the
    /// [`Authorizer`] shows the operator the page), then stores the tokens.
    ///
    /// # Errors
    /// A [`TokenError`] saying what failed.
    pub async fn login(&self) -> Result<LoginSummary, TokenError> {
        let mut st = self.state.lock().await;
        let probe = self
            .http
            .probe(&self.settings.url)
            .await
            .map_err(|e| self.failed("the probe request", e.to_string()))?;
        let challenge = BearerChallenge::find(probe.headers());
        if probe.status() != http::StatusCode::UNAUTHORIZED && challenge.is_none() {
            return Err(self.failed(
                "login",
                format!(
                    "{} answered {} without asking for authorization",
                    redacted(&self.settings.url),
                    probe.status()
                ),
            ));
        }
        // A login replaces what is stored.
        st.loaded = true;
        st.set_tokens(None);
        let (metadata_url, scope) = answers::split(challenge);
        self.discover(&mut st, metadata_url, false).await?;
        let scopes = self.scopes(&st, scope);
        self.obtain(&mut st, scopes).await?;
        let t = st
            .tokens
            .as_ref()
            .ok_or_else(|| self.failed("login", "no token"))?;
        Ok(LoginSummary {
            scopes: t.scopes.clone(),
            expires_at: t.expires_at,
            refreshable: t.refresh_token.is_some(),
        })
    }

    fn failed(&self, what: &str, why: impl std::fmt::Display) -> TokenError {
        TokenError::failed(
            format!("server `{}`: OAuth {what}: {why}", self.settings.server),
            None,
        )
    }

    fn login_required(&self, why: &str) -> TokenError {
        self.needs_login.store(true, Ordering::Relaxed);
        TokenError::login_required(format!(
            "server `{s}` {why}: run `kaged-mcp auth login {s}`",
            s = self.settings.server
        ))
    }

    fn load(&self, st: &mut State) -> Result<(), TokenError> {
        if st.loaded {
            return Ok(());
        }
        st.loaded = true;
        let tokens = self
            .store
            .load(&self.key)
            .map_err(|e| self.failed("token file", e.to_string()))?;
        st.set_tokens(tokens);
        Ok(())
    }

    fn save(&self, st: &State) -> Result<(), TokenError> {
        if let Some(t) = &st.tokens {
            self.store
                .save(&self.key, t)
                .map_err(|e| self.failed("token file", e.to_string()))?;
        }
        Ok(())
    }

    fn forget(&self, st: &mut State) {
        st.set_tokens(None);
        if let Err(e) = self.store.remove(&self.key) {
            tracing::warn!(server = %self.settings.server, error = %e, "cannot remove a dead token file");
        }
    }

    /// The header of the stored access token when it is still good.
    fn current(st: &State) -> Option<AuthHeader> {
        let t = st.tokens.as_ref()?;
        if t.expires_at
            .is_some_and(|e| e <= now() + EXPIRY_MARGIN_SECS)
        {
            return None;
        }
        st.header.clone()
    }

    fn client_of(&self, t: &StoredTokens) -> Client {
        Client {
            id: t.client_id.clone(),
            secret: t
                .client_secret
                .as_ref()
                .map(|s| Secret::new(s.expose()))
                .or_else(|| self.settings.client_secret.clone()),
            method: t
                .token_endpoint_auth_method
                .as_deref()
                .and_then(ClientAuthMethod::parse)
                .unwrap_or(ClientAuthMethod::None),
            private_key: self.settings.private_key.clone(),
            registered: t.registered,
        }
    }

    /// Refreshes the stored tokens. `Ok(None)`: nothing to refresh with, or the refresh token
    /// is dead (forgotten).
    async fn refresh(&self, st: &mut State) -> Result<Option<AuthHeader>, TokenError> {
        let Some(t) = st.tokens.clone() else {
            return Ok(None);
        };
        let (Some(rt), Some(endpoint)) = (&t.refresh_token, &t.token_endpoint) else {
            return Ok(None);
        };
        let endpoint = Url::parse(endpoint).map_err(|e| self.failed("refresh", e.to_string()))?;
        if !crate::config::may_receive_secrets(&endpoint) {
            return Err(self.failed(
                "refresh",
                format!(
                    "the stored token endpoint {} is neither https nor http to a loopback address; \
                     the refresh token is not sent there (run `kaged-mcp auth login {}`)",
                    redacted(&endpoint),
                    self.settings.server
                ),
            ));
        }
        let client = self.client_of(&t);
        let issuer = t.issuer.clone().unwrap_or_default();
        match grant::refresh(
            &self.http,
            &endpoint,
            &issuer,
            &client,
            rt.expose(),
            t.resource.as_deref(),
        )
        .await
        {
            Ok(g) => {
                let scopes = t.scopes.clone();
                let origin = Origin {
                    issuer: t.issuer.clone(),
                    token_endpoint: endpoint,
                    resource: t.resource.clone(),
                };
                self.keep(st, &client, g, scopes, origin)?;
                Ok(Self::current(st))
            }
            Err(GrantError {
                invalid_grant: true,
                ..
            }) => {
                tracing::info!(server = %self.settings.server, "the refresh token was refused; a new login is needed");
                self.forget(st);
                Ok(None)
            }
            Err(e) => Err(self.failed("refresh", e.message)),
        }
    }

    /// Stores what the token endpoint of `origin` granted.
    fn keep(
        &self,
        st: &mut State,
        client: &Client,
        g: Granted,
        asked: Vec<String>,
        origin: Origin,
    ) -> Result<(), TokenError> {
        let Origin {
            issuer,
            token_endpoint,
            resource,
        } = origin;
        let previous_refresh = st.tokens.as_ref().and_then(|t| t.refresh_token.clone());
        let expires_at = g.expires_at(now());
        let tokens = StoredTokens {
            server_url: self.settings.url.to_string(),
            client_id: client.id.clone(),
            client_secret: if client.registered {
                client.secret.as_ref().map(|s| Token::new(s.expose()))
            } else {
                None
            },
            token_endpoint_auth_method: Some(client.method.as_str().to_owned()),
            registered: client.registered,
            issuer,
            token_endpoint: Some(token_endpoint.to_string()),
            resource,
            access_token: Some(Token::new(g.access_token)),
            // A refresh answer without a new refresh token keeps the old one (RFC 6749 §6).
            refresh_token: g.refresh_token.map(Token::new).or(previous_refresh),
            token_type: g.token_type,
            expires_at,
            scopes: g.scopes.unwrap_or(asked),
            saved_at: now(),
        };
        st.set_tokens(Some(tokens));
        self.needs_login.store(false, Ordering::Relaxed);
        self.save(st)
    }

    /// Discovers where to authorize: once, or again when a challenge names other metadata,
    /// or whenever `force` is set. `true` when the resource now names an authorization server
    /// with another issuer than the one discovered before.
    async fn discover(
        &self,
        st: &mut State,
        metadata_url: Option<String>,
        force: bool,
    ) -> Result<bool, TokenError> {
        let moved = metadata_url.is_some() && metadata_url != st.discovered_from;
        if st.discovered.is_some() && !moved && !force {
            return Ok(false);
        }
        let before = st.discovered.as_ref().map(|d| d.server.issuer.clone());
        let pinned = self.settings.config.issuer.as_ref();
        let d = discover(&self.http, &self.settings.url, metadata_url.clone(), pinned)
            .await
            .map_err(|e| self.failed("discovery", e))?;
        let changed = before.is_some_and(|b| b != d.server.issuer);
        st.discovered = Some(d);
        st.discovered_from = metadata_url;
        Ok(changed)
    }

    /// The scopes to ask for: configured, else the challenge's, else the resource's.
    fn scopes(&self, st: &State, challenge_scope: Option<String>) -> Vec<String> {
        if let Some(s) = &self.settings.config.scopes {
            return s.clone();
        }
        if let Some(s) = challenge_scope {
            return s.split_whitespace().map(str::to_owned).collect();
        }
        st.discovered
            .as_ref()
            .map(|d| d.resource_scopes.clone())
            .unwrap_or_default()
    }

    /// Gets a token for `scopes`: client credentials, or the code flow with the authorizer.
    async fn obtain(
        &self,
        st: &mut State,
        mut scopes: Vec<String>,
    ) -> Result<AuthHeader, TokenError> {
        let d = st
            .discovered
            .clone()
            .ok_or_else(|| self.failed("authorization", "nothing discovered"))?;
        let meta = &d.server;
        let resource = d.resource.clone();
        if self.settings.config.grant == OAuthGrant::JwtBearer {
            return self.obtain_jwt_bearer(st, meta, scopes, resource).await;
        }
        if self.settings.config.grant == OAuthGrant::ClientCredentials {
            let client = self.configured_client(meta)?;
            let g =
                grant::client_credentials(&self.http, meta, &client, &scopes, resource.as_deref())
                    .await
                    .map_err(|e| self.failed("client credentials", e.message))?;
            self.keep(st, &client, g, scopes, Origin::of(meta, resource))?;
            return Self::current(st)
                .ok_or_else(|| self.failed("client credentials", "the token expired at once"));
        }
        let Some(authorizer) = self.authorizer.clone() else {
            let why = if scopes.is_empty() {
                "needs an OAuth login".to_owned()
            } else {
                format!("needs an OAuth login with scope `{}`", scopes.join(" "))
            };
            return Err(self.login_required(&why));
        };
        // PKCE support is known only from the metadata (MCP authorization, security
        // considerations): a published document without `code_challenge_methods_supported`
        // means none, and the client must not proceed. The 2025-03-26 default endpoints (no
        // document at all) are used with PKCE as that revision says.
        match &meta.code_challenge_methods_supported {
            Some(methods) if !methods.iter().any(|m| m == "S256") => {
                return Err(self.failed(
                    "authorization",
                    format!(
                        "the authorization server {} does not support PKCE with S256 (its \
                         code_challenge_methods_supported: {})",
                        meta.issuer,
                        methods.join(", ")
                    ),
                ));
            }
            None if meta.issuer_published => {
                return Err(self.failed(
                    "authorization",
                    format!(
                        "the authorization server {} publishes no \
                         code_challenge_methods_supported, so it does not support PKCE; \
                         refusing to log in without it",
                        meta.issuer
                    ),
                ));
            }
            _ => {}
        }
        // offline_access only when the authorization server offers it (SEP-2207).
        if !scopes.is_empty()
            && meta.scopes_supported.iter().any(|s| s == "offline_access")
            && !scopes.iter().any(|s| s == "offline_access")
        {
            scopes.push("offline_access".to_owned());
        }
        let callback = Callback::bind()
            .await
            .map_err(|e| self.failed("login", e))?;
        let client = self
            .client_for_login(st, meta, callback.redirect_uri())
            .await?;
        let endpoint = grant::authorization_endpoint(meta).map_err(|e| self.failed("login", e))?;
        let (url, verifier, state) = grant::authorization_url(
            &client.id,
            endpoint,
            callback.redirect_uri(),
            &scopes,
            resource.as_deref(),
        );
        let issuer = meta.issuer_published.then_some(meta.issuer.as_str());
        let wait = callback.code(state.secret(), issuer, meta.iss_parameter_supported);
        tokio::pin!(wait);
        let opened = authorizer.open(&url);
        let code = tokio::select! {
            code = &mut wait => code,
            opened = opened => {
                opened.map_err(|e| self.failed("login", format!("opening the authorization page: {e}")))?;
                tokio::time::timeout(authorizer.timeout(), &mut wait)
                    .await
                    .map_err(|_| self.failed("login", format!("no redirect within {} s", authorizer.timeout().as_secs())))?
            }
        }
        .map_err(|e| self.failed("login", e))?;
        let g = grant::exchange_code(
            &self.http,
            meta,
            &client,
            callback.redirect_uri(),
            code,
            verifier,
            resource.as_deref(),
        )
        .await
        .map_err(|e| self.failed("code exchange", e.message))?;
        self.keep(st, &client, g, scopes, Origin::of(meta, resource))?;
        Self::current(st).ok_or_else(|| self.failed("login", "the token expired at once"))
    }

    /// The configured client (pre-registered).
    fn configured_client(&self, meta: &AsMetadata) -> Result<Client, TokenError> {
        let c = &self.settings.config;
        let id = c
            .client_id
            .clone()
            .ok_or_else(|| self.failed("client", "no client_id configured"))?;
        Ok(Client {
            id,
            secret: self.settings.client_secret.clone(),
            method: grant::choose_method(
                c.token_endpoint_auth_method,
                self.settings.client_secret.is_some(),
                self.settings.private_key.is_some(),
                &meta.token_endpoint_auth_methods_supported,
            ),
            private_key: self.settings.private_key.clone(),
            registered: false,
        })
    }

    /// Who logs in, in the spec's order: pre-registered, client ID metadata document where
    /// the server supports it, a registration kept from an earlier login, dynamic registration.
    async fn client_for_login(
        &self,
        st: &State,
        meta: &AsMetadata,
        redirect: &Url,
    ) -> Result<Client, TokenError> {
        let c = &self.settings.config;
        if c.client_id.is_some() {
            return self.configured_client(meta);
        }
        if let (Some(doc), true) = (
            &c.client_metadata_url,
            meta.client_id_metadata_document_supported,
        ) {
            return Ok(Client {
                id: doc.to_string(),
                secret: None,
                method: ClientAuthMethod::None,
                private_key: None,
                registered: false,
            });
        }
        // A registration is bound to the authorization server that made it (SEP-2352).
        if let Some(t) = st
            .tokens
            .as_ref()
            .filter(|t| t.registered && t.issuer.as_deref() == Some(meta.issuer.as_str()))
        {
            return Ok(self.client_of(t));
        }
        let Some(endpoint) = &meta.registration_endpoint else {
            return Err(self.failed(
                "client",
                format!(
                    "the authorization server {} offers no dynamic registration; configure a `client_id` (or a `client_metadata_url`)",
                    meta.issuer
                ),
            ));
        };
        grant::register(&self.http, endpoint, redirect)
            .await
            .map_err(|e| self.failed("registration", e))
    }

    /// What the store holds for this server, without a network request.
    pub fn stored(&self) -> Result<Option<StoredSummary>, TokenError> {
        let t = self
            .store
            .load(&self.key)
            .map_err(|e| self.failed("token file", e.to_string()))?;
        Ok(t.map(|t| StoredSummary {
            client_id: t.client_id,
            scopes: t.scopes,
            expires_at: t.expires_at,
            refreshable: t.refresh_token.is_some(),
            path: self.store.path(&self.key),
            dpop_bound: t.token_type.as_deref() == Some("dpop"),
        }))
    }

    /// The grant this server's tokens come from: `authorization_code`, `client_credentials`
    /// or `jwt_bearer`.
    pub fn grant(&self) -> &'static str {
        self.settings.config.grant.as_str()
    }

    /// With DPoP, the JWK SHA-256 thumbprint (RFC 7638) of the server's key, if it has one
    /// yet (made at the first token request); `Ok(None)` without DPoP or before.
    ///
    /// # Errors
    /// The key file is unreadable or not a P-256 key.
    pub fn dpop_thumbprint(&self) -> Result<Option<String>, TokenError> {
        let Some(dpop) = &self.dpop else {
            return Ok(None);
        };
        dpop.stored_key()
            .map(|k| k.map(|k| k.thumbprint().to_owned()))
            .map_err(|e| self.failed("DPoP", e.to_string()))
    }

    /// Forgets the stored tokens (and the DPoP key); `true` when there were some.
    pub fn logout(&self) -> Result<bool, TokenError> {
        if let Some(dpop) = &self.dpop {
            dpop.forget_key()
                .map_err(|e| self.failed("DPoP", e.to_string()))?;
        }
        self.store
            .remove(&self.key)
            .map_err(|e| self.failed("token file", e.to_string()))
    }
}

mod answers;
mod grant_jwt_bearer;
