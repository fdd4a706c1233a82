//! Workload identity federation (SEP-1933): the JWT-bearer grant of RFC 7523 section 2.1, whose
//! assertion is the workload's own identity token, read from a file.
//!
//! The file (a Kubernetes projected service-account token, a cloud provider's token file) is
//! read again at every grant, since such files rotate; its content is checked to be a compact
//! JWS whose header and claims are JSON, and one whose `exp` has passed is refused before it is
//! sent. The token endpoint's answer is read with the `oauth2` crate's types, and a refusal
//! (`invalid_grant`, `invalid_scope`, `unauthorized_client`, ...) comes back as a
//! `GrantError` naming the endpoint and the error. The source remembers the digest of a
//! refused assertion and never sends it again: only a rotated file is tried.
//!
//! No assertion reaches a log, a `Debug` or an error: `Assertion` prints `***`, and errors
//! name the file, never its content.

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use http::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::Method;
use oauth2::basic::{BasicErrorResponseType, BasicTokenResponse};
use oauth2::{AsyncHttpClient, StandardErrorResponse};
use ring::digest;
use url::Url;

use super::grant::{self, Client, GrantError, Granted};
use super::http::OAuthHttp;
use crate::config::ClientAuthMethod;
use crate::transport::http::redacted;

/// The `grant_type` of RFC 7523 section 2.1.
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
/// The `grant_type` of RFC 8693 token exchange.
const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
/// The token type of an ID token (RFC 8693 section 3).
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
/// The token type of an identity assertion JWT authorization grant (SEP-990).
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";
/// Identity token files are small; a larger one is refused unread.
const MAX_ASSERTION_BYTES: u64 = 64 * 1024;
/// An assertion whose `exp` passed longer ago than this is refused before it is sent.
const EXPIRY_LEEWAY_SECS: u64 = 30;

/// A workload identity token read from its file. `Debug` prints `***`.
pub(crate) struct Assertion {
    value: String,
    /// SHA-256 of the value: how a refused assertion is recognised without keeping it.
    digest: [u8; 32],
    /// Its `aud` claim: whom it is for (a string claim is one entry).
    audience: Vec<String>,
}

impl fmt::Debug for Assertion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Assertion(***)")
    }
}

impl Assertion {
    /// The digest of the assertion (not the assertion).
    pub(crate) const fn digest(&self) -> [u8; 32] {
        self.digest
    }

    /// Its `aud` claim, as read without checking the signature: whom it is for.
    pub(crate) fn audience(&self) -> &[String] {
        &self.audience
    }

    /// The assertion `value` (a compact JWT whose claims were read as `claims`).
    fn new(value: String, claims: JwtClaims) -> Self {
        let mut digest = [0u8; 32];
        digest.copy_from_slice(digest::digest(&digest::SHA256, value.as_bytes()).as_ref());
        Self {
            value,
            digest,
            audience: claims.aud,
        }
    }
}

/// Why an assertion file could not be used. Names the file, never its content.
#[derive(Debug, thiserror::Error)]
pub(crate) enum AssertionError {
    /// The file could not be read.
    #[error("cannot read the assertion file {}: {reason}", path.display())]
    Read {
        /// The file.
        path: PathBuf,
        /// The I/O error, in words.
        reason: String,
    },
    /// The file's content is not a compact JWT.
    #[error("the assertion file {} does not hold a JWT ({why})", path.display())]
    NotJwt {
        /// The file.
        path: PathBuf,
        /// What is wrong with its shape.
        why: JwtShapeError,
    },
    /// The token's `exp` has passed: the file is not being rotated.
    #[error("the assertion in {} expired {ago} s ago (its `exp`); is the file still being rotated?", path.display())]
    Expired {
        /// The file.
        path: PathBuf,
        /// Seconds since `exp`.
        ago: u64,
    },
}

