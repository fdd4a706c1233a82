//! One HTTP exchange and the one place that decides what its answer means.
//!
//! Every request either HTTP transport sends (a POST, the GET of an event stream, a resumption,
//! a DELETE) goes through [`exchange`]: it sends the request under a time bound, resends an
//! idempotent one once when a pooled connection closed under it, and classifies what came
//! back into an [`Outcome`], the way tower-http's `ClassifyResponse` does for a service. The
//! callers then say what an outcome means for them ([`Outcome::into_failure`] for a request's
//! [`SendFailure`], [`Outcome::into_connect_error`] for a handshake's [`TransportError`]),
//! so a redirect, a 401 or a 429 means the same on every path of both transports.
//!
//! A refusal's message names the status, the URL and what the server said (the start of its
//! body is read here, bounded: see [`refusal`](super::refusal)); it speaks of credentials only
//! when the server did (a 401, a `WWW-Authenticate` challenge). A connection failure's message
//! is the operator's line (`cannot connect to <url>: connection refused`) and the error chain
//! its [`detail`](SendFailure::detail).

use std::io;
use std::time::Duration;

use bytes::Bytes;
use http::header;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use tower::ServiceExt;
use url::Url;

use super::client::{Body, HttpService};
use super::refusal::{read_start, Said};
use super::{
    chain, closed_before_answer, io_kind, never_connected, origin, redacted, same_origin,
    token_error,
};
use crate::transport::{is_transient_status, SendFailure, TransportError};

/// How one exchange is sent and read.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Exchange<'a> {
    /// What it is, for messages: `the POST`, `the GET`, `the DELETE`.
    pub(crate) what: &'a str,
    /// The bound on sending it and receiving the answer's head (`None`: the caller bounds
    /// it, as a request's own timeout does).
    pub(crate) timeout: Option<Duration>,
    /// Safe to send twice (GET, DELETE): sent once more on a fresh connection when a pooled
    /// one closed under it before any answer.
    pub(crate) idempotent: bool,
    /// The URL it went to: a redirect is described against it, a refusal names it.
    pub(crate) url: &'a Url,
    /// It is the first request of a session (nothing at the URL answered yet), and this the
    /// path its endpoint usually ends with (`/mcp`): a `404` then questions the URL's path.
    pub(crate) first: Option<&'static str>,
}

/// What came of an exchange. See the [module docs](self).
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A `2xx` answer.
    Answered(Response<Body>),
    /// It never left the client: the request could not be built, its credentials could not
    /// be had (`login`: the operator must log in), or no connection could be made
    /// (`reachable: false`). `message` is the operator's line, `detail` the error chain
    /// behind it.
    Unsent {
        message: String,
        detail: Option<String>,
        unreachable: bool,
        login: bool,
        io: io::ErrorKind,
    },
    /// No answer: the time bound passed, or the connection failed after the request went out
    /// (`message` and `detail` as for [`Unsent`](Self::Unsent)).
    NoAnswer {
        message: String,
        detail: Option<String>,
        io: io::ErrorKind,
    },
    /// `404` to a request that carried the session id: the server ended the session.
    Expired,
    /// A `3xx`: never followed, so nothing is sent anywhere but the configured URL.
    Redirect { status: StatusCode, target: String },
    /// `401` or `403`.
    AuthRefused(Refusal),
    /// Any other status: a `4xx` was refused without being processed (`transient` for 408,
    /// 425 and 429), after a `5xx` nobody knows.
    Refused(Refusal),
}

/// A status that refused an exchange: the answer, the start of its body, what the server said
/// in them, and where.
#[derive(Debug)]
pub(crate) struct Refusal {
    pub(crate) status: StatusCode,
    /// The answer; its body holds what is left after [`start`](Self::start).
    pub(crate) response: Response<Body>,
    /// The first bytes of the body, read by [`exchange`] (bounded: see
    /// [`refusal`](super::refusal)).
    pub(crate) start: Bytes,
    said: Said,
    /// The URL, redacted.
    url: String,
    /// What a `404` to the first request of a session asks the operator.
    path_hint: Option<String>,
}

/// A request as built for one exchange, and whether it carries a session id (then a `404`
/// means the server ended that session).
pub(crate) type Built = (Request<Full<Bytes>>, bool);

