//! Registration and the token endpoint: dynamic client registration (RFC 7591), the
//! authorization URL with PKCE (S256) and `resource` (RFC 8707), and the `authorization_code`,
//! `refresh_token` and `client_credentials` grants through the `oauth2` crate, with the client
//! authenticating as registered (`client_secret_basic`, `client_secret_post`, `none`, or
//! `private_key_jwt` with an ES256 assertion).

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use oauth2::basic::{BasicClient, BasicErrorResponseType, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet,
    EndpointSet, PkceCodeChallenge, PkceCodeVerifier, RedirectUrl, RefreshToken, RequestTokenError,
    Scope, TokenResponse, TokenUrl,
};
use serde_json::{json, Value};
use url::Url;

use super::discovery::AsMetadata;
use super::error::DocumentError;
use super::http::{Fetched, OAuthHttp};
use super::jwt;
use crate::config::{ClientAuthMethod, Secret};
use crate::transport::http::redacted;

/// Who the client is at the authorization server.
#[derive(Clone)]
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) secret: Option<Secret>,
    pub(crate) method: ClientAuthMethod,
    /// The PKCS#8 PEM key for `private_key_jwt`.
    pub(crate) private_key: Option<Secret>,
    /// Registered dynamically (kept with the tokens).
    pub(crate) registered: bool,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Client")
            .field("id", &self.id)
            .field("method", &self.method.as_str())
            .field("secret", &self.secret.as_ref().map(|_| "***"))
            .field("registered", &self.registered)
            .finish()
    }
}

/// What the token endpoint granted.
pub(crate) struct Granted {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    pub(crate) expires_in: Option<Duration>,
    /// The granted scopes when the server said (else the requested ones apply).
    pub(crate) scopes: Option<Vec<String>>,
    /// `token_type`, lower-case (`bearer`, `dpop`).
    pub(crate) token_type: Option<String>,
}

impl Granted {
    /// When the access token expires (Unix seconds), granted at `now`; `None` when the
    /// server did not say. An `expires_in` past any date is the end of time, not an overflow.
    pub(crate) fn expires_at(&self, now: u64) -> Option<u64> {
        self.expires_in.map(|d| now.saturating_add(d.as_secs()))
    }
}

/// A failed grant: `invalid_grant` tells a dead refresh token from a passing failure;
/// `refused` an OAuth error answer of the token endpoint from a request that did not get there.
#[derive(Debug)]
pub(crate) struct GrantError {
    pub(crate) invalid_grant: bool,
    pub(crate) refused: bool,
    pub(crate) message: String,
}

impl GrantError {
    pub(crate) fn other(message: String) -> Self {
        Self {
            invalid_grant: false,
            refused: false,
            message,
        }
    }
}

pub(crate) type TokenClient =
    BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

/// The token endpoint client for `client`.
pub(crate) fn token_client(
    client: &Client,
    token_endpoint: &Url,
    redirect: Option<&Url>,
) -> TokenClient {
    let mut c = BasicClient::new(ClientId::new(client.id.clone()))
        .set_token_uri(TokenUrl::from_url(token_endpoint.clone()));
    if let Some(r) = redirect {
        c = c.set_redirect_uri(RedirectUrl::from_url(r.clone()));
    }
    match (client.method, &client.secret) {
        (ClientAuthMethod::ClientSecretBasic, Some(s)) => c
            .set_client_secret(ClientSecret::new(s.expose().to_owned()))
            .set_auth_type(AuthType::BasicAuth),
        (ClientAuthMethod::ClientSecretPost, Some(s)) => c
            .set_client_secret(ClientSecret::new(s.expose().to_owned()))
            .set_auth_type(AuthType::RequestBody),
        _ => c.set_auth_type(AuthType::RequestBody),
    }
}

/// The `private_key_jwt` parameters for a request to `issuer`'s token endpoint.
pub(crate) fn assertion(
    client: &Client,
    issuer: &str,
) -> Result<Vec<(&'static str, String)>, GrantError> {
    if client.method != ClientAuthMethod::PrivateKeyJwt {
        return Ok(Vec::new());
    }
    let key = client.private_key.as_ref().ok_or_else(|| {
        GrantError::other("private_key_jwt needs the client's private key (private_key_ref)".into())
    })?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let jwt = jwt::client_assertion(key.expose(), &client.id, issuer, now)
        .map_err(|e| GrantError::other(format!("the client assertion: {e}")))?;
    Ok(vec![
        (
            "client_assertion_type",
            "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_owned(),
        ),
        ("client_assertion", jwt),
    ])
}

