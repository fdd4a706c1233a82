//! The documents an authorization server or a protected resource sends, read from bytes the
//! way discovery, registration and the token endpoint read them. These functions exist for the
//! fuzz targets in `fuzz/` (`oauth_documents`) and their regression tests; they are not part
//! of the API and may change at any time.
//!
//! Each takes an answer's status and body (and, for the token endpoint, its `Content-Type`),
//! runs the same code the OAuth flow runs on it, and returns a summary of what was read, or the
//! error the flow would report. A summary never holds a token or a secret: it says how long
//! they are.

use std::time::{SystemTime, UNIX_EPOCH};

use http::StatusCode;
use url::Url;

use super::discovery;
use super::grant::{self, Client, GrantError};
use super::http::Fetched;
use crate::config::ClientAuthMethod;

/// The URL documents are read as coming from, in messages.
fn url(s: &str) -> Result<Url, String> {
    Url::parse(s).map_err(|e| format!("`{s}`: {e}"))
}

fn status(code: u16) -> Result<StatusCode, String> {
    StatusCode::from_u16(code).map_err(|e| format!("status {code}: {e}"))
}

/// The answer as [`OAuthHttp`](super::http::OAuthHttp) hands it over: the status, and the
/// body's JSON when it is JSON.
fn fetched(code: u16, body: &[u8]) -> Result<Fetched, String> {
    Ok(Fetched {
        status: status(code)?,
        json: serde_json::from_slice(body).ok(),
    })
}

/// Protected resource metadata fetched from `metadata_url` for the MCP server `server_url`,
/// answered `code` with `body`: `Ok(None)` when refused (discovery tries the next URL), else
/// the resource, the authorization server and the scopes it names. For the fuzz targets only.
///
/// # Errors
/// The message discovery reports.
#[doc(hidden)]
pub fn resource_metadata(
    server_url: &str,
    metadata_url: &str,
    code: u16,
    body: &[u8],
) -> Result<Option<String>, String> {
    let (server_url, metadata_url) = (url(server_url)?, url(metadata_url)?);
    let Some(json) = discovery::metadata_answer(&metadata_url, fetched(code, body)?)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let named = discovery::resource_document(&json, &metadata_url, &server_url, None)
        .map_err(|e| e.to_string())?;
    Ok(Some(format!("{named:?}")))
}

/// Authorization server metadata fetched from `metadata_url` for the issuer `issuer`, answered
/// `code` with `body`: `Ok(None)` when refused (discovery tries the next URL), else what the
/// client uses of it. For the fuzz targets only.
///
/// # Errors
/// The message discovery reports.
#[doc(hidden)]
pub fn server_metadata(
    issuer: &str,
    metadata_url: &str,
    code: u16,
    body: &[u8],
) -> Result<Option<String>, String> {
    let metadata_url = url(metadata_url)?;
    let Some(json) = discovery::metadata_answer(&metadata_url, fetched(code, body)?)
        .map_err(|e| e.to_string())?
    else {
        return Ok(None);
    };
    let wanted = issuer.trim_end_matches('/');
    let meta =
        discovery::server_document(&json, &metadata_url, wanted).map_err(|e| e.to_string())?;
    Ok(Some(format!("{meta:?}")))
}

/// A dynamic client registration at `endpoint` answered `code` with `body`: the client it
/// registered (`Debug`, which hides the secret). For the fuzz targets only.
///
/// # Errors
/// The message a login reports.
#[doc(hidden)]
pub fn registration(endpoint: &str, code: u16, body: &[u8]) -> Result<String, String> {
    let endpoint = url(endpoint)?;
    let client = grant::registered(&endpoint, fetched(code, body)?).map_err(|e| e.to_string())?;
    Ok(format!("{client:?}"))
}

/// The token endpoint `endpoint` answered a grant `code` with `content_type` and `body`: read
/// by the `oauth2` crate and the client as every grant's answer is, and summed up as the token
/// store would keep it (token lengths, expiry, scopes, whether the access token can be sent
/// as a header). For the fuzz targets only.
///
/// # Errors
/// The message a grant reports.
#[doc(hidden)]
pub fn token_response(
    endpoint: &str,
    code: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<String, String> {
    let endpoint = url(endpoint)?;
    let mut response = http::Response::builder().status(status(code)?);
    if let Some(ct) = content_type {
        response = response.header(http::header::CONTENT_TYPE, ct);
    }
    let response = response.body(body.to_vec()).map_err(|e| e.to_string())?;
    let client = Client {
        id: "fuzz".into(),
        secret: None,
        method: ClientAuthMethod::None,
        private_key: None,
        registered: false,
    };
    let answer = |_: oauth2::HttpRequest| {
        let response = response.clone();
        async move { Ok::<_, super::http::HttpError>(response) }
    };
    let token_client = grant::token_client(&client, &endpoint, None);
    let request = token_client
        .exchange_client_credentials()
        .request_async(&answer);
    // The answer is at hand: the request's future is ready at its first poll.
    let result = futures::executor::block_on(request);
    let g = grant::granted(result, &endpoint).map_err(|GrantError { message, .. }| message)?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Ok(format!(
        "access token of {} bytes (a header: {}), refresh token of {:?} bytes, expires at {:?} \
         (granted at {now}), scopes {:?}",
        g.access_token.len(),
        kaged_mcp_layers::auth::AuthHeader::bearer(&g.access_token).is_ok(),
        g.refresh_token.as_ref().map(String::len),
        g.expires_at(now),
        g.scopes,
    ))
}
