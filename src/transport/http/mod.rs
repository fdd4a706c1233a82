//! The HTTP core both HTTP transports stand on.
//!
//! [`sse`](super::sse) (2024-11-05) and [`streamable_http`](super::streamable_http)
//! (2025-03-26 and later) differ in how messages travel; everything here is the same for both:
//! - `client.rs`: one `hyper-util` client per transport, pooled and kept alive across
//!   reconnects, HTTP/1.1 and HTTP/2 (by ALPN over TLS), the auth header added by a layer and
//!   marked sensitive;
//! - `exchange.rs`: every request either transport sends goes through one exchange (sent under
//!   a time bound, an idempotent GET or DELETE sent once more when a pooled connection closed
//!   under it) whose answer is classified into one outcome: answered, unsent, no answer,
//!   expired, redirect, auth refused, refused with a status (naming the URL and what the server
//!   said); that outcome becomes a request's
//!   [`SendFailure`](super::SendFailure) or a handshake's
//!   [`TransportError`](super::TransportError) in one place, with one list of the statuses
//!   that pass ([`is_transient_status`](super::is_transient_status));
//! - `queue.rs`: the ordered, bounded queue of frames waiting to be POSTed and its worker's
//!   side (legacy SSE POSTs everything through it, Streamable HTTP its notifications and
//!   answers);
//! - `event_stream.rs`: the `text/event-stream` parser, bounded per event;
//! - `refusal.rs`: what a server said when it refused a request (its `WWW-Authenticate`
//!   challenge, the start of its body), read bounded and cut to words fit for one log line;
//! - `config.rs`: a URL must be `http` or `https`, have a host and carry no credentials; a
//!   static header may not collide with the auth header or name one the transport sets
//!   ([`InvalidHttpConfig`]);
//! - the client only ever sends to the origin (scheme, host, port) of the configured URL:
//!   redirects are not followed, and an SSE `endpoint` elsewhere is refused;
//! - URLs in logs and errors are redacted; header values never appear;
//! - `session_digest.rs`: what telemetry shows of a session id (`mcp.session.id`).

pub(crate) mod client;
mod config;
pub(crate) mod event_stream;
pub(crate) mod exchange;
mod pool;
pub(crate) mod queue;
pub(crate) mod refusal;
mod session_digest;

pub use self::session_digest::session_digest;

use std::io;

use http_body_util::BodyExt;
use kaged_mcp_layers::auth::TokenError;
use url::Url;

pub(crate) use self::config::validate;
pub use self::config::{InvalidHttpConfig, InvalidKind};

pub(crate) use self::exchange::{exchange, Exchange, Outcome};
use client::Body;

/// The most bytes of a response body read (and thrown away) so its connection is reused.
pub(crate) const MAX_DRAINED: usize = 64 * 1024;

/// `url` without user name, password and query (which may carry a token: `?key=…`), for logs
/// and errors; a query shows as `?…`.
pub(crate) fn redacted(url: &Url) -> String {
    if url.username().is_empty() && url.password().is_none() && url.query().is_none() {
        return url.to_string();
    }
    let mut url = url.clone();
    let _ = url.set_username("");
    let _ = url.set_password(None);
    if url.query().is_some() {
        url.set_query(Some("…"));
    }
    url.to_string()
}

/// Whether `a` and `b` have the same origin: scheme, host and port (the default port counts).
pub(crate) fn same_origin(a: &Url, b: &Url) -> bool {
    a.scheme() == b.scheme()
        && a.host() == b.host()
        && a.port_or_known_default() == b.port_or_known_default()
}

/// `scheme://host:port` of `url`, without user info, path or query.
pub(crate) fn origin(url: &Url) -> String {
    match (url.host_str(), url.port_or_known_default()) {
        (Some(host), Some(port)) => format!("{}://{host}:{port}", url.scheme()),
        (Some(host), None) => format!("{}://{host}", url.scheme()),
        _ => url.scheme().to_owned(),
    }
}

/// `error: source: source…`, one line.
pub(crate) fn chain(error: &(dyn std::error::Error + 'static)) -> String {
    let mut text = error.to_string();
    let mut next = error.source();
    while let Some(e) = next {
        let part = e.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        next = e.source();
    }
    text
}

/// The kind of the first I/O error in `error`'s chain (`ConnectionRefused`, …), else `Other`.
pub(crate) fn io_kind(error: &(dyn std::error::Error + 'static)) -> io::ErrorKind {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(io) = e.downcast_ref::<io::Error>() {
            return io.kind();
        }
        next = e.source();
    }
    io::ErrorKind::Other
}

/// Whether an HTTP client error happened before the request could be written: no connection
/// was made (refused, unreachable, connect timeout).
pub(crate) fn never_connected(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(e) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            return e.is_connect();
        }
        if let Some(e) = e.downcast_ref::<pool::Error>() {
            return e.is_connect();
        }
        next = e.source();
    }
    false
}

