//! [`ClientError`]: everything that can go wrong between a call and a server. One struct names
//! the server and, where there is one, the request; what happened is its private kind, read
//! through [`ClientError::kind`] (one word), [`ClientError::class`] (what it means to whoever
//! must act) and the accessors of the parts a caller may need, the way `std::io::Error` and
//! hyper-util's `legacy::Error` keep their representation to themselves.

use std::fmt;
use std::process::ExitStatus;
use std::sync::Arc;
use std::time::Duration;

use kaged_mcp_layers::retry::NotSent;
use serde_json::Value;
use tower::BoxError;

use crate::protocol::method::{Discover, Initialize, Request as _};
use crate::protocol::RequestId;
use crate::transport::SendFailure;

mod clause;
mod kind;

use self::clause::Clause;
pub use self::kind::ErrorKind;
pub(crate) use self::kind::Kind;

/// The request an error is about: its id and method.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct RequestRef {
    /// The client's id for the request.
    pub id: RequestId,
    /// The JSON-RPC method, e.g. `tools/call`.
    pub method: &'static str,
}

impl fmt::Display for RequestRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "request {} ({})", self.id, self.method)
    }
}

/// Formats ` during request 4 (tools/call)` or nothing.
struct About<'a>(Option<&'a RequestRef>);

impl fmt::Display for About<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(r) => write!(f, " during {r}"),
            None => Ok(()),
        }
    }
}

/// Formats `request 4 (tools/call)` for an error about a request (every kind that is has
/// one), `a request` otherwise.
struct Req<'a>(Option<&'a RequestRef>);

impl fmt::Display for Req<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(r) => r.fmt(f),
            None => f.write_str("a request"),
        }
    }
}

/// Formats `; last stderr:\n…` or nothing.
struct Stderr<'a>(&'a str);

impl fmt::Display for Stderr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let tail = self.0.trim_end();
        if tail.is_empty() {
            Ok(())
        } else {
            write!(f, "; last stderr:\n{tail}")
        }
    }
}

/// `text` without a leading ``server `name`: `` (a transport's own messages name the server;
/// the operator's line names it once, in front).
pub(crate) fn without_server<'a>(text: &'a str, server: &str) -> &'a str {
    text.strip_prefix("server `")
        .and_then(|t| t.strip_prefix(server))
        .and_then(|t| t.strip_prefix("`: "))
        .unwrap_or(text)
}

/// `; its last stderr line: …` (bounded, escapes and control characters removed, anything
/// shaped like a token redacted), or nothing: the one
/// line of a process's stderr an operator's line has room for.
pub(crate) fn last_stderr_line(tail: &str) -> String {
    match tail.lines().rev().map(str::trim).find(|l| !l.is_empty()) {
        Some(line) => {
            let line = crate::transport::text::clean(line, 200);
            format!(
                "; its last stderr line: {}",
                crate::transport::redact_tokens(&line)
            )
        }
        None => String::new(),
    }
}

/// An error of the MCP client: what happened ([`kind`](Self::kind)) to which server
/// ([`server`](Self::server)) and, where there is one, to which request
/// ([`request`](Self::request)).
///
/// Its `Display` is ``MCP server `name` `` and what happened, for logs; the operator's line,
/// without the name and the chain of underlying errors, is [`reason`](Self::reason). What the
/// failure means to whoever must act on it is [`class`](Self::class), the one classification
/// the retry policy, the supervisor, telemetry and the CLI all ask.
///
/// # Errors the retry policy may retry
/// As a [`tower::Service`], [`McpClient`](super::McpClient) returns these in a
/// [`BoxError`]. When the request provably never reached the server, the error is wrapped in
/// [`kaged_mcp_layers::retry::NotSent`] so the retry policy retries it whatever the tool:
/// [`ConnectFailed`](ErrorKind::ConnectFailed), [`ServerFailed`](ErrorKind::ServerFailed),
/// [`BackingOff`](ErrorKind::BackingOff), [`Disabled`](ErrorKind::Disabled),
/// [`TooManyInFlight`](ErrorKind::TooManyInFlight), [`NoRuntime`](ErrorKind::NoRuntime), a
/// [`ConnectionClosed`](ErrorKind::ConnectionClosed) refused before the write, a
/// [`SendFailed`](ErrorKind::SendFailed) the server refused without processing in a way that
/// passes (no connection, 408, 425, 429), and any error of a start-up the call was waiting for
/// (the server exited before `initialize` was answered, spoke an unsupported version, did not
/// answer in time). [`ClientError::find`] finds the `ClientError` in either shape.
#[derive(Clone)]
pub struct ClientError(Box<Inner>);

