//! The loopback redirect listener of a login (RFC 8252 §7.3): `http://127.0.0.1:<ephemeral
//! port>/callback`, one redirect awaited, its `state` and `iss` (RFC 9207) checked. Each
//! connection is served by hyper's HTTP/1 server, its head bounded (8 KiB, read within 10 s)
//! and closed after its answer; anything but `GET /callback` gets a 404 and the wait goes on.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bytes::Bytes;
use http::header::{HeaderValue, CACHE_CONTROL, CONTENT_TYPE};
use http::{Method, Request, Response, StatusCode};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

use super::error::RedirectError;
use super::grant::{parse_redirect, RedirectParams};

/// The most bytes of a request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long one connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound listener waiting for the authorization server's redirect.
#[derive(Debug)]
pub(crate) struct Callback {
    listener: TcpListener,
    redirect_uri: Url,
}

impl Callback {
    /// Binds `127.0.0.1` on a port the system picks.
    pub(crate) async fn bind() -> Result<Self, RedirectError> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(RedirectError::Listen)?;
        let port = listener.local_addr().map_err(RedirectError::Accept)?.port();
        let redirect_uri = Url::parse(&format!("http://127.0.0.1:{port}/callback"))
            .map_err(|e| RedirectError::Listen(std::io::Error::other(e)))?;
        Ok(Self {
            listener,
            redirect_uri,
        })
    }

    /// The redirect URI to register and send.
    pub(crate) fn redirect_uri(&self) -> &Url {
        &self.redirect_uri
    }

    /// Waits for the redirect and returns its code, once its `state` matched `state` (a
    /// redirect with another `state`, or none, is answered and ignored) and its
    /// `iss` (RFC 9207) the authorization server's issuer `issuer` (`Some` when the issuer
    /// was published in its metadata): a present `iss` must equal it, byte for byte, and one
    /// is required when `iss_required` (the server says it sends it).
    pub(crate) async fn code(
        &self,
        state: &str,
        issuer: Option<&str>,
        iss_required: bool,
    ) -> Result<String, RedirectError> {
        loop {
            let (stream, _) = self
                .listener
                .accept()
                .await
                .map_err(RedirectError::Accept)?;
            let Some(query) = read_callback(stream, state).await else {
                continue;
            };
            let RedirectParams {
                code,
                state: got,
                error,
                error_description,
                iss,
            } = query;
            if got.as_deref() != Some(state) {
                // Answered ("does not belong to the login in progress") and ignored: any local
                // process can reach this port, and must not be able to end the login.
                tracing::warn!("a redirect whose state is not the login's was ignored (a stale or forged redirect); still waiting for the login's own");
                continue;
            }
            match (iss.as_deref(), issuer) {
                (Some(got), Some(expected)) if got != expected => {
                    return Err(RedirectError::WrongIssuer {
                        got: got.to_owned(),
                        expected: expected.to_owned(),
                    });
                }
                (None, _) if iss_required => return Err(RedirectError::NoIssuer),
                _ => {}
            }
            if let Some(error) = error {
                return Err(RedirectError::Refused {
                    error,
                    description: error_description,
                });
            }
            return code.ok_or(RedirectError::NoCode);
        }
    }
}

/// Serves one connection with hyper's HTTP/1 server (its head bounded to [`MAX_HEAD`] and read
/// within [`READ_TIMEOUT`], the connection closed after its answer): answers its request, and
/// returns the query of a `GET /callback`.
async fn read_callback(stream: TcpStream, state: &str) -> Option<RedirectParams> {
    let found: Arc<Mutex<Option<RedirectParams>>> = Arc::default();
    let service = {
        let (found, state) = (Arc::clone(&found), state.to_owned());
        service_fn(move |req: Request<Incoming>| {
            let answer = answer(&req, &state, &found);
            async move { Ok::<_, std::convert::Infallible>(answer) }
        })
    };
    let connection = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(READ_TIMEOUT)
        .max_buf_size(MAX_HEAD)
        .keep_alive(false)
        .serve_connection(TokioIo::new(stream), service);
    // A client that sends nothing, or too much, ends the connection; the wait goes on.
    let _ = tokio::time::timeout(READ_TIMEOUT, connection).await;
    let params = found
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .take();
    params
}

/// The answer to one request; the query of a `GET /callback` is kept in `found`.
fn answer(
    req: &Request<Incoming>,
    state: &str,
    found: &Mutex<Option<RedirectParams>>,
) -> Response<Full<Bytes>> {
    if req.method() != Method::GET || req.uri().path() != "/callback" {
        return respond(StatusCode::NOT_FOUND, "Not found.");
    }
    let params = parse_redirect(req.uri().query().unwrap_or(""));
    let body = if params.state.as_deref() != Some(state) {
        "This redirect does not belong to the login in progress."
    } else if params.error.is_some() {
        "The authorization server refused the login; see the terminal."
    } else {
        "kaged-mcp is logged in. You can close this tab."
    };
    *found
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(params);
    respond(StatusCode::OK, body)
}