/// What is wrong with the shape of a compact JWT; never quotes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum JwtShapeError {
    /// Empty, or only whitespace.
    #[error("it is empty")]
    Empty,
    /// Not three dot-separated segments.
    #[error("it is not three dot-separated segments")]
    Segments,
    /// A segment is not unpadded base64url.
    #[error("a segment is not base64url")]
    Base64,
    /// The header or the claims are not a JSON object.
    #[error("its header or claims are not a JSON object")]
    Json,
    /// A claim has the wrong type (`exp` not a number).
    #[error("its `exp` claim is not a number")]
    Exp,
}

/// What a compact JWT says of itself, without its signature being checked.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct JwtClaims {
    /// The header's `typ`, if any.
    pub typ: Option<String>,
    /// The header's `alg`, if any.
    pub alg: Option<String>,
    /// `exp`, Unix seconds.
    pub exp: Option<u64>,
    /// `iat`, Unix seconds.
    pub iat: Option<u64>,
    /// `nonce` (a DPoP proof's).
    pub nonce: Option<String>,
    /// `aud`: a string is one entry, an array its strings; absent or of another type, none.
    pub aud: Vec<String>,
}

/// Reads the header and claims of a compact JWS (`header.claims.signature`, base64url without
/// padding), without checking the signature: enough to refuse a file that is not a JWT and one
/// that has expired, and for tests to read proofs. Never fails on any input but with a
/// [`JwtShapeError`].
pub fn inspect_jwt(text: &str) -> Result<JwtClaims, JwtShapeError> {
    let text = text.trim();
    if text.is_empty() {
        return Err(JwtShapeError::Empty);
    }
    let mut parts = text.split('.');
    let (Some(header), Some(claims), Some(signature), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(JwtShapeError::Segments);
    };
    if header.is_empty() || claims.is_empty() {
        return Err(JwtShapeError::Segments);
    }
    let object = |segment: &str| -> Result<serde_json::Map<String, serde_json::Value>, _> {
        let bytes = URL_SAFE_NO_PAD
            .decode(segment)
            .map_err(|_| JwtShapeError::Base64)?;
        match serde_json::from_slice(&bytes) {
            Ok(serde_json::Value::Object(m)) => Ok(m),
            _ => Err(JwtShapeError::Json),
        }
    };
    URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| JwtShapeError::Base64)?;
    let header = object(header)?;
    let claims = object(claims)?;
    let string = |m: &serde_json::Map<String, serde_json::Value>, k: &str| {
        m.get(k).and_then(|v| v.as_str()).map(str::to_owned)
    };
    let number = |k: &str| -> Result<Option<u64>, JwtShapeError> {
        match claims.get(k) {
            None => Ok(None),
            // A fractional or negative time is read as the whole seconds it holds (0 at least).
            Some(v) => v
                .as_f64()
                .filter(|f| f.is_finite())
                .map(|f| Some(f.max(0.0) as u64))
                .ok_or(JwtShapeError::Exp),
        }
    };
    Ok(JwtClaims {
        typ: string(&header, "typ"),
        alg: string(&header, "alg"),
        exp: number("exp")?,
        iat: number("iat").unwrap_or(None),
        nonce: string(&claims, "nonce"),
        aud: match claims.get("aud") {
            Some(serde_json::Value::String(a)) => vec![a.clone()],
            Some(serde_json::Value::Array(a)) => a
                .iter()
                .filter_map(|v| v.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        },
    })
}