/// The authorization URL (PKCE S256, `state`, `scope` when any, `resource` when known) and
/// the verifier and state to check the redirect against.
pub(crate) fn authorization_url(
    client_id: &str,
    endpoint: &Url,
    redirect: &Url,
    scopes: &[String],
    resource: Option<&str>,
) -> (Url, PkceCodeVerifier, CsrfToken) {
    let c = BasicClient::new(ClientId::new(client_id.to_owned()))
        .set_auth_uri(AuthUrl::from_url(endpoint.clone()))
        .set_redirect_uri(RedirectUrl::from_url(redirect.clone()));
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let mut req = c
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_scopes(scopes.iter().cloned().map(Scope::new));
    if let Some(r) = resource {
        req = req.add_extra_param("resource", r.to_owned());
    }
    let (url, state) = req.url();
    (url, verifier, state)
}

/// Exchanges an authorization `code`.
pub(crate) async fn exchange_code(
    http: &OAuthHttp,
    meta: &AsMetadata,
    client: &Client,
    redirect: &Url,
    code: String,
    verifier: PkceCodeVerifier,
    resource: Option<&str>,
) -> Result<Granted, GrantError> {
    let c = token_client(client, &meta.token_endpoint, Some(redirect));
    let mut req = c
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier);
    if let Some(r) = resource {
        req = req.add_extra_param("resource", r.to_owned());
    }
    for (k, v) in assertion(client, &meta.issuer)? {
        req = req.add_extra_param(k, v);
    }
    granted(req.request_async(http).await, &meta.token_endpoint)
}

/// Trades a refresh token for new tokens.
pub(crate) async fn refresh(
    http: &OAuthHttp,
    token_endpoint: &Url,
    issuer: &str,
    client: &Client,
    refresh_token: &str,
    resource: Option<&str>,
) -> Result<Granted, GrantError> {
    let c = token_client(client, token_endpoint, None);
    let token = RefreshToken::new(refresh_token.to_owned());
    let mut req = c.exchange_refresh_token(&token);
    if let Some(r) = resource {
        req = req.add_extra_param("resource", r.to_owned());
    }
    for (k, v) in assertion(client, issuer)? {
        req = req.add_extra_param(k, v);
    }
    granted(req.request_async(http).await, token_endpoint)
}

/// The client credentials grant.
pub(crate) async fn client_credentials(
    http: &OAuthHttp,
    meta: &AsMetadata,
    client: &Client,
    scopes: &[String],
    resource: Option<&str>,
) -> Result<Granted, GrantError> {
    let c = token_client(client, &meta.token_endpoint, None);
    let mut req = c
        .exchange_client_credentials()
        .add_scopes(scopes.iter().cloned().map(Scope::new));
    if let Some(r) = resource {
        req = req.add_extra_param("resource", r.to_owned());
    }
    for (k, v) in assertion(client, &meta.issuer)? {
        req = req.add_extra_param(k, v);
    }
    granted(req.request_async(http).await, &meta.token_endpoint)
}

pub(crate) type TokenResult = Result<
    BasicTokenResponse,
    RequestTokenError<
        super::http::HttpError,
        oauth2::StandardErrorResponse<BasicErrorResponseType>,
    >,
>;

/// What a token response granted.
pub(crate) fn granted_of(t: &BasicTokenResponse) -> Granted {
    Granted {
        access_token: t.access_token().secret().clone(),
        refresh_token: t.refresh_token().map(|r| r.secret().clone()),
        expires_in: t.expires_in(),
        scopes: t
            .scopes()
            .map(|s| s.iter().map(|s| s.to_string()).collect()),
        token_type: Some(t.token_type().as_ref().to_ascii_lowercase()),
    }
}

/// The OAuth error answer `e` of the token endpoint at `endpoint`, naming both.
pub(crate) fn refused(
    e: &oauth2::StandardErrorResponse<BasicErrorResponseType>,
    endpoint: &Url,
) -> GrantError {
    GrantError {
        invalid_grant: matches!(e.error(), BasicErrorResponseType::InvalidGrant),
        refused: true,
        message: format!(
            "the token endpoint {} refused: {}{}",
            redacted(endpoint),
            e.error(),
            e.error_description()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        ),
    }
}