/// The parts of a [`ClientError`], boxed: an error is one pointer wide wherever a result
/// carries it, and costs its allocation only when something fails.
#[derive(Debug, Clone)]
struct Inner {
    server: Arc<str>,
    request: Option<RequestRef>,
    kind: Kind,
}

impl fmt::Debug for ClientError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ClientError")
            .field("server", &self.0.server)
            .field("request", &self.0.request)
            .field("kind", &self.0.kind)
            .finish()
    }
}

impl fmt::Display for ClientError {
    /// ``MCP server `name` `` and what happened; the operator's line without the name is
    /// [`reason`](Self::reason).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let separator = match self.0.kind {
            Kind::ConnectionClosed { .. }
            | Kind::SendFailed { .. }
            | Kind::Pagination { .. }
            | Kind::TaskFailed { .. }
            | Kind::TaskCancelled { .. }
            | Kind::TaskLost { .. }
            | Kind::SkillRefused { .. }
            | Kind::BadParams { .. } => ": ",
            _ => " ",
        };
        write!(
            f,
            "MCP server `{}`{separator}{}",
            self.server(),
            Clause(self)
        )
    }
}

impl std::error::Error for ClientError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match &self.0.kind {
            Kind::ConnectFailed { source } => Some(source),
            _ => None,
        }
    }
}

impl crate::telemetry::Failure for ClientError {
    fn error_type(&self) -> std::borrow::Cow<'static, str> {
        ClientError::error_type(self)
    }

    fn json_rpc(&self) -> Option<(i64, Option<&str>)> {
        match &self.0.kind {
            Kind::JsonRpc { code, message, .. } => Some((*code, Some(message))),
            Kind::MissingCapability { .. } => Some((
                crate::protocol::modern::MISSING_REQUIRED_CLIENT_CAPABILITY,
                None,
            )),
            _ => None,
        }
    }
}

/// Whether `method` is a handshake's (`initialize`, `server/discover`).
fn is_handshake(method: &str) -> bool {
    method == Initialize::METHOD || method == Discover::METHOD
}

/// Which check refused a skill ([`ErrorKind::SkillRefused`](crate::client::ErrorKind::SkillRefused)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum SkillCheck {
    /// The file's size differs from the listed size.
    Size,
    /// The file's SHA-256 differs from the listed digest (or the listing's digest is not
    /// SHA-256).
    Digest,
    /// `SKILL.md`'s YAML frontmatter differs from the listed frontmatter, or cannot be read.
    Frontmatter,
    /// The file is not among the skill's listed resources.
    NotListed,
    /// The read returned nothing usable (no contents, a blob that is not base64).
    Unreadable,
    /// More than one listed skill answers to the name (or URI) given: which one is meant is
    /// not the server's to choose.
    Ambiguous,
}

impl SkillCheck {
    /// The check as one word: `size`, `digest`, `frontmatter`, `not_listed`, `unreadable`,
    /// `ambiguous`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Size => "size",
            Self::Digest => "digest",
            Self::Frontmatter => "frontmatter",
            Self::NotListed => "not_listed",
            Self::Unreadable => "unreadable",
            Self::Ambiguous => "ambiguous",
        }
    }
}