/// Whether an HTTP client error is a connection that closed after the request went out and
/// before any answer (hyper's "connection closed before message completed": typically a pooled
/// connection the server closed as it was reused). Safe to resend only for an idempotent
/// request.
pub(crate) fn closed_before_answer(err: &(dyn std::error::Error + 'static)) -> bool {
    let mut next = Some(err);
    while let Some(e) = next {
        if let Some(e) = e.downcast_ref::<hyper::Error>() {
            return e.is_incomplete_message();
        }
        next = e.source();
    }
    false
}

/// Reads and drops a response body, at most [`MAX_DRAINED`] bytes of it, so a short body's
/// connection goes back to the pool. Never logs it.
pub(crate) async fn drain(mut body: Body) {
    let mut seen = 0;
    while let Some(Ok(frame)) = body.frame().await {
        if let Ok(data) = frame.into_data() {
            seen += data.len();
            if seen > MAX_DRAINED {
                return;
            }
        }
    }
}

/// The token source's error in `error`'s chain, if the auth layer failed.
pub(crate) fn token_error<'a>(
    error: &'a (dyn std::error::Error + 'static),
) -> Option<&'a TokenError> {
    let mut next = Some(error);
    while let Some(e) = next {
        if let Some(t) = e.downcast_ref::<TokenError>() {
            return Some(t);
        }
        next = e.source();
    }
    None
}

/// What a 401/403 message tells the operator to check, for a server whose `auth` refers to
/// `secret_ref`, or has another token source (`has_source`), or has none.
pub(crate) fn auth_hint(secret_ref: Option<&str>, has_source: bool) -> String {
    match (secret_ref, has_source) {
        (Some(r), _) => format!("its secret `{r}` in local.toml"),
        (None, true) => "its credentials (the token source did not renew them)".to_owned(),
        (None, false) => "its secret in local.toml (the server has no `auth` block)".to_owned(),
    }
}

/// An empty response body (a stream resumed with nothing new, a test's answer).
pub(crate) fn empty_body() -> Body {
    http_body_util::Empty::new()
        .map_err(|never| match never {})
        .boxed_unsync()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::SendFailure;

    fn refused(status: u16) -> SendFailure {
        let response = http::Response::builder()
            .status(status)
            .body(empty_body())
            .unwrap();
        let url = Url::parse("http://h/mcp").unwrap();
        let how = Exchange {
            what: "the POST",
            timeout: None,
            idempotent: false,
            url: &url,
            first: None,
        };
        exchange::classify(response, how, false)
            .into_failure("the POST", "its secret `api.key` in local.toml")
    }

    #[test]
    fn statuses_map_to_delivery_and_retry() {
        let f = refused(429);
        assert!(f.not_delivered() && f.is_retryable() && !f.is_permanent());
        let f = refused(400);
        assert!(f.not_delivered() && !f.is_retryable() && !f.is_permanent());
        let f = refused(500);
        assert!(!f.not_delivered() && !f.is_retryable() && !f.is_permanent());
        assert_eq!(f.http_status(), Some(500));
        let f = refused(401);
        assert!(f.not_delivered() && !f.is_retryable() && f.is_permanent());
        assert!(
            f.message().contains("401 Unauthorized") && f.message().contains("`api.key`"),
            "{}",
            f.message()
        );
        for redirect in [301, 302, 303, 307, 308] {
            let f = refused(redirect);
            assert!(f.not_delivered() && f.is_permanent(), "{redirect}");
            assert!(
                f.message().contains("redirects are not followed"),
                "{}",
                f.message()
            );
        }
    }

    #[test]
    fn redaction_drops_credentials_and_the_query() {
        let url = Url::parse("https://u:p@h.example/mcp?api_key=tok-1#f").unwrap();
        let shown = redacted(&url);
        assert!(
            !shown.contains("tok-1") && !shown.contains("u:p"),
            "{shown}"
        );
        assert!(shown.starts_with("https://h.example/mcp?"), "{shown}");
        assert_eq!(
            redacted(&Url::parse("http://h/mcp").unwrap()),
            "http://h/mcp"
        );
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let a = Url::parse("https://h.example/mcp").unwrap();
        assert!(same_origin(
            &a,
            &Url::parse("https://h.example:443/x").unwrap()
        ));
        assert!(!same_origin(
            &a,
            &Url::parse("http://h.example/mcp").unwrap()
        ));
        assert!(!same_origin(
            &a,
            &Url::parse("https://h.example:8443/mcp").unwrap()
        ));
        assert_eq!(
            origin(&Url::parse("http://u:p@127.0.0.2:9/x?y").unwrap()),
            "http://127.0.0.2:9"
        );
    }
}