/// Sends the request `make` builds and classifies the answer. `make` is called again for
/// the one resend of an idempotent request (see [`Exchange::idempotent`]).
pub(crate) async fn exchange(
    http: &HttpService,
    how: Exchange<'_>,
    make: impl Fn() -> Result<Built, http::Error>,
) -> Outcome {
    let send = send(http, how, &make);
    let mut outcome = match how.timeout {
        Some(limit) => {
            tokio::time::timeout(limit, send)
                .await
                .unwrap_or_else(|_| Outcome::NoAnswer {
                    message: format!(
                        "{} to {} got no answer within {} ms",
                        how.what,
                        redacted(how.url),
                        limit.as_millis()
                    ),
                    detail: None,
                    io: io::ErrorKind::TimedOut,
                })
        }
        None => send.await,
    };
    // Outside the time bound: the read has its own, short one.
    if let Outcome::AuthRefused(refusal) | Outcome::Refused(refusal) = &mut outcome {
        refusal.read_start().await;
    }
    outcome
}

/// Sends the request, once more on a closed pooled connection when it is idempotent, and
/// classifies the answer.
async fn send(
    http: &HttpService,
    how: Exchange<'_>,
    make: &(impl Fn() -> Result<Built, http::Error> + '_),
) -> Outcome {
    let unbuilt = |e: http::Error| Outcome::Unsent {
        message: format!("cannot build {} request: {e}", how.what),
        detail: None,
        unreachable: false,
        login: false,
        io: io::ErrorKind::InvalidInput,
    };
    let (request, with_session) = match make() {
        Ok(built) => built,
        Err(e) => return unbuilt(e),
    };
    match http.clone().oneshot(request).await {
        Ok(response) => classify(response, how, with_session),
        Err(e) if how.idempotent && closed_before_answer(&*e) => {
            tracing::debug!(
                what = how.what,
                "pooled connection closed under the request; sending it again"
            );
            let (request, with_session) = match make() {
                Ok(built) => built,
                Err(e) => return unbuilt(e),
            };
            match http.clone().oneshot(request).await {
                Ok(response) => classify(response, how, with_session),
                Err(e) => unsent_or_lost(how, &*e),
            }
        }
        Err(e) => unsent_or_lost(how, &*e),
    }
}

/// A client error of the HTTP stack: the request never left (no connection, no
/// credentials) or its answer was lost.
fn unsent_or_lost(how: Exchange<'_>, err: &(dyn std::error::Error + 'static)) -> Outcome {
    if let Some(token) = token_error(err) {
        return Outcome::Unsent {
            message: format!("authorization: {}", chain(token)),
            detail: None,
            unreachable: false,
            login: token.is_login_required(),
            io: io::ErrorKind::PermissionDenied,
        };
    }
    let url = redacted(how.url);
    let cause = cause(err, how.url);
    let detail = Some(chain(err));
    let io = io_kind(err);
    if never_connected(err) {
        Outcome::Unsent {
            message: format!("cannot connect to {url}: {cause}"),
            detail,
            unreachable: true,
            login: false,
            io,
        }
    } else {
        Outcome::NoAnswer {
            message: format!("{} to {url} got no answer: {cause}", how.what),
            detail,
            io,
        }
    }
}