impl fmt::Display for SkillCheck {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What a [`ClientError`] means to whoever must act on it, in one word: the one
/// classification ([`ClientError::class`]) that the retry policy, the supervisor, telemetry and
/// the CLI ask, beside the predicates that refine it ([`ClientError::is_resendable`],
/// [`ClientError::is_about_the_era`], [`ClientError::error_type`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorClass {
    /// The server could not be started or connected to.
    Unreachable,
    /// The server went away: its process exited, or its connection closed.
    Gone,
    /// A request got no answer in time.
    Timeout,
    /// Sending a request failed on the way (HTTP); [`SendFailure`] says whether it was
    /// delivered and whether a retry may help.
    SendFailed,
    /// The server answered with a JSON-RPC error, or the task running the call failed, was
    /// cancelled or was lost.
    Refused,
    /// The server broke the protocol: an oversize message, an answer that does not decode, a
    /// list that does not end, input asked for without end.
    Protocol,
    /// The client and the server share no protocol version or era.
    Version,
    /// The client held the request back: the server is failed, backing off or disabled, at
    /// its limit of requests in flight, or there is no runtime to start it on.
    Held,
    /// The request needs a capability one side does not offer, or input the client does not
    /// give, or params it cannot write.
    Unsupported,
}

impl ErrorClass {
    /// The class as one stable word: `unreachable`, `gone`, `timeout`, `send_failed`,
    /// `refused`, `protocol`, `version`, `held`, `unsupported`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unreachable => "unreachable",
            Self::Gone => "gone",
            Self::Timeout => "timeout",
            Self::SendFailed => "send_failed",
            Self::Refused => "refused",
            Self::Protocol => "protocol",
            Self::Version => "version",
            Self::Held => "held",
            Self::Unsupported => "unsupported",
        }
    }
}

impl fmt::Display for ErrorClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl ClientError {
    /// An error of `server`, about `request` when there is one.
    pub(crate) fn new(
        server: impl Into<Arc<str>>,
        request: Option<RequestRef>,
        kind: Kind,
    ) -> Self {
        Self(Box::new(Inner {
            server: server.into(),
            request,
            kind,
        }))
    }

    /// An error of `server` about no request (the server's state, a start, a list).
    pub(crate) fn of(server: &Arc<str>, kind: Kind) -> Self {
        Self::new(Arc::clone(server), None, kind)
    }

    /// What happened, with its parts: the crate's own view.
    pub(crate) fn parts(&self) -> &Kind {
        &self.0.kind
    }

    /// The server the error is about.
    pub fn server(&self) -> &str {
        &self.0.server
    }

    /// The request the error is about, if any.
    pub fn request(&self) -> Option<&RequestRef> {
        self.0.request.as_ref()
    }

    /// Which failure this is, in one word: see [`ErrorKind`].
    pub fn kind(&self) -> ErrorKind {
        self.0.kind.word()
    }

    /// The JSON-RPC error code: the server's answer ([`ErrorKind::JsonRpc`]), the error a task
    /// ended with ([`ErrorKind::TaskFailed`]; 0 when the server sent none), or -32021 for
    /// [`ErrorKind::MissingCapability`].
    pub fn code(&self) -> Option<i64> {
        match &self.0.kind {
            Kind::JsonRpc { code, .. } | Kind::TaskFailed { code, .. } => Some(*code),
            Kind::MissingCapability { .. } => {
                Some(crate::protocol::modern::MISSING_REQUIRED_CLIENT_CAPABILITY)
            }
            _ => None,
        }
    }

    /// The server's own words: the message of its JSON-RPC error, of the error a task ended
    /// with, or of a task it cancelled.
    pub fn message(&self) -> Option<&str> {
        match &self.0.kind {
            Kind::JsonRpc { message, .. } => Some(message),
            Kind::TaskFailed { message, .. } => Some(message),
            Kind::TaskCancelled { message, .. } => message.as_deref(),
            _ => None,
        }
    }

    /// The `data` of the server's JSON-RPC error (or of the error a task ended with), if any.
    pub fn data(&self) -> Option<&Value> {
        match &self.0.kind {
            Kind::JsonRpc { data, .. } => data.as_ref(),
            Kind::TaskFailed { data, .. } => data.as_deref(),
            _ => None,
        }
    }

    /// How the server's process ended, for an [`ErrorKind::Exited`] of a transport that runs
    /// one.
    pub fn exit_status(&self) -> Option<ExitStatus> {
        match &self.0.kind {
            Kind::Exited { exit_status, .. } => *exit_status,
            _ => None,
        }
    }

