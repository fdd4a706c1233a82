//! [`SendFailure`]: why a request the session queued could not be delivered, as one of a few
//! kinds asked through predicates; and the one list of HTTP refusals that pass.

use std::fmt;

/// Why a queued request could not be delivered: see
/// [`InboundHandler::on_send_failed`](super::InboundHandler::on_send_failed).
///
/// What the failure means is asked of it ([`not_delivered`](Self::not_delivered),
/// [`is_retryable`](Self::is_retryable), [`is_permanent`](Self::is_permanent)), the way
/// hyper-util's client error answers `is_connect()`: it is built as one of a few kinds, so a
/// failure cannot be both permanent and worth retrying, nor retryable after it may have
/// reached the server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SendFailure {
    message: String,
    detail: Option<String>,
    kind: FailureKind,
    status: Option<u16>,
}

/// What a [`SendFailure`] is; private, so its predicates are the only way to ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FailureKind {
    /// It never left the client: no connection could be made (`retryable`), or the request
    /// could not be built or given its credentials (not).
    Unsent { retryable: bool },
    /// The server refused it with a `4xx` without processing it; `transient` for the refusals
    /// that pass (408, 425, 429).
    Refused { transient: bool },
    /// The session it went on expired (a `404` to the session's id): a new one is started.
    Expired,
    /// Refused in a way trying again cannot fix: 401, 403, a redirect, a login the operator
    /// must make.
    Permanent,
    /// It may have reached the server: a `5xx`, no answer in time, a cut answer.
    Unknown,
}

impl SendFailure {
    /// A request that never left the client and would not fare better if sent again (it could
    /// not be built, its credentials could not be had).
    pub fn unsent(message: impl Into<String>) -> Self {
        Self::of(message, FailureKind::Unsent { retryable: false })
    }

    /// A request that never left the client because no connection could be made: sending it
    /// again may succeed.
    pub fn unreachable(message: impl Into<String>) -> Self {
        Self::of(message, FailureKind::Unsent { retryable: true })
    }

    /// A request the server refused with the `4xx` `status` without processing it; retryable
    /// when the status is one that passes ([`is_transient_status`]).
    pub fn refused(message: impl Into<String>, status: u16) -> Self {
        Self::of(
            message,
            FailureKind::Refused {
                transient: is_transient_status(status),
            },
        )
        .status(status)
    }

    /// A request sent on a session the server ended: not delivered, and a new session is
    /// started at once, so sending it again may succeed.
    pub fn expired(message: impl Into<String>) -> Self {
        Self::of(message, FailureKind::Expired)
    }

    /// A refusal trying again cannot fix (401, 403, a redirect, which is never followed, or a
    /// login the operator must make). When the request was the handshake, the client marks
    /// the server failed at once instead of restarting it with backoff.
    pub fn permanent(message: impl Into<String>) -> Self {
        Self::of(message, FailureKind::Permanent)
    }

    /// A request that may have reached the server: a `5xx`, no answer in time, an answer cut
    /// short. Never sent again on its own.
    pub fn unknown(message: impl Into<String>) -> Self {
        Self::of(message, FailureKind::Unknown)
    }

    fn of(message: impl Into<String>, kind: FailureKind) -> Self {
        Self {
            message: message.into(),
            detail: None,
            kind,
            status: None,
        }
    }

    /// With the HTTP status that answered the request.
    #[must_use]
    pub fn status(mut self, status: u16) -> Self {
        self.status = Some(status);
        self
    }

    /// With the underlying error chain, for logs and `-v`: `client error (Connect): tcp connect
    /// error: Connection refused (os error 111)` under the message `cannot connect to …:
    /// connection refused`.
    #[must_use]
    pub fn with_detail(mut self, detail: impl Into<String>) -> Self {
        self.detail = Some(detail.into());
        self
    }

    /// The operator's line: what happened and what to act on, naming no secret
    /// (`cannot connect to http://127.0.0.1:8101/mcp: connection refused`, `the server refused
    /// the POST: 403 Forbidden at http://h/mcp: "Access is only allowed at localhost:8601"`).
    /// The underlying error chain, if any, is [`detail`](Self::detail).
    pub fn message(&self) -> &str {
        &self.message
    }

    /// The underlying error chain behind [`message`](Self::message), when there is one (a
    /// connection's I/O error as hyper reported it); `None` when the message says it all.
    pub fn detail(&self) -> Option<&str> {
        self.detail.as_deref()
    }

    /// The server provably did not process the request: it never left the client, the server
    /// refused it with a `4xx` (or 401/403, or a redirect), or its session had expired. Such a
    /// request is safe to send again, whatever the tool.
    pub fn not_delivered(&self) -> bool {
        !matches!(self.kind, FailureKind::Unknown)
    }

    /// Sending it again may succeed: no connection could be made, the refusal is one that
    /// passes (408, 425, 429), or the session it went on expired. Always also
    /// [`not_delivered`](Self::not_delivered).
    pub fn is_retryable(&self) -> bool {
        matches!(
            self.kind,
            FailureKind::Unsent { retryable: true }
                | FailureKind::Refused { transient: true }
                | FailureKind::Expired
        )
    }

    /// No connection could be made at all (see [`unreachable`](Self::unreachable)): the
    /// server is down or not where the configuration says, whatever the request.
    pub fn is_unreachable(&self) -> bool {
        matches!(self.kind, FailureKind::Unsent { retryable: true })
    }

    /// Trying again cannot fix it (see [`permanent`](Self::permanent)).
    pub fn is_permanent(&self) -> bool {
        matches!(self.kind, FailureKind::Permanent)
    }

    /// The HTTP status that answered the request, when a server answered it with one (the
    /// 2026-07-28 era probe takes a `4xx` without a modern error body for a legacy server's
    /// answer, and any failure without a status for no answer at all).
    pub fn http_status(&self) -> Option<u16> {
        self.status
    }
}

/// The message, then `: <detail>` when there is one, so a log line keeps everything.
impl fmt::Display for SendFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)?;
        if let Some(detail) = &self.detail {
            write!(f, ": {detail}")?;
        }
        Ok(())
    }
}

/// Whether an HTTP refusal with `status` passes, so the same request may succeed later: 408
/// Request Timeout, 425 Too Early, 429 Too Many Requests. The one list every part of the
/// client asks (the POST of a request, the GET stream, the `subscriptions/listen` loop).
pub fn is_transient_status(status: u16) -> bool {
    matches!(status, 408 | 425 | 429)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_is_the_message_then_the_detail() {
        let f = SendFailure::unreachable("cannot connect to http://h/mcp: connection refused");
        assert_eq!(f.detail(), None);
        assert_eq!(
            f.to_string(),
            "cannot connect to http://h/mcp: connection refused"
        );
        let f = f.with_detail("client error (Connect): tcp connect error");
        assert_eq!(
            f.message(),
            "cannot connect to http://h/mcp: connection refused"
        );
        assert_eq!(
            f.detail(),
            Some("client error (Connect): tcp connect error")
        );
        assert_eq!(
            f.to_string(),
            "cannot connect to http://h/mcp: connection refused: client error (Connect): tcp \
             connect error"
        );
        // The detail changes no predicate.
        assert!(f.not_delivered() && f.is_retryable() && !f.is_permanent());
    }
}