pub(crate) fn granted(result: TokenResult, endpoint: &Url) -> Result<Granted, GrantError> {
    match result {
        Ok(t) => Ok(granted_of(&t)),
        Err(RequestTokenError::ServerResponse(e)) => Err(refused(&e, endpoint)),
        Err(RequestTokenError::Request(e)) => Err(GrantError::other(format!(
            "the token endpoint {}: {}",
            redacted(endpoint),
            e.reason()
        ))),
        // Where it broke, not serde's message: that quotes values, and the answer holds tokens.
        Err(RequestTokenError::Parse(e, _)) => Err(GrantError::other(format!(
            "the token endpoint {} answered something that is not a token response (at `{}`, \
             line {} column {})",
            redacted(endpoint),
            e.path(),
            e.inner().line(),
            e.inner().column()
        ))),
        Err(RequestTokenError::Other(e)) => Err(GrantError::other(format!(
            "the token endpoint {}: {e}",
            redacted(endpoint)
        ))),
    }
}

/// Registers a public client dynamically (RFC 7591) for `redirect`.
pub(crate) async fn register(
    http: &OAuthHttp,
    endpoint: &Url,
    redirect: &Url,
) -> Result<Client, DocumentError> {
    let body = json!({
        "client_name": "kaged-mcp",
        // A loopback redirect: a native application (SEP-837; OpenID Connect would refuse a
        // `web` client with an http://127.0.0.1 redirect URI).
        "application_type": "native",
        "redirect_uris": [redirect.as_str()],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
    });
    let fetched = http.post_json(endpoint, &body).await?;
    registered(endpoint, fetched)
}

/// The client a dynamic registration at `endpoint` answered with `fetched`.
pub(crate) fn registered(endpoint: &Url, fetched: Fetched) -> Result<Client, DocumentError> {
    if !fetched.status.is_success() {
        return Err(DocumentError::RegistrationRefused {
            url: redacted(endpoint),
            status: fetched.status,
        });
    }
    let json = fetched.json.unwrap_or(Value::Null);
    let id = json
        .get("client_id")
        .and_then(Value::as_str)
        .filter(|s| !s.is_empty())
        .ok_or_else(|| DocumentError::NoClientId {
            url: redacted(endpoint),
        })?;
    let secret = json
        .get("client_secret")
        .and_then(Value::as_str)
        .map(Secret::new);
    let method = json
        .get("token_endpoint_auth_method")
        .and_then(Value::as_str)
        .and_then(ClientAuthMethod::parse)
        .unwrap_or(if secret.is_some() {
            ClientAuthMethod::ClientSecretBasic
        } else {
            ClientAuthMethod::None
        });
    Ok(Client {
        id: id.to_owned(),
        secret,
        method,
        private_key: None,
        registered: true,
    })
}

/// The method a configured client uses: the configured one, else `private_key_jwt` with a
/// key, else with a secret the first of `client_secret_basic` and `client_secret_post` the
/// server supports (basic when it does not say), else `none`.
pub(crate) fn choose_method(
    configured: Option<ClientAuthMethod>,
    has_secret: bool,
    has_key: bool,
    supported: &[String],
) -> ClientAuthMethod {
    if let Some(m) = configured {
        return m;
    }
    if has_key {
        return ClientAuthMethod::PrivateKeyJwt;
    }
    if !has_secret {
        return ClientAuthMethod::None;
    }
    let supports = |m: &str| supported.iter().any(|s| s == m);
    if supported.is_empty() || supports("client_secret_basic") || !supports("client_secret_post") {
        ClientAuthMethod::ClientSecretBasic
    } else {
        ClientAuthMethod::ClientSecretPost
    }
}

/// The code and state of a redirect to the loopback listener, from its query.
pub(crate) fn parse_redirect(query: &str) -> RedirectParams {
    let mut out = RedirectParams::default();
    for (k, v) in url::form_urlencoded::parse(query.as_bytes()) {
        match &*k {
            "code" => out.code = Some(v.into_owned()),
            "state" => out.state = Some(v.into_owned()),
            "error" => out.error = Some(v.into_owned()),
            "error_description" => out.error_description = Some(v.into_owned()),
            "iss" => out.iss = Some(v.into_owned()),
            _ => {}
        }
    }
    out
}

