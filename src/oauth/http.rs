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
use crate::transport::http::client::{self, FetchError, HttpService};
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
    reason: Reason,
}

/// Why an [`HttpError`] failed.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Reason {
    /// No answer within the request timeout.
    TimedOut(Duration),
    /// An answer longer than the body limit (refused unread when its length said so).
    TooLarge { limit: usize },
    /// Anything else: the request could not be built or sent, or its answer read.
    Failed(String),
}

impl std::fmt::Display for Reason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::TimedOut(d) if d.subsec_millis() == 0 && d.as_secs() > 0 => {
                write!(f, "timed out: no answer within {} s", d.as_secs())
            }
            Self::TimedOut(d) => write!(f, "timed out: no answer within {} ms", d.as_millis()),
            Self::TooLarge { limit } => FetchError::TooLarge { limit: *limit }.fmt(f),
            Self::Failed(reason) => f.write_str(reason),
        }
    }
}

/// The client OAuth requests go through; with DPoP, each token request (every request made
/// as the `oauth2` crate's client) carries a proof, and a `use_dpop_nonce` answer is retried
/// once with the nonce.
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    client: HttpService,
    dpop: Option<Arc<Dpop>>,
    /// [`REQUEST_TIMEOUT`]; shorter in this module's tests (not a setting: no server has
    /// asked for one).
    timeout: Duration,
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
            timeout: REQUEST_TIMEOUT,
        }
    }

    /// The same client, giving up on a request after `timeout` instead of [`REQUEST_TIMEOUT`].
    #[cfg(test)]
    fn with_timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
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
        let reason =
            match tokio::time::timeout(self.timeout, client::fetch(client, req, MAX_BODY)).await {
                Ok(Ok(response)) => return Ok(response),
                Ok(Err(FetchError::TooLarge { limit })) => Reason::TooLarge { limit },
                Ok(Err(FetchError::Failed(reason))) => Reason::Failed(reason),
                Err(_) => Reason::TimedOut(self.timeout),
            };
        Err(HttpError {
            method,
            url,
            reason,
        })
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
            reason: Reason::Failed(e.to_string()),
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
            reason: Reason::Failed(e.to_string()),
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
            reason: Reason::Failed(reason),
        }
    }

    /// Why it failed, without the method and the URL.
    pub(crate) fn reason(&self) -> &impl std::fmt::Display {
        &self.reason
    }

    /// Whether no answer came within the request timeout.
    #[cfg(test)]
    fn is_timeout(&self) -> bool {
        matches!(self.reason, Reason::TimedOut(_))
    }

    /// The body limit an answer was longer than, if that is why it failed.
    #[cfg(test)]
    fn too_large(&self) -> Option<usize> {
        match self.reason {
            Reason::TooLarge { limit } => Some(limit),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    //! The client against in-process listeners that misbehave: one that never answers, and
    //! answers longer than [`MAX_BODY`], declared or streamed without end.

    use std::time::Instant;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};

    use super::*;
    use crate::config::ClientAuthMethod;
    use crate::oauth::grant::{self, Client};

    const REFRESH_TOKEN: &str = "rt-SECRET-5f0e21";

    /// A listener on 127.0.0.1 and the base URL of its port.
    async fn listener() -> (TcpListener, String) {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", l.local_addr().unwrap());
        (l, base)
    }

    /// Reads one request's head and its `Content-Length` body; the head as text.
    async fn read_request(tcp: &mut TcpStream) -> String {
        let mut raw = Vec::new();
        let mut buf = [0u8; 4096];
        let head_end = loop {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client hung up before sending a whole request");
            raw.extend_from_slice(&buf[..n]);
            if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
                break i + 4;
            }
        };
        let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|l| {
                let (k, v) = l.split_once(':')?;
                k.eq_ignore_ascii_case("content-length")
                    .then(|| v.trim().parse().unwrap())
            })
            .unwrap_or(0);
        while raw.len() < head_end + length {
            let n = tcp.read(&mut buf).await.unwrap();
            assert!(n > 0, "the client hung up inside its request body");
            raw.extend_from_slice(&buf[..n]);
        }
        head
    }

    fn public_client() -> Client {
        Client {
            id: "c".into(),
            secret: None,
            method: ClientAuthMethod::None,
            private_key: None,
            registered: false,
        }
    }

    /// A refresh sent to `endpoint`: the grant's error message.
    async fn refresh_error(http: &OAuthHttp, endpoint: &Url) -> String {
        let err = grant::refresh(http, endpoint, "", &public_client(), REFRESH_TOKEN, None)
            .await
            .err()
            .expect("the refresh must fail");
        assert!(!err.invalid_grant && !err.refused, "{}", err.message);
        assert!(!err.message.contains(REFRESH_TOKEN), "{}", err.message);
        err.message
    }

    #[tokio::test]
    async fn a_token_endpoint_that_never_answers_times_out_naming_itself() {
        let (l, base) = listener().await;
        let endpoint = Url::parse(&format!("{base}/as/token")).unwrap();
        let (heard, got_request) = tokio::sync::oneshot::channel();
        let server = tokio::spawn(async move {
            let (mut tcp, _) = l.accept().await.unwrap();
            let head = read_request(&mut tcp).await;
            heard.send(head).unwrap();
            // Holds the connection open, answering nothing, until the client hangs up.
            let mut rest = Vec::new();
            let _ = tcp.read_to_end(&mut rest).await;
        });
        let timeout = Duration::from_millis(300);
        let http = OAuthHttp::new().with_timeout(timeout);
        let started = Instant::now();
        let message = refresh_error(&http, &endpoint).await;
        let took = started.elapsed();

        // The request got there (not a connection failure), then nothing came back.
        assert!(got_request.await.unwrap().starts_with("POST /as/token "));
        assert_eq!(
            message,
            format!("the token endpoint {endpoint}: timed out: no answer within 300 ms")
        );
        assert!(took >= timeout, "{took:?}");
        // The client hung up when it gave up: the listener's connection ended.
        tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the client kept the connection open")
            .unwrap();

        // The same through `send`: a timeout, by its predicate.
        let (l, base) = listener().await;
        tokio::spawn(async move {
            let (mut tcp, _) = l.accept().await.unwrap();
            read_request(&mut tcp).await;
            let _ = tcp.read_to_end(&mut Vec::new()).await;
        });
        let url = Url::parse(&format!("{base}/.well-known/oauth-authorization-server")).unwrap();
        let err = http.get_json(&url).await.err().expect("no answer");
        assert!(err.is_timeout(), "{err}");
        assert_eq!(
            err.to_string(),
            format!("GET {url}: timed out: no answer within 300 ms")
        );
    }

    #[test]
    fn the_timeout_is_said_in_seconds_or_milliseconds() {
        assert_eq!(
            Reason::TimedOut(REQUEST_TIMEOUT).to_string(),
            "timed out: no answer within 30 s"
        );
        assert_eq!(
            Reason::TimedOut(Duration::from_millis(1500)).to_string(),
            "timed out: no answer within 1500 ms"
        );
    }

    #[tokio::test]
    async fn an_answer_declared_longer_than_the_limit_is_refused_unread() {
        let (l, base) = listener().await;
        let server = tokio::spawn(async move {
            let (mut tcp, _) = l.accept().await.unwrap();
            read_request(&mut tcp).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{{",
                MAX_BODY + 1
            );
            tcp.write_all(head.as_bytes()).await.unwrap();
            // Sends nothing more: a client that read the body would wait for it forever.
            let _ = tcp.read_to_end(&mut Vec::new()).await;
        });
        let url = Url::parse(&format!("{base}/.well-known/oauth-authorization-server")).unwrap();
        let http = OAuthHttp::new();
        let err = tokio::time::timeout(Duration::from_secs(10), http.get_json(&url))
            .await
            .expect("the client waited for the body")
            .err()
            .expect("too long");
        assert_eq!(err.too_large(), Some(MAX_BODY), "{err}");
        assert_eq!(
            err.to_string(),
            format!("GET {url}: the answer is longer than the limit of 1048576 bytes")
        );
        tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the client kept the connection open")
            .unwrap();
    }

    #[tokio::test]
    async fn an_endless_answer_is_refused_at_the_limit() {
        let (l, base) = listener().await;
        let endpoint = Url::parse(&format!("{base}/as/token")).unwrap();
        // A chunked answer that never ends: only the client's hanging up stops it.
        let server = tokio::spawn(async move {
            let (mut tcp, _) = l.accept().await.unwrap();
            read_request(&mut tcp).await;
            let head = "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
                        transfer-encoding: chunked\r\n\r\n";
            tcp.write_all(head.as_bytes()).await.unwrap();
            let chunk = format!("4000\r\n{}\r\n", " ".repeat(0x4000));
            let mut sent = 0usize;
            while tcp.write_all(chunk.as_bytes()).await.is_ok() {
                sent += 0x4000;
            }
            sent
        });
        let http = OAuthHttp::new();
        let message =
            tokio::time::timeout(Duration::from_secs(10), refresh_error(&http, &endpoint))
                .await
                .expect("the client kept reading");
        assert_eq!(
            message,
            format!("the token endpoint {endpoint}: the answer is longer than the limit of 1048576 bytes")
        );
        let sent = tokio::time::timeout(Duration::from_secs(10), server)
            .await
            .expect("the client kept the connection open")
            .unwrap();
        assert!(sent >= MAX_BODY, "{sent} bytes sent");
    }
}