    /// The last bytes the server wrote to stderr before it went away
    /// ([`ErrorKind::Exited`]).
    pub fn stderr_tail(&self) -> Option<&str> {
        match &self.0.kind {
            Kind::Exited { stderr_tail, .. } => Some(stderr_tail),
            _ => None,
        }
    }

    /// The bound that was reached: the frame limit in bytes ([`ErrorKind::FrameTooLarge`]),
    /// or the requests in flight ([`ErrorKind::TooManyInFlight`]).
    pub fn limit(&self) -> Option<usize> {
        match &self.0.kind {
            Kind::FrameTooLarge { limit, .. } | Kind::TooManyInFlight { limit } => Some(*limit),
            _ => None,
        }
    }

    /// The length of the discarded message ([`ErrorKind::FrameTooLarge`]); when reading stopped
    /// at the limit (a body declared or read past it is not read on), the length the server
    /// declared or the bytes read: the message is at least that long.
    pub fn frame_len(&self) -> Option<u64> {
        match &self.0.kind {
            Kind::FrameTooLarge { len, .. } => Some(*len),
            _ => None,
        }
    }

    /// The time until the next restart attempt ([`ErrorKind::BackingOff`]).
    pub fn retry_in(&self) -> Option<Duration> {
        match &self.0.kind {
            Kind::BackingOff { retry_in, .. } => Some(*retry_in),
            _ => None,
        }
    }

    /// The consecutive failures that marked the server failed ([`ErrorKind::ServerFailed`]).
    pub fn failures(&self) -> Option<u32> {
        match &self.0.kind {
            Kind::ServerFailed { failures, .. } => Some(*failures),
            _ => None,
        }
    }

    /// The protocol version the server answered ([`ErrorKind::UnsupportedProtocolVersion`]).
    pub fn version(&self) -> Option<&str> {
        match &self.0.kind {
            Kind::UnsupportedProtocolVersion { version } => Some(version),
            _ => None,
        }
    }

    /// The protocol versions the server listed ([`ErrorKind::NoCommonVersion`]).
    pub fn supported_versions(&self) -> Option<&[String]> {
        match &self.0.kind {
            Kind::NoCommonVersion { supported } => Some(supported),
            _ => None,
        }
    }

    /// The capability concerned: the one the server does not offer
    /// ([`ErrorKind::NotOffered`], e.g. `resources.subscribe`), or the client capabilities the
    /// server asked for ([`ErrorKind::MissingCapability`], its `data.requiredCapabilities` as
    /// JSON, or its message when it named none).
    pub fn capability(&self) -> Option<&str> {
        match &self.0.kind {
            Kind::NotOffered { capability, .. } => Some(capability),
            Kind::MissingCapability { required, .. } => Some(required),
            _ => None,
        }
    }

    /// The server's id of the task that ran the call ([`ErrorKind::TaskFailed`],
    /// [`ErrorKind::TaskCancelled`], [`ErrorKind::TaskLost`]).
    pub fn task_id(&self) -> Option<&str> {
        match &self.0.kind {
            Kind::TaskFailed { task_id, .. }
            | Kind::TaskCancelled { task_id, .. }
            | Kind::TaskLost { task_id, .. } => Some(task_id),
            _ => None,
        }
    }

    /// Which check refused a skill, the skill and the file ([`ErrorKind::SkillRefused`]).
    pub fn skill_check(&self) -> Option<(SkillCheck, &str, &str)> {
        match &self.0.kind {
            Kind::SkillRefused {
                check, skill, file, ..
            } => Some((*check, skill, file)),
            _ => None,
        }
    }