/// A plain-text answer that no cache keeps.
fn respond(status: StatusCode, body: &'static str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from_static(body.as_bytes())));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(
        CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The code `code()` gives back for a redirect with `query`, expecting `issuer`.
    async fn redirect(query: &str, issuer: Option<&str>, required: bool) -> Result<String, String> {
        let callback = Callback::bind().await.unwrap();
        let port = callback.redirect_uri().port().unwrap();
        let request = format!("GET /callback?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        let sender = tokio::spawn(async move {
            let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            s.write_all(request.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer).await;
        });
        let code = callback
            .code("st", issuer, required)
            .await
            .map_err(|e| e.to_string());
        sender.await.unwrap();
        code
    }

    #[tokio::test]
    async fn the_issuer_of_the_redirect_is_checked_as_rfc_9207_says() {
        let as_ = Some("https://as.example/tenant");
        // The same issuer, byte for byte.
        let ok = redirect(
            "code=c1&state=st&iss=https%3A%2F%2Fas.example%2Ftenant",
            as_,
            true,
        );
        assert_eq!(ok.await.unwrap(), "c1");
        // Another issuer, or the same one "normalized": refused.
        for iss in [
            "https%3A%2F%2Fevil.example",
            "https%3A%2F%2Fas.example%2Ftenant%2F",
        ] {
            let e = redirect(&format!("code=c1&state=st&iss={iss}"), as_, false)
                .await
                .unwrap_err();
            assert!(
                e.contains("RFC 9207") && e.contains("refusing its code"),
                "{e}"
            );
        }
        // Missing where the server says it sends one: refused; else accepted.
        let e = redirect("code=c1&state=st", as_, true).await.unwrap_err();
        assert!(
            e.contains("authorization_response_iss_parameter_supported"),
            "{e}"
        );
        assert_eq!(
            redirect("code=c1&state=st", as_, false).await.unwrap(),
            "c1"
        );
        // No published issuer (2025-03-26 default endpoints): nothing to compare with.
        let any = redirect("code=c1&state=st&iss=https%3A%2F%2Fx", None, false);
        assert_eq!(any.await.unwrap(), "c1");
    }

    /// A redirect that is not the login's (another `state`, or none, even one carrying an
    /// error) is answered and ignored: the login's own redirect, coming after, still logs in.
    #[tokio::test]
    async fn a_redirect_with_another_state_is_ignored_and_the_login_goes_on() {
        let callback = Callback::bind().await.unwrap();
        let port = callback.redirect_uri().port().unwrap();
        let sender = tokio::spawn(async move {
            let mut answers = Vec::new();
            for query in [
                "code=forged&state=other",
                "error=access_denied",
                "code=c2&state=st",
            ] {
                let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                let request = format!("GET /callback?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
                s.write_all(request.as_bytes()).await.unwrap();
                let mut answer = Vec::new();
                let _ = s.read_to_end(&mut answer).await;
                answers.push(String::from_utf8_lossy(&answer).into_owned());
            }
            answers
        });
        assert_eq!(callback.code("st", None, false).await.unwrap(), "c2");
        let answers = sender.await.unwrap();
        assert!(
            answers[0].ends_with("does not belong to the login in progress."),
            "{answers:?}"
        );
        assert!(
            answers[1].ends_with("does not belong to the login in progress."),
            "{answers:?}"
        );
        assert!(
            answers[2].ends_with("You can close this tab."),
            "{answers:?}"
        );
    }

    /// A request whose head passes 8 KiB, or that is not `GET /callback`, is answered with an
    /// error by hyper's server and ignored; the login's redirect after it still logs in.
    #[tokio::test]
    async fn an_oversize_or_foreign_request_is_refused_and_the_login_goes_on() {
        let callback = Callback::bind().await.unwrap();
        let port = callback.redirect_uri().port().unwrap();
        let sender = tokio::spawn(async move {
            let mut answers = Vec::new();
            for request in [
                format!("GET /callback?pad={} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", "x".repeat(9000)),
                "POST /callback?code=c9&state=st HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\n\r\n".to_owned(),
                "GET /callback?code=c3&state=st HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".to_owned(),
            ] {
                let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                let _ = s.write_all(request.as_bytes()).await;
                let mut answer = Vec::new();
                let _ = s.read_to_end(&mut answer).await;
                answers.push(String::from_utf8_lossy(&answer).into_owned());
            }
            answers
        });
        assert_eq!(callback.code("st", None, false).await.unwrap(), "c3");
        let answers = sender.await.unwrap();
        assert!(answers[0].starts_with("HTTP/1.1 431"), "{answers:?}");
        assert!(answers[1].starts_with("HTTP/1.1 404"), "{answers:?}");
        assert!(
            answers[2].starts_with("HTTP/1.1 200")
                && answers[2].contains("cache-control: no-store"),
            "{answers:?}"
        );
    }
}