/// Reads the assertion in `path` now (at most 64 KiB; surrounding whitespace dropped), refusing
/// one that is not a JWT or whose `exp` passed before `now` (Unix seconds).
pub(crate) fn read_assertion(path: &Path, now: u64) -> Result<Assertion, AssertionError> {
    let read_err = |e: std::io::Error| AssertionError::Read {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    let file = std::fs::File::open(path).map_err(read_err)?;
    let mut bytes = Vec::new();
    file.take(MAX_ASSERTION_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(read_err)?;
    let not_jwt = |why| AssertionError::NotJwt {
        path: path.to_path_buf(),
        why,
    };
    if bytes.len() as u64 > MAX_ASSERTION_BYTES {
        return Err(not_jwt(JwtShapeError::Segments));
    }
    let text = String::from_utf8(bytes).map_err(|_| not_jwt(JwtShapeError::Base64))?;
    let claims = inspect_jwt(&text).map_err(not_jwt)?;
    if let Some(exp) = claims.exp {
        if exp.saturating_add(EXPIRY_LEEWAY_SECS) < now {
            return Err(AssertionError::Expired {
                path: path.to_path_buf(),
                ago: now - exp,
            });
        }
    }
    Ok(Assertion::new(text.trim().to_owned(), claims))
}

/// Enterprise-managed authorization (SEP-990), its first step: exchanges the ID token
/// `id_token` at the IdP's `idp_endpoint` (RFC 8693) for an identity assertion grant (ID-JAG)
/// for the authorization server `audience` (its issuer) and the MCP server `resource`, the
/// client authenticated at the IdP as `idp_client` when given (`client_secret_basic` with a
/// secret, else its `client_id` in the form). The ID-JAG is the assertion of the JWT-bearer
/// grant that follows.
pub(crate) async fn exchange_for_id_jag(
    http: &OAuthHttp,
    idp_endpoint: &Url,
    idp_client: Option<&Client>,
    id_token: &Assertion,
    audience: &str,
    resource: Option<&str>,
    scopes: &[String],
) -> Result<Assertion, GrantError> {
    let mut form = vec![
        ("grant_type", TOKEN_EXCHANGE.to_owned()),
        ("requested_token_type", ID_JAG_TYPE.to_owned()),
        ("subject_token", id_token.value.clone()),
        ("subject_token_type", ID_TOKEN_TYPE.to_owned()),
        ("audience", audience.to_owned()),
    ];
    if let Some(r) = resource {
        form.push(("resource", r.to_owned()));
    }
    if !scopes.is_empty() {
        form.push(("scope", scopes.join(" ")));
    }
    let none = Client {
        id: String::new(),
        secret: None,
        method: ClientAuthMethod::None,
        private_key: None,
        registered: false,
    };
    let req = form_request(idp_endpoint, "", idp_client.unwrap_or(&none), form)?;
    let response = http
        .call(req)
        .await
        .map_err(|e| GrantError::other(e.to_string()))?;
    let status = response.status();
    let body = response.body();
    if !status.is_success() {
        return Err(match answer(status, body, idp_endpoint) {
            Err(e) => e,
            Ok(_) => GrantError::other(format!(
                "the IdP {} answered {status}",
                redacted(idp_endpoint)
            )),
        });
    }
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let issued = json.get("issued_token_type").and_then(|v| v.as_str());
    let jag = json.get("access_token").and_then(|v| v.as_str());
    match (issued, jag.map(|j| (j, inspect_jwt(j)))) {
        (Some(ID_JAG_TYPE), Some((jag, Ok(claims)))) => Ok(Assertion::new(jag.to_owned(), claims)),
        _ => Err(GrantError::other(format!(
            "the IdP {} answered the token exchange without an ID-JAG (issued_token_type {})",
            redacted(idp_endpoint),
            issued.unwrap_or("missing")
        ))),
    }
}

/// The JWT-bearer grant at `token_endpoint` (of `issuer`, the audience of a `private_key_jwt`
/// client assertion): `grant_type`, `assertion`, `scope` when any and `resource` when known,
/// the client authenticated as configured (or not at all without a `client_id`).
pub(crate) async fn jwt_bearer(
    http: &OAuthHttp,
    token_endpoint: &Url,
    issuer: &str,
    client: &Client,
    assertion: &Assertion,
    scopes: &[String],
    resource: Option<&str>,
) -> Result<Granted, GrantError> {
    let req = request(token_endpoint, issuer, client, assertion, scopes, resource)?;
    let response = http
        .call(req)
        .await
        .map_err(|e| GrantError::other(e.to_string()))?;
    answer(response.status(), response.body(), token_endpoint)
}

/// The form POST of a JWT-bearer grant.
fn request(
    token_endpoint: &Url,
    issuer: &str,
    client: &Client,
    assertion: &Assertion,
    scopes: &[String],
    resource: Option<&str>,
) -> Result<oauth2::HttpRequest, GrantError> {
    let mut pairs = vec![
        ("grant_type", JWT_BEARER.to_owned()),
        ("assertion", assertion.value.clone()),
    ];
    if !scopes.is_empty() {
        pairs.push(("scope", scopes.join(" ")));
    }
    if let Some(r) = resource {
        pairs.push(("resource", r.to_owned()));
    }
    form_request(token_endpoint, issuer, client, pairs)
}

/// A form POST of `pairs` to `token_endpoint`, the client authenticated as it is configured
/// (a `private_key_jwt` assertion for `issuer`); no client at all when its id is empty.
fn form_request(
    token_endpoint: &Url,
    issuer: &str,
    client: &Client,
    pairs: Vec<(&'static str, String)>,
) -> Result<oauth2::HttpRequest, GrantError> {
    let mut form = url::form_urlencoded::Serializer::new(String::new());
    for (k, v) in &pairs {
        form.append_pair(k, v);
    }
    let mut req = http::Request::builder()
        .method(Method::POST)
        .uri(token_endpoint.as_str())
        .header(ACCEPT, "application/json")
        .header(CONTENT_TYPE, "application/x-www-form-urlencoded");
    match (client.method, &client.secret) {
        (ClientAuthMethod::ClientSecretBasic, Some(secret)) => {
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            let pair = format!("{}:{}", enc(&client.id), enc(secret.expose()));
            let basic = base64::engine::general_purpose::STANDARD.encode(pair);
            req = req.header(AUTHORIZATION, format!("Basic {basic}"));
        }
        (ClientAuthMethod::ClientSecretPost, Some(secret)) => {
            form.append_pair("client_id", &client.id);
            form.append_pair("client_secret", secret.expose());
        }
        _ if !client.id.is_empty() => {
            form.append_pair("client_id", &client.id);
        }
        _ => {}
    }
    for (k, v) in grant::assertion(client, issuer)? {
        form.append_pair(k, &v);
    }
    req.body(form.finish().into_bytes())
        .map_err(|e| GrantError::other(format!("the token request: {e}")))
}

/// What the token endpoint at `endpoint` answered `status` with `body`.
pub(crate) fn answer(
    status: http::StatusCode,
    body: &[u8],
    endpoint: &Url,
) -> Result<Granted, GrantError> {
    if status.is_success() {
        return match serde_json::from_slice::<BasicTokenResponse>(body) {
            Ok(t) => Ok(grant::granted_of(&t)),
            // Where it broke, not serde's message: that may quote values.
            Err(e) => Err(GrantError::other(format!(
                "the token endpoint {} answered something that is not a token response (line {} column {})",
                redacted(endpoint),
                e.line(),
                e.column()
            ))),
        };
    }
    match serde_json::from_slice::<StandardErrorResponse<BasicErrorResponseType>>(body) {
        Ok(e) => Err(grant::refused(&e, endpoint)),
        Err(_) => Err(GrantError::other(format!(
            "the token endpoint {} answered {status} without an OAuth error",
            redacted(endpoint)
        ))),
    }
}

/// What the token endpoint `https://as.invalid/token` answering `status` with `body` gives,
/// for the fuzz checks only: the access token's length, or the error message.
#[doc(hidden)]
pub fn read_token_answer(status: u16, body: &[u8]) -> Result<usize, String> {
    let endpoint = Url::parse("https://as.invalid/token").map_err(|e| e.to_string())?;
    let status = http::StatusCode::from_u16(status).map_err(|e| e.to_string())?;
    answer(status, body, &endpoint)
        .map(|g| g.access_token.len())
        .map_err(|e| e.message)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn jwt(header: &str, claims: &str) -> String {
        format!(
            "{}.{}.{}",
            URL_SAFE_NO_PAD.encode(header),
            URL_SAFE_NO_PAD.encode(claims),
            URL_SAFE_NO_PAD.encode("sig")
        )
    }

    #[test]
    fn inspects_the_header_and_claims_of_a_compact_jwt() {
        let t = jwt(
            r#"{"alg":"RS256","typ":"JWT"}"#,
            r#"{"exp":1700000300,"iat":1700000000.5,"nonce":"n1"}"#,
        );
        let c = inspect_jwt(&format!("  {t}\n")).unwrap();
        assert_eq!(c.alg.as_deref(), Some("RS256"));
        assert_eq!(c.typ.as_deref(), Some("JWT"));
        assert_eq!(c.exp, Some(1_700_000_300));
        assert_eq!(c.iat, Some(1_700_000_000));
        assert_eq!(c.nonce.as_deref(), Some("n1"));
    }

    #[test]
    fn reads_the_audience_as_a_string_or_the_strings_of_an_array() {
        let aud = |claims: &str| inspect_jwt(&jwt("{}", claims)).unwrap().aud;
        assert_eq!(aud(r#"{"aud":"https://as.test"}"#), ["https://as.test"]);
        assert_eq!(
            aud(r#"{"aud":["https://a.test",7,"https://b.test"]}"#),
            ["https://a.test", "https://b.test"]
        );
        assert!(aud(r#"{"aud":{"x":"https://as.test"}}"#).is_empty());
        assert!(aud("{}").is_empty());
    }

    #[test]
    fn refuses_what_is_not_a_compact_jwt_without_quoting_it() {
        let cases = [
            ("", JwtShapeError::Empty),
            ("a.b", JwtShapeError::Segments),
            ("a.b.c.d", JwtShapeError::Segments),
            (".x.y", JwtShapeError::Segments),
            ("a+b.c.d", JwtShapeError::Base64),
            (&*jwt("[]", "{}"), JwtShapeError::Json),
            (&*jwt("{}", r#"{"exp":"soon"}"#), JwtShapeError::Exp),
        ];
        for (input, want) in cases {
            assert_eq!(inspect_jwt(input), Err(want), "{input}");
        }
    }

    #[test]
    fn reads_the_file_again_and_refuses_an_expired_or_malformed_one() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("token");
        std::fs::write(&path, jwt("{}", r#"{"exp":1000}"#)).unwrap();
        let a = read_assertion(&path, 900).unwrap();
        assert_eq!(format!("{a:?}"), "Assertion(***)");
        let err = read_assertion(&path, 2000).unwrap_err();
        assert!(err.to_string().contains("expired 1000 s ago"), "{err}");
        std::fs::write(&path, "secret-but-not-a-jwt").unwrap();
        let err = read_assertion(&path, 0).unwrap_err().to_string();
        assert!(
            err.contains("does not hold a JWT") && !err.contains("secret"),
            "{err}"
        );
        std::fs::write(&path, jwt("{}", "{}")).unwrap();
        let b = read_assertion(&path, 0).unwrap();
        assert_ne!(a.digest(), b.digest(), "a rotated file is a new assertion");
        let err = read_assertion(&dir.path().join("missing"), 0).unwrap_err();
        assert!(
            err.to_string().contains("cannot read the assertion file"),
            "{err}"
        );
    }

    #[test]
    fn a_refusal_names_the_endpoint_and_the_error() {
        let endpoint = Url::parse("https://as.test/token?x=1").unwrap();
        for code in ["invalid_grant", "invalid_scope", "unauthorized_client"] {
            let body = format!(r#"{{"error":"{code}","error_description":"no"}}"#);
            let err = answer(http::StatusCode::BAD_REQUEST, body.as_bytes(), &endpoint)
                .err()
                .unwrap();
            assert!(err.message.contains(code), "{}", err.message);
            assert!(
                err.message.contains("https://as.test/token"),
                "{}",
                err.message
            );
            assert!(err.refused);
        }
        let ok = br#"{"access_token":"a","token_type":"DPoP","expires_in":60}"#;
        let g = answer(http::StatusCode::OK, ok, &endpoint).unwrap();
        assert_eq!(g.token_type.as_deref(), Some("dpop"));
    }
}
