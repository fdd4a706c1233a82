//! One HTTP exchange and the one place that decides what its answer means.
//!
//! Every request either HTTP transport sends (a POST, the GET of an event stream, a resumption,
//! a DELETE) goes through [`exchange`]: it sends the request under a time bound, resends an
//! idempotent one once when a pooled connection closed under it, and classifies what came
//! back into an [`Outcome`], the way tower-http's `ClassifyResponse` does for a service. The
//! callers then say what an outcome means for them ([`Outcome::into_failure`] for a request's
//! [`SendFailure`], [`Outcome::into_connect_error`] for a handshake's [`TransportError`]),
//! so a redirect, a 401 or a 429 means the same on every path of both transports.

use std::io;
use std::time::Duration;

use bytes::Bytes;
use http::header;
use http::{Request, Response, StatusCode};
use http_body_util::Full;
use tower::ServiceExt;
use url::Url;

use super::client::{Body, HttpService};
use super::{
    chain, closed_before_answer, io_kind, never_connected, origin, same_origin, token_error,
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
    /// The URL it went to: a redirect is described against it.
    pub(crate) url: &'a Url,
}

/// What came of an exchange. See the [module docs](self).
#[derive(Debug)]
pub(crate) enum Outcome {
    /// A `2xx` answer.
    Answered(Response<Body>),
    /// It never left the client: the request could not be built, its credentials could not
    /// be had (`login`: the operator must log in), or no connection could be made
    /// (`reachable: false`).
    Unsent {
        message: String,
        unreachable: bool,
        login: bool,
        io: io::ErrorKind,
    },
    /// No answer: the time bound passed, or the connection failed after the request went out.
    /// `after` is the time bound when it was what passed.
    NoAnswer {
        message: String,
        io: io::ErrorKind,
        after: Option<Duration>,
    },
    /// `404` to a request that carried the session id: the server ended the session.
    Expired,
    /// A `3xx`: never followed, so nothing is sent anywhere but the configured URL.
    Redirect { status: StatusCode, target: String },
    /// `401` or `403`.
    AuthRefused {
        status: StatusCode,
        response: Response<Body>,
    },
    /// Any other status: a `4xx` was refused without being processed (`transient` for 408,
    /// 425 and 429), after a `5xx` nobody knows.
    Refused {
        status: StatusCode,
        response: Response<Body>,
    },
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
    match how.timeout {
        Some(limit) => {
            tokio::time::timeout(limit, send)
                .await
                .unwrap_or_else(|_| Outcome::NoAnswer {
                    message: format!("{} got no answer within {} ms", how.what, limit.as_millis()),
                    io: io::ErrorKind::TimedOut,
                    after: Some(limit),
                })
        }
        None => send.await,
    }
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
            unreachable: false,
            login: token.is_login_required(),
            io: io::ErrorKind::PermissionDenied,
        };
    }
    let message = format!("{} failed: {}", how.what, chain(err));
    let io = io_kind(err);
    if never_connected(err) {
        Outcome::Unsent {
            message,
            unreachable: true,
            login: false,
            io,
        }
    } else {
        Outcome::NoAnswer {
            message,
            io,
            after: None,
        }
    }
}

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
    if status == StatusCode::UNAUTHORIZED || status == StatusCode::FORBIDDEN {
        return Outcome::AuthRefused { status, response };
    }
    Outcome::Refused { status, response }
}

impl Outcome {
    /// Takes the body of a refusal's answer (left empty), for the caller to read or drain.
    pub(crate) fn take_body(&mut self) -> Option<Body> {
        match self {
            Self::AuthRefused { response, .. } | Self::Refused { response, .. } => {
                Some(std::mem::replace(response.body_mut(), super::empty_body()))
            }
            _ => None,
        }
    }

    /// The HTTP status that answered, if one did.
    pub(crate) fn status(&self) -> Option<StatusCode> {
        match self {
            Self::Answered(r) => Some(r.status()),
            Self::Redirect { status, .. }
            | Self::AuthRefused { status, .. }
            | Self::Refused { status, .. } => Some(*status),
            Self::Expired => Some(StatusCode::NOT_FOUND),
            Self::Unsent { .. } | Self::NoAnswer { .. } => None,
        }
    }