/// What a redirect carried.
#[derive(Default)]
pub(crate) struct RedirectParams {
    pub(crate) code: Option<String>,
    pub(crate) state: Option<String>,
    pub(crate) error: Option<String>,
    pub(crate) error_description: Option<String>,
    /// RFC 9207: the issuer that sent the response.
    pub(crate) iss: Option<String>,
}

/// The endpoint of the metadata, or an error naming what is missing.
pub(crate) fn authorization_endpoint(meta: &AsMetadata) -> Result<&Url, DocumentError> {
    meta.authorization_endpoint
        .as_ref()
        .ok_or_else(|| DocumentError::NoAuthorizationEndpoint {
            issuer: meta.issuer.clone(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_unreadable_token_response_is_reported_without_its_values() {
        let endpoint = Url::parse("https://as.test/token").unwrap();
        let client = Client {
            id: "c".into(),
            secret: None,
            method: ClientAuthMethod::None,
            private_key: None,
            registered: false,
        };
        let http = |_: oauth2::HttpRequest| async {
            let body =
                br#"{"access_token":"tok-ACCESS","token_type":"bearer","expires_in":"tok-LEAK"}"#;
            Ok::<_, super::super::http::HttpError>(
                http::Response::builder()
                    .status(200)
                    .header("content-type", "application/json")
                    .body(body.to_vec())
                    .unwrap(),
            )
        };
        let result = token_client(&client, &endpoint, None)
            .exchange_client_credentials()
            .request_async(&http)
            .await;
        let err = granted(result, &endpoint)
            .err()
            .expect("not a token response");
        assert!(err.message.contains("expires_in"), "{}", err.message);
        assert!(
            !err.message.contains("tok-LEAK") && !err.message.contains("tok-ACCESS"),
            "{}",
            err.message
        );
    }

    #[test]
    fn the_method_follows_configuration_then_credentials_then_the_server() {
        let none: Vec<String> = Vec::new();
        let post = vec!["client_secret_post".to_owned()];
        let both = vec![
            "client_secret_post".to_owned(),
            "client_secret_basic".to_owned(),
        ];
        assert_eq!(
            choose_method(None, false, false, &post),
            ClientAuthMethod::None
        );
        assert_eq!(
            choose_method(None, true, false, &none),
            ClientAuthMethod::ClientSecretBasic
        );
        assert_eq!(
            choose_method(None, true, false, &post),
            ClientAuthMethod::ClientSecretPost
        );
        assert_eq!(
            choose_method(None, true, false, &both),
            ClientAuthMethod::ClientSecretBasic
        );
        assert_eq!(
            choose_method(None, true, true, &both),
            ClientAuthMethod::PrivateKeyJwt
        );
        assert_eq!(
            choose_method(Some(ClientAuthMethod::ClientSecretPost), true, false, &none),
            ClientAuthMethod::ClientSecretPost
        );
    }

    #[test]
    fn the_authorization_url_carries_pkce_state_scope_and_resource() {
        let (url, verifier, state) = authorization_url(
            "c1",
            &Url::parse("https://as.test/authorize").unwrap(),
            &Url::parse("http://127.0.0.1:9/callback").unwrap(),
            &["a".to_owned(), "b".to_owned()],
            Some("https://r.test/mcp"),
        );
        let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
        assert_eq!(q["response_type"], "code");
        assert_eq!(q["client_id"], "c1");
        assert_eq!(q["code_challenge_method"], "S256");
        assert_eq!(q["scope"], "a b");
        assert_eq!(q["resource"], "https://r.test/mcp");
        assert_eq!(&q["state"], state.secret());
        assert!(verifier.secret().len() >= 43);
        let (url, ..) = authorization_url(
            "c1",
            &Url::parse("https://as.test/authorize").unwrap(),
            &Url::parse("http://127.0.0.1:9/callback").unwrap(),
            &[],
            None,
        );
        assert!(!url.query().unwrap().contains("scope="), "{url}");
        assert!(!url.query().unwrap().contains("resource="), "{url}");
    }
}
