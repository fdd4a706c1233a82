//! The HTTP side of OAuth: metadata fetches, registration and token requests over the
//! project's own hyper client (a pool of its own, no auth layer), never following a redirect,
//! every answer bounded in size and time. [`OAuthHttp`] is also the `oauth2` crate's
//! [`AsyncHttpClient`](oauth2::AsyncHttpClient).

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use serde_json::Value;
use url::Url;

use super::dpop::{self, Audience, Dpop};
use crate::transport::http::client::{self, HttpService};
use crate::transport::http::redacted;

/// The largest answer read from an authorization server (metadata, tokens): 1 MiB.
const MAX_BODY: usize = 1024 * 1024;
/// How long one request to an authorization server may take, answer included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// A request to an authorization server or a resource's metadata that failed: it names the
/// URL (redacted) and why, never a header or a body.
#[derive(Debug, thiserror::Error)]
#[error("{method} {url}: {reason}")]
pub(crate) struct HttpError {
    method: Method,
    url: String,
    reason: String,
}

/// The client OAuth requests go through; with DPoP, each token request (every request made
/// as the `oauth2` crate's client) carries a proof, and a `use_dpop_nonce` answer is retried
/// once with the nonce.
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    client: HttpService,
    dpop: Option<Arc<Dpop>>,
}

impl std::fmt::Debug for OAuthHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthHttp").finish_non_exhaustive()
    }
}

/// A fetched answer: its status and, when it was JSON, the value.
/// Not `Debug`: the JSON may be a registration answer holding a client secret.
pub(crate) struct Fetched {
    pub(crate) status: StatusCode,
    pub(crate) json: Option<Value>,
}

impl OAuthHttp {
    pub(crate) fn new() -> Self {
        Self {
            client: client::client(None, CONNECT_TIMEOUT),
            dpop: None,
        }
    }

    /// The same client, with DPoP proofs on its token requests.
    pub(crate) fn with_dpop(mut self, dpop: Arc<Dpop>) -> Self {
        self.dpop = Some(dpop);
        self
    }

    /// Sends a token request, with a DPoP proof when DPoP is on; a 400 `use_dpop_nonce` with
    /// a new `DPoP-Nonce` is sent once more with a proof carrying it (RFC 9449 section 8).
    async fn send_token_request(
        &self,
        request: oauth2::HttpRequest,
    ) -> Result<Response<Bytes>, HttpError> {
        let Some(dpop) = &self.dpop else {
            return self.send(token_request(request, None)?).await;
        };
        let mut retried = false;
        loop {
            let proof = dpop
                .proof(
                    Audience::Token,
                    request.method().as_str(),
                    &request.uri().to_string(),
                    None,
                )
                .map_err(|e| HttpError::of(&request, e.to_string()))?;
            let response = self
                .send(token_request(request.clone(), Some(&proof))?)
                .await?;
            let nonce = response
                .headers()
                .get(DPOP_NONCE)
                .and_then(|v| dpop::nonce_of(v.as_bytes()));
            let changed = nonce.is_some_and(|n| dpop.set_nonce(Audience::Token, n));
            let asks_nonce = response.status() == StatusCode::BAD_REQUEST
                && serde_json::from_slice::<Value>(response.body())
                    .ok()
                    .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
                    .as_deref()
                    == Some("use_dpop_nonce");
            if !asks_nonce || !changed || retried {
                return Ok(response);
            }
            tracing::debug!("the token endpoint asked for a DPoP nonce; sending again with it");
            retried = true;
        }
    }

    /// Sends `req` and reads the whole answer (at most [`MAX_BODY`]).
    pub(crate) async fn send(
        &self,
        req: Request<Full<Bytes>>,
    ) -> Result<Response<Bytes>, HttpError> {
        let method = req.method().clone();
        let url = match Url::parse(&req.uri().to_string()) {
            Ok(u) => redacted(&u),
            Err(_) => req.uri().path().to_owned(),
        };
        let client = self.client.clone();
        match tokio::time::timeout(REQUEST_TIMEOUT, client::fetch(client, req, MAX_BODY)).await {
            Ok(Ok(response)) => Ok(response),
            Ok(Err(reason)) => Err(HttpError {
                method,
                url,
                reason,
            }),
            Err(_) => Err(HttpError {
                method,
                url,
                reason: format!("no answer within {} s", REQUEST_TIMEOUT.as_secs()),
            }),
        }
    }