/// What went wrong with a connection, in a few words (`connection refused`, `timed out`,
/// `cannot resolve host`): from hyper's error or the I/O error's kind, else the first line of
/// the innermost error.
fn cause(err: &(dyn std::error::Error + 'static), url: &Url) -> String {
    let mut innermost = err;
    let mut next = Some(err);
    while let Some(e) = next {
        if e.to_string().starts_with("dns error") {
            return "cannot resolve host".to_owned();
        }
        if e.downcast_ref::<hyper::Error>()
            .is_some_and(hyper::Error::is_incomplete_message)
        {
            return "the connection closed before the answer".to_owned();
        }
        innermost = e;
        next = e.source();
    }
    let first_line = || {
        let text = innermost.to_string();
        text.lines().next().unwrap_or_default().trim().to_owned()
    };
    match io_kind(err) {
        io::ErrorKind::ConnectionRefused => "connection refused".to_owned(),
        io::ErrorKind::TimedOut => "timed out".to_owned(),
        io::ErrorKind::ConnectionReset => "connection reset".to_owned(),
        io::ErrorKind::ConnectionAborted => "connection aborted".to_owned(),
        io::ErrorKind::BrokenPipe | io::ErrorKind::NotConnected | io::ErrorKind::UnexpectedEof => {
            "the connection closed".to_owned()
        }
        io::ErrorKind::HostUnreachable => "host unreachable".to_owned(),
        io::ErrorKind::NetworkUnreachable => "network unreachable".to_owned(),
        io::ErrorKind::AddrNotAvailable => "address not available".to_owned(),
        io::ErrorKind::InvalidData if url.scheme() == "https" => {
            format!("TLS failed: {}", first_line())
        }
        _ => first_line(),
    }
}

/// What an answer means: see the [module docs](self). The start of a refusal's body is read
/// later, by [`exchange`].
pub(super) fn classify(response: Response<Body>, how: Exchange<'_>, with_session: bool) -> Outcome {
    let status = response.status();
    if status.is_success() {
        return Outcome::Answered(response);
    }
    if status == StatusCode::NOT_FOUND && with_session {
        return Outcome::Expired;
    }
    if status.is_redirection() {
        let to = response
            .headers()
            .get(header::LOCATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|l| how.url.join(l).ok());
        let target = match to {
            Some(url) if same_origin(&url, how.url) => format!("{} on the same origin", url.path()),
            Some(url) => format!("another origin ({})", origin(&url)),
            None => "nowhere valid".to_owned(),
        };
        return Outcome::Redirect { status, target };
    }
    let path_hint = match how.first {
        Some(usual) if status == StatusCode::NOT_FOUND => {
            let mut hint = "is the MCP endpoint path right?".to_owned();
            if !how.url.path().trim_end_matches('/').ends_with(usual) {
                hint.push_str(&format!(" (it is often …{usual})"));
            }
            Some(hint)
        }
        _ => None,
    };
    let refusal = Refusal {
        status,
        said: Said::from_headers(response.headers()),
        response,
        start: Bytes::new(),
        url: redacted(how.url),
        path_hint,
    };
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Outcome::AuthRefused(refusal);
    }
    Outcome::Refused(refusal)
}

impl Refusal {
    /// Reads the start of the body and adds its words to what the server said.
    async fn read_start(&mut self) {
        self.start = read_start(self.response.body_mut()).await;
        let content_type = self
            .response
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok());
        self.said.add_body(content_type, &self.start);
    }

    /// Takes what is left of the body (leaving it empty), for the caller to read or drain.
    pub(crate) fn take_body(&mut self) -> Body {
        std::mem::replace(self.response.body_mut(), super::empty_body())
    }

    /// The server said the refusal is about credentials: a `401`, or a `WWW-Authenticate`
    /// challenge with any status (a `403` with `insufficient_scope`, a `400` with
    /// `invalid_request`). A plain `403` is not: a Host check or an allow-list refuses so too.
    fn about_auth(&self) -> bool {
        self.status == StatusCode::UNAUTHORIZED || self.said.is_challenge()
    }

    /// The operator's line for a refusal of `what` (`the POST`): `the server refused the POST:
    /// 403 Forbidden at <url>: "<its words>"`; with the hint to check `auth` (the server's
    /// credentials, as `auth_hint` names them) when the server spoke of credentials, and the
    /// one about the endpoint's path for a `404` to a session's first request.
    fn message(&self, what: &str, auth_hint: &str) -> String {
        let Self {
            status, url, said, ..
        } = self;
        if self.about_auth() {
            return format!(
                "authentication refused: {what} was answered {status} at {url}{said}; check \
                 the server's `auth` and {auth_hint}"
            );
        }
        if status.is_server_error() {
            return format!("{what} was answered {status} at {url}{said}");
        }
        match &self.path_hint {
            Some(hint) => format!("the server refused {what}: {status} at {url}{said}; {hint}"),
            None => format!("the server refused {what}: {status} at {url}{said}"),
        }
    }
}

impl Outcome {
    /// Takes the body of a refusal's answer (left empty), for the caller to read or drain.
    pub(crate) fn take_body(&mut self) -> Option<Body> {
        match self {
            Self::AuthRefused(refusal) | Self::Refused(refusal) => Some(refusal.take_body()),
            _ => None,
        }
    }