    /// Whether the server refused the request in a way that passes (408, 425, 429), or gave
    /// no answer: trying the same again later may succeed.
    pub(crate) fn is_transient(&self) -> bool {
        match self {
            Self::Refused { status, .. } => {
                is_transient_status(status.as_u16()) || status.is_server_error()
            }
            Self::NoAnswer { .. } => true,
            Self::Unsent { unreachable, .. } => *unreachable,
            _ => false,
        }
    }

    /// What a failed exchange means for the request it carried. `auth` names the server's
    /// credentials for a 401/403 ("its secret `api.key` in local.toml"). Not for
    /// [`Outcome::Answered`] nor [`Outcome::Expired`], which the caller handles (a
    /// `2xx` is read; an expiry ends the session): those say so if asked anyway.
    pub(crate) fn into_failure(self, what: &str, auth: &str) -> SendFailure {
        match self {
            Self::Answered(r) => {
                SendFailure::unknown(format!("the answer {} was not read", r.status()))
            }
            Self::Unsent {
                message,
                unreachable,
                login,
                ..
            } => match (unreachable, login) {
                (_, true) => SendFailure::permanent(message),
                (true, false) => SendFailure::unreachable(message),
                (false, false) => SendFailure::unsent(message),
            },
            Self::NoAnswer { message, .. } => SendFailure::unknown(message),
            Self::Expired => SendFailure::expired(format!(
                "the session expired ({what} answered 404 Not Found); a new one is started"
            )),
            Self::Redirect { status, target } => {
                SendFailure::permanent(redirect_message(what, status, &target))
                    .status(status.as_u16())
            }
            Self::AuthRefused { status, .. } => SendFailure::permanent(format!(
                "authentication refused: {what} was answered {status}; check the server's \
                 `auth` and {auth}"
            ))
            .status(status.as_u16()),
            Self::Refused { status, .. } if status.is_client_error() => {
                SendFailure::refused(format!("{what} was answered {status}"), status.as_u16())
            }
            Self::Refused { status, .. } => {
                SendFailure::unknown(format!("{what} was answered {status}"))
                    .status(status.as_u16())
            }
        }
    }

    /// What a failed exchange means for a handshake (legacy SSE's `GET` of its stream):
    /// a [`TransportError`] naming the server, the request and the URL. A refusal trying
    /// again cannot fix (401, 403, a redirect, a login to make) is permanent, so the client
    /// marks the server failed at once instead of restarting it with backoff.
    pub(crate) fn into_connect_error(
        self,
        server: &str,
        verb: &str,
        shown: &str,
        auth: &str,
    ) -> TransportError {
        match self {
            Self::Unsent {
                message, login, io, ..
            } => {
                let text = format!("server `{server}`: cannot connect to {shown}: {message}");
                let error = TransportError::io(text, io::Error::new(io, message));
                if login {
                    error.permanent()
                } else {
                    error
                }
            }
            Self::NoAnswer {
                message,
                io,
                after: Some(after),
            } => TransportError::io(
                format!(
                    "server `{server}`: no response from {shown} within {} ms",
                    after.as_millis()
                ),
                io::Error::new(io, message),
            ),
            Self::NoAnswer {
                message,
                io,
                after: None,
            } => TransportError::io(
                format!("server `{server}`: cannot connect to {shown}: {message}"),
                io::Error::new(io, message),
            ),
            Self::Redirect { status, target } => TransportError::io(
                format!(
                    "server `{server}`: {}",
                    redirect_message(&format!("{verb} {shown}"), status, &target)
                ),
                io::Error::new(io::ErrorKind::PermissionDenied, "redirect not followed"),
            )
            .permanent(),
            Self::AuthRefused { status, .. } => TransportError::io(
                format!(
                    "server `{server}`: authentication refused: {verb} {shown} answered \
                     {status}; check the server's `auth` and {auth}"
                ),
                io::Error::new(io::ErrorKind::PermissionDenied, format!("HTTP {status}")),
            )
            .permanent(),
            Self::Expired | Self::Refused { .. } | Self::Answered(_) => {
                let status = self.status().unwrap_or_default();
                TransportError::new(format!(
                    "server `{server}`: {verb} {shown} answered {status}"
                ))
            }
        }
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