    /// The method of the request concerned: the error's request's, or for a request never
    /// sent (a list that did not end, a capability not offered) the method it would have had.
    fn method(&self) -> Option<&'static str> {
        match (&self.0.request, &self.0.kind) {
            (Some(r), _) => Some(r.method),
            (None, Kind::Pagination { method, .. } | Kind::NotOffered { method, .. }) => {
                Some(method)
            }
            _ => None,
        }
    }

    /// The operator's line: what happened and what to act on, without the server's name
    /// (the caller names it once) and without the chain of underlying errors, which
    /// [`Display`](fmt::Display) keeps for logs and `-v`. A refused or failed request says
    /// [`SendFailure::message`] (`cannot connect to http://…/mcp: connection refused`); a
    /// failed server says its last error the same way. Written from the error's own parts,
    /// never by editing another message.
    pub fn reason(&self) -> String {
        match &self.0.kind {
            Kind::SendFailed { failure } => failure.message().to_owned(),
            Kind::ConnectFailed { source } => {
                without_server(source.message(), self.server()).to_owned()
            }
            Kind::Exited {
                reason,
                stderr_tail,
                ..
            } => {
                let mut line = reason.clone();
                if let Some(r) = &self.0.request {
                    line.push_str(&format!(" during {r}"));
                }
                line.push_str(&last_stderr_line(stderr_tail));
                line
            }
            Kind::ServerFailed {
                failures,
                last_error,
            } => {
                let times = if *failures == 1 {
                    "1 failure".to_owned()
                } else {
                    format!("{failures} consecutive failures")
                };
                format!("marked failed after {times} (re-enable it to try again): {last_error}")
            }
            Kind::BackingOff {
                retry_in,
                last_error,
            } => format!(
                "restarting, next attempt in {} ms: {last_error}",
                retry_in.as_millis()
            ),
            _ => Clause(self).to_string(),
        }
    }

    /// What the error means, in one word: see [`ErrorClass`].
    pub fn class(&self) -> ErrorClass {
        match &self.0.kind {
            Kind::ConnectFailed { .. } => ErrorClass::Unreachable,
            Kind::Exited { .. } | Kind::ConnectionClosed { .. } => ErrorClass::Gone,
            Kind::InitializeTimeout { .. } | Kind::RequestTimeout { .. } => ErrorClass::Timeout,
            Kind::SendFailed { .. } => ErrorClass::SendFailed,
            Kind::JsonRpc { .. }
            | Kind::TaskFailed { .. }
            | Kind::TaskCancelled { .. }
            | Kind::TaskLost { .. } => ErrorClass::Refused,
            Kind::FrameTooLarge { .. }
            | Kind::ProtocolViolation { .. }
            | Kind::Pagination { .. }
            | Kind::InputRounds { .. }
            | Kind::SkillRefused { .. } => ErrorClass::Protocol,
            Kind::UnsupportedProtocolVersion { .. }
            | Kind::NoCommonVersion { .. }
            | Kind::NotModern { .. } => ErrorClass::Version,
            Kind::ServerFailed { .. }
            | Kind::BackingOff { .. }
            | Kind::Disabled
            | Kind::TooManyInFlight { .. }
            | Kind::NoRuntime => ErrorClass::Held,
            Kind::MissingCapability { .. }
            | Kind::NotOffered { .. }
            | Kind::InputRefused { .. }
            | Kind::BadParams { .. } => ErrorClass::Unsupported,
        }
    }

    /// The failure's `error.type` in telemetry (the OpenTelemetry MCP conventions): the
    /// JSON-RPC code for a JSON-RPC error (and -32021 for a missing capability), otherwise one
    /// low-cardinality word (`connect_failed`, `server_exited`, `connection_closed`,
    /// `frame_too_large`, `send_failed`, `protocol_violation`, `timeout`,
    /// `too_many_in_flight`, `unsupported_protocol_version`), `_OTHER` for the rest.
    pub fn error_type(&self) -> std::borrow::Cow<'static, str> {
        use std::borrow::Cow;
        Cow::Borrowed(match &self.0.kind {
            Kind::JsonRpc { code, .. } => return Cow::Owned(code.to_string()),
            Kind::MissingCapability { .. } => {
                return Cow::Owned(
                    crate::protocol::modern::MISSING_REQUIRED_CLIENT_CAPABILITY.to_string(),
                )
            }
            Kind::ConnectFailed { .. } => "connect_failed",
            // An HTTP connection that ended unasked has no exit status: it was closed.
            Kind::Exited {
                exit_status: Some(_),
                ..
            } => "server_exited",
            Kind::Exited { .. } | Kind::ConnectionClosed { .. } => "connection_closed",
            Kind::FrameTooLarge { .. } => "frame_too_large",
            Kind::SendFailed { .. } => "send_failed",
            Kind::ProtocolViolation { .. } => "protocol_violation",
            Kind::RequestTimeout { .. } | Kind::InitializeTimeout { .. } => "timeout",
            Kind::TooManyInFlight { .. } => "too_many_in_flight",
            Kind::UnsupportedProtocolVersion { .. } | Kind::NoCommonVersion { .. } => {
                "unsupported_protocol_version"
            }
            _ => "_OTHER",
        })
    }

    /// Whether a failed start was about the protocol era, so the era it assumed must be found
    /// again: a refused protocol version (-32022,
    /// [`UnsupportedProtocolVersion`](ErrorKind::UnsupportedProtocolVersion),
    /// [`NoCommonVersion`](ErrorKind::NoCommonVersion)), a server that is not modern when told
    /// to be ([`NotModern`](ErrorKind::NotModern)), or a handshake the server answered with an
    /// error (a modern-only server refusing `initialize`, a `server/discover` refused in the
    /// modern way).
    pub fn is_about_the_era(&self) -> bool {
        match &self.0.kind {
            Kind::JsonRpc { code, .. } => {
                *code == crate::protocol::modern::UNSUPPORTED_PROTOCOL_VERSION
                    || self.method().is_some_and(is_handshake)
            }
            _ => self.class() == ErrorClass::Version,
        }
    }

    /// Whether a failed start is one a restart cannot fix, so the server is marked failed at
    /// once instead of restarted in a loop: a command that cannot be run or a connection
    /// refused for good (auth, a foreign endpoint), no protocol version in common, or (with
    /// `era_forced`) a handshake refused as unknown (-32601), invalid (-32600, -32602) or of
    /// an unsupported version (-32022): the same server refuses the same handshake again. A
    /// server error (-32603, say) may pass.
    pub(crate) fn restart_cannot_fix(&self, era_forced: bool) -> bool {
        let method = self.method().unwrap_or_default();
        match &self.0.kind {
            Kind::ConnectFailed { source } => source.is_permanent(),
            // A 404 to `initialize` (the first request of a session, no session id): nothing
            // at the configured URL is an MCP endpoint, which no restart changes (a 404 to the
            // era probe alone is taken for a legacy server, which `initialize` then asks).
            Kind::SendFailed { failure } => {
                failure.is_permanent()
                    || (failure.http_status() == Some(404)
                        && (method == Initialize::METHOD || (era_forced && is_handshake(method))))
            }
            Kind::NoCommonVersion { .. } | Kind::NotModern { .. } => true,
            Kind::JsonRpc { code, .. } => {
                era_forced
                    && is_handshake(method)
                    && matches!(
                        *code,
                        -32601
                            | -32600
                            | -32602
                            | crate::protocol::modern::UNSUPPORTED_PROTOCOL_VERSION
                    )
            }
            _ => false,
        }
    }

    /// What sending the request met, for an [`ErrorKind::SendFailed`]: delivered or not,
    /// worth retrying, permanent, the HTTP status.
    pub fn send_failure(&self) -> Option<&SendFailure> {
        match &self.0.kind {
            Kind::SendFailed { failure } => Some(failure),
            _ => None,
        }
    }

    /// Finds the `ClientError` in an error returned by the [`McpClient`](super::McpClient)
    /// service, whether bare or wrapped in [`NotSent`].
    pub fn find<'a>(err: &'a (dyn std::error::Error + 'static)) -> Option<&'a Self> {
        let mut next = Some(err);
        while let Some(err) = next {
            if let Some(found) = err.downcast_ref::<Self>() {
                return Some(found);
            }
            next = err.source();
        }
        None
    }

    /// Whether a request already handed to the transport provably never reached the server
    /// and sending it again may succeed: then it is safe and worth retrying (what the retry
    /// policy is told with [`NotSent`]).
    pub fn is_resendable(&self) -> bool {
        self.send_failure().is_some_and(SendFailure::is_retryable)
    }

    /// Boxes the error, wrapped in [`NotSent`] when `not_sent` is true.
    pub(crate) fn boxed(self, not_sent: bool) -> BoxError {
        if not_sent {
            Box::new(NotSent::new(self))
        } else {
            Box::new(self)
        }
    }
}

#[cfg(test)]
mod tests;