    /// The HTTP status that answered, if one did.
    pub(crate) fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Answered(r) => Some(r.status()),
            Self::Redirect { status, .. } => Some(*status),
            Self::AuthRefused(refusal) | Self::Refused(refusal) => Some(refusal.status),
            Self::Expired => Some(StatusCode::NOT_FOUND),
            Self::Unsent { .. } | Self::NoAnswer { .. } => None,
        }
    }

    /// Whether the server refused the request in a way that passes (408, 425, 429), or gave
    /// no answer: trying the same again later may succeed.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            Self::Refused(Refusal { status, .. }) => {
                is_transient_status(status.as_u16()) || status.is_server_error()
            }
            Self::NoAnswer { .. } => true,
            Self::Unsent { unreachable, .. } => *unreachable,
            _ => false,
        }
    }

    /// What a failed exchange means for the request it carried. `auth` names the server's
    /// credentials, for a refusal the server said was about them ("its secret `api.key` in
    /// local.toml"). Not for
    /// [`Outcome::Answered`] nor [`Outcome::Expired`], which the caller handles (a
    /// `2xx` is read; an expiry ends the session): those say so if asked anyway.
    pub(crate) fn into_failure(self, what: &str, auth: &str) -> SendFailure {
        match self {
            Self::Answered(r) => {
                SendFailure::unknown(format!("the answer {} was not read", r.status()))
            }
            Self::Unsent {
                message,
                detail,
                unreachable,
                login,
                ..
            } => with_detail(
                match (unreachable, login) {
                    (_, true) => SendFailure::permanent(message),
                    (true, false) => SendFailure::unreachable(message),
                    (false, false) => SendFailure::unsent(message),
                },
                detail,
            ),
            Self::NoAnswer {
                message, detail, ..
            } => with_detail(SendFailure::unknown(message), detail),
            Self::Expired => SendFailure::expired(format!(
                "the session expired ({what} answered 404 Not Found); a new one is started"
            )),
            Self::Redirect { status, target } => {
                SendFailure::permanent(redirect_message(what, status, &target))
                    .status(status.as_u16())
            }
            Self::AuthRefused(refusal) => {
                SendFailure::permanent(refusal.message(what, auth)).status(refusal.status.as_u16())
            }
            Self::Refused(refusal) if refusal.status.is_client_error() => {
                SendFailure::refused(refusal.message(what, auth), refusal.status.as_u16())
            }
            Self::Refused(refusal) => {
                SendFailure::unknown(refusal.message(what, auth)).status(refusal.status.as_u16())
            }
        }
    }

    /// What a failed exchange means for a handshake (legacy SSE's `GET` of its stream):
    /// a [`TransportError`] naming the server, the request and the URL, its source the I/O
    /// error behind a connection failure (with the error chain). A refusal trying again cannot
    /// fix (401, 403, a redirect, a login to make) is permanent, so the client marks the
    /// server failed at once instead of restarting it with backoff.
    pub(crate) fn into_connect_error(
        self,
        server: &str,
        what: &str,
        shown: &str,
        auth: &str,
    ) -> TransportError {
        match self {
            Self::Unsent {
                message,
                detail,
                login,
                io,
                ..
            } => {
                let source = io::Error::new(io, detail.unwrap_or_else(|| message.clone()));
                let error = TransportError::io(format!("server `{server}`: {message}"), source);
                if login {
                    error.permanent()
                } else {
                    error
                }
            }
            Self::NoAnswer {
                message,
                detail,
                io,
                ..
            } => TransportError::io(
                format!("server `{server}`: {message}"),
                io::Error::new(io, detail.unwrap_or_else(|| message.clone())),
            ),
            Self::Redirect { status, target } => TransportError::io(
                format!(
                    "server `{server}`: {}",
                    redirect_message(&format!("{what} of {shown}"), status, &target)
                ),
                io::Error::new(io::ErrorKind::PermissionDenied, "redirect not followed"),
            )
            .permanent(),
            Self::AuthRefused(refusal) => TransportError::io(
                format!("server `{server}`: {}", refusal.message(what, auth)),
                io::Error::new(
                    io::ErrorKind::PermissionDenied,
                    format!("HTTP {}", refusal.status),
                ),
            )
            .permanent(),
            Self::Refused(refusal) => TransportError::new(format!(
                "server `{server}`: {}",
                refusal.message(what, auth)
            )),
            Self::Expired | Self::Answered(_) => {
                let status = self.status().unwrap_or_default();
                TransportError::new(format!(
                    "server `{server}`: {what} of {shown} was answered {status}"
                ))
            }
        }
    }
}

/// A failure with the error chain behind it, if any.
fn with_detail(failure: SendFailure, detail: Option<String>) -> SendFailure {
    match detail {
        Some(detail) => failure.with_detail(detail),
        None => failure,
    }
}

/// "`what` was answered 307 Temporary Redirect to another origin (…); redirects are not
/// followed, …".
fn redirect_message(what: &str, status: StatusCode, target: &str) -> String {
    format!(
        "{what} was answered {status} to {target}; redirects are not followed, so nothing is \
         sent anywhere but the configured url"
    )
}