    /// `GET url` with `Accept: application/json`.
    pub(crate) async fn get_json(&self, url: &Url) -> Result<Fetched, HttpError> {
        let response = self
            .send(build(Method::GET, url, "application/json", None)?)
            .await?;
        Ok(fetched(&response))
    }

    /// `POST url` with a JSON body.
    pub(crate) async fn post_json(&self, url: &Url, body: &Value) -> Result<Fetched, HttpError> {
        let req = build(
            Method::POST,
            url,
            "application/json",
            Some(body.to_string()),
        )?;
        let response = self.send(req).await?;
        Ok(fetched(&response))
    }

    /// `POST url` with an MCP `initialize` and no credentials: the probe whose 401 says where
    /// to authorize.
    pub(crate) async fn probe(&self, url: &Url) -> Result<Response<Bytes>, HttpError> {
        let body = serde_json::json!({
            "jsonrpc": "2.0", "id": 0, "method": "initialize",
            "params": {
                "protocolVersion": crate::protocol::LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "kaged-mcp", "version": env!("CARGO_PKG_VERSION")}
            }
        });
        let accept = "application/json, text/event-stream";
        self.send(build(Method::POST, url, accept, Some(body.to_string()))?)
            .await
    }
}

/// A request to `url` accepting `accept`, with a JSON body when given.
fn build(
    method: Method,
    url: &Url,
    accept: &str,
    json: Option<String>,
) -> Result<Request<Full<Bytes>>, HttpError> {
    let mut builder = Request::builder()
        .method(method.clone())
        .uri(url.as_str())
        .header(ACCEPT, accept);
    if json.is_some() {
        builder = builder.header(CONTENT_TYPE, "application/json");
    }
    builder
        .body(Full::new(json.map(Bytes::from).unwrap_or_default()))
        .map_err(|e| HttpError {
            method,
            url: redacted(url),
            reason: e.to_string(),
        })
}

fn fetched(response: &Response<Bytes>) -> Fetched {
    Fetched {
        status: response.status(),
        json: serde_json::from_slice(response.body()).ok(),
    }
}

impl<'c> oauth2::AsyncHttpClient<'c> for OAuthHttp {
    type Error = HttpError;
    type Future =
        Pin<Box<dyn Future<Output = Result<oauth2::HttpResponse, HttpError>> + Send + 'c>>;

    fn call(&'c self, request: oauth2::HttpRequest) -> Self::Future {
        Box::pin(async move {
            let response = self.send_token_request(request).await?;
            let (parts, body) = response.into_parts();
            Ok(Response::from_parts(parts, body.to_vec()))
        })
    }
}

/// The `DPoP-Nonce` header (RFC 9449 section 8).
const DPOP_NONCE: &str = "dpop-nonce";

/// A token request as sent: its `Authorization` (client credentials) marked sensitive, and a
/// `DPoP` proof when given.
fn token_request(
    request: oauth2::HttpRequest,
    proof: Option<&str>,
) -> Result<Request<Full<Bytes>>, HttpError> {
    let (mut parts, body) = request.into_parts();
    if let Some(v) = parts.headers.get_mut(AUTHORIZATION) {
        v.set_sensitive(true);
    }
    if let Some(p) = proof {
        let mut value = HeaderValue::from_str(p).map_err(|e| HttpError {
            method: parts.method.clone(),
            url: parts.uri.path().to_owned(),
            reason: e.to_string(),
        })?;
        value.set_sensitive(true);
        parts.headers.insert("dpop", value);
    }
    Ok(Request::from_parts(parts, Full::new(Bytes::from(body))))
}

impl HttpError {
    /// A failure to prepare `request`, for `reason`.
    fn of(request: &oauth2::HttpRequest, reason: String) -> Self {
        Self {
            method: request.method().clone(),
            url: match Url::parse(&request.uri().to_string()) {
                Ok(u) => redacted(&u),
                Err(_) => request.uri().path().to_owned(),
            },
            reason,
        }
    }
}
