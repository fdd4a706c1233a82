//! [`ClientError`]: everything that can go wrong between a call and a server, each naming the
//! server and, where there is one, the request.

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
use crate::transport::TransportError;

mod clause;

use self::clause::Clause;

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

/// Formats ` (request 4 (tools/call))` or nothing.
struct About<'a>(&'a Option<RequestRef>);

impl fmt::Display for About<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            Some(r) => write!(f, " during {r}"),
            None => Ok(()),
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

/// An error of the MCP client. Every variant names the server.
///
/// # Errors the retry policy may retry
/// As a [`tower::Service`], [`McpClient`](super::McpClient) returns these in a
/// [`BoxError`]. When the request provably never reached the server, the error is wrapped in
/// [`kaged_mcp_layers::retry::NotSent`] so the retry policy retries it whatever the tool:
/// [`ConnectFailed`](Self::ConnectFailed), [`ServerFailed`](Self::ServerFailed),
/// [`BackingOff`](Self::BackingOff), [`Disabled`](Self::Disabled),
/// [`TooManyInFlight`](Self::TooManyInFlight), [`NoRuntime`](Self::NoRuntime), a
/// [`ConnectionClosed`](Self::ConnectionClosed) refused before the write, a
/// [`SendFailed`](Self::SendFailed) the server refused without processing in a way that
/// passes (no connection, 408, 425, 429), and any error of a
/// start-up the call was waiting for (the server exited before `initialize` was answered, spoke
/// an unsupported version, did not answer in time). [`ClientError::find`] finds the
/// `ClientError` in either shape.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum ClientError {
    /// The transport could not connect (stdio: the process could not be spawned).
    ConnectFailed {
        /// The server.
        server: Arc<str>,
        /// What the transport reported.
        source: TransportError,
    },
    /// The server went away (stdio: the process exited, or its stdout closed).
    Exited {
        /// The server.
        server: Arc<str>,
        /// What happened, e.g. `exited (exit status: 3)`.
        reason: String,
        /// The exit status, when the transport runs a process.
        exit_status: Option<ExitStatus>,
        /// The last bytes the server wrote to stderr.
        stderr_tail: String,
        /// The request that was in flight.
        request: Option<RequestRef>,
    },
    /// The server sent a message longer than the frame limit; the message was discarded.
    FrameTooLarge {
        /// The server.
        server: Arc<str>,
        /// The limit.
        limit: usize,
        /// The message's length.
        len: u64,
        /// The request it answered, when its id could be found.
        request: Option<RequestRef>,
    },
    /// The server answered with a JSON-RPC error.
    JsonRpc {
        /// The server.
        server: Arc<str>,
        /// The request.
        request: RequestRef,
        /// The error code.
        code: i64,
        /// The error message.
        message: String,
        /// The error data, if any.
        data: Option<Value>,
    },
    /// The server chose a protocol revision this client does not speak.
    UnsupportedProtocolVersion {
        /// The server.
        server: Arc<str>,
        /// The version it answered.
        version: String,
    },
    /// The connection is closed (or was shut down by the client).
    ConnectionClosed {
        /// The server.
        server: Arc<str>,
        /// The request concerned, if any.
        request: Option<RequestRef>,
        /// Why.
        detail: String,
    },
    /// Sending the request failed (HTTP: its POST, or the stream of its answer). When the
    /// server provably did not process it and sending it again may help
    /// ([`SendFailure::not_delivered`] and [`SendFailure::is_retryable`]), the error comes
    /// wrapped in [`NotSent`] so the retry policy may send it again whatever the tool.
    SendFailed {
        /// The server.
        server: Arc<str>,
        /// The request.
        request: RequestRef,
        /// What went wrong, naming no secret, and what it means: delivered or not, worth
        /// retrying, permanent (when this was the handshake, the server is marked failed at
        /// once), the HTTP status that refused it.
        failure: SendFailure,
    },
    /// The server failed too many times in a row; calls fail fast until it is re-enabled.
    ServerFailed {
        /// The server.
        server: Arc<str>,
        /// Consecutive failures.
        failures: u32,
        /// The last failure.
        last_error: String,
    },
    /// The server failed recently and the next restart attempt is not due yet.
    BackingOff {
        /// The server.
        server: Arc<str>,
        /// Time until the next attempt.
        retry_in: Duration,
        /// The last failure.
        last_error: String,
    },
    /// The server is disabled (by the operator, or shut down).
    Disabled {
        /// The server.
        server: Arc<str>,
    },
    /// A list (`tools/list`, `resources/list`, …) did not end properly.
    Pagination {
        /// The server.
        server: Arc<str>,
        /// The list's method.
        method: &'static str,
        /// What went wrong (a cursor seen twice, too many pages or tools).
        detail: String,
    },
    /// The server sent something the protocol does not allow.
    ProtocolViolation {
        /// The server.
        server: Arc<str>,
        /// The request concerned, if any.
        request: Option<RequestRef>,
        /// What was wrong.
        detail: String,
    },
    /// The server did not answer `initialize` in time.
    InitializeTimeout {
        /// The server.
        server: Arc<str>,
        /// The time waited.
        after: Duration,
    },
    /// The server did not answer a request the client sent on its own (a `tools/list` page)
    /// within [`ClientOptions::request_timeout`](super::ClientOptions::request_timeout); the
    /// request was cancelled.
    RequestTimeout {
        /// The server.
        server: Arc<str>,
        /// The request.
        request: RequestRef,
        /// The time waited.
        after: Duration,
    },
    /// The bound on calls in flight is reached.
    TooManyInFlight {
        /// The server.
        server: Arc<str>,
        /// The bound.
        limit: usize,
    },
    /// The server asked for input the client does not give (a multi round-trip request of
    /// the 2026-07-28 revision): sampling (ADR-0043 §6), or a request the server-request
    /// handler refused. The call is not retried.
    InputRefused {
        /// The server.
        server: Arc<str>,
        /// The request that was answered `input_required`.
        request: RequestRef,
        /// The server's key of the input request.
        input: Box<str>,
        /// The input request's method, e.g. `sampling/createMessage`.
        method: Box<str>,
        /// Why it was refused.
        detail: Box<str>,
    },
    /// The server still asked for input after [`MAX_INPUT_ROUNDS`](super::MAX_INPUT_ROUNDS)
    /// retries of the same call.
    InputRounds {
        /// The server.
        server: Arc<str>,
        /// The last request that was answered `input_required`.
        request: RequestRef,
        /// Rounds done.
        rounds: u32,
    },
    /// The server speaks no protocol version this client speaks (its `server/discover`
    /// answer, or its `UnsupportedProtocolVersion` error, listed them).
    NoCommonVersion {
        /// The server.
        server: Arc<str>,
        /// The versions it listed.
        supported: Vec<String>,
    },
    /// The server is configured to speak the modern era (`era = "modern"`) and did not answer
    /// `server/discover` as a modern server.
    NotModern {
        /// The server.
        server: Arc<str>,
        /// What it answered.
        detail: String,
    },
    /// The server ran the call as a task, and the task failed: the JSON-RPC error it ended
    /// with (2026-07-28 `failed`, or 2025-11-25 `tasks/result` answered with an error).
    TaskFailed {
        /// The server.
        server: Arc<str>,
        /// The `tools/call` that created the task.
        request: RequestRef,
        /// The server's id of the task.
        task_id: Box<str>,
        /// The error code (0 when the server sent none).
        code: i64,
        /// The error message.
        message: Box<str>,
        /// The error data, if any.
        data: Option<Box<Value>>,
    },
    /// The server ran the call as a task, and cancelled it.
    TaskCancelled {
        /// The server.
        server: Arc<str>,
        /// The `tools/call` that created the task.
        request: RequestRef,
        /// The server's id of the task.
        task_id: Box<str>,
        /// The server's words, if any.
        message: Option<Box<str>>,
    },
    /// The server ran the call as a task, and the task can no longer be followed: the server
    /// no longer knows it, exited, or could not be asked for it several times in a row. The
    /// tool was not called again.
    TaskLost {
        /// The server.
        server: Arc<str>,
        /// The `tools/call` that created the task.
        request: RequestRef,
        /// The server's id of the task.
        task_id: Box<str>,
        /// What happened.
        detail: Box<str>,
    },
    /// The server refused a request because the client lacks a capability (-32021, 2026-07-28):
    /// for a tool that runs only as a task, the tasks extension, which the client declares in a
    /// 2026-07-28 session unless `tasks = "off"`.
    MissingCapability {
        /// The server.
        server: Arc<str>,
        /// The refused request.
        request: RequestRef,
        /// The capabilities the server asked for (its `data.requiredCapabilities`, as JSON),
        /// or its message when it named none.
        required: Box<str>,
        /// What to change, when the client can tell.
        hint: Option<Box<str>>,
    },
    /// The server's capabilities do not offer what a request needs: it was not sent.
    NotOffered {
        /// The server.
        server: Arc<str>,
        /// The request's method.
        method: &'static str,
        /// What the request was about: a URI, a prompt.
        name: Box<str>,
        /// The capability it needs, e.g. `resources.subscribe`.
        capability: Box<str>,
    },
    /// A skill (SEP-2640) was refused: a file of it failed a check against the server's own
    /// listing, and none of its content was used ([`crate::client`]'s skills).
    SkillRefused {
        /// The server.
        server: Arc<str>,
        /// The skill's name.
        skill: Box<str>,
        /// The file that failed.
        file: Box<str>,
        /// Which check failed.
        check: SkillCheck,
        /// What the check found.
        detail: Box<str>,
    },
    /// The server had to be started outside a tokio runtime.
    NoRuntime {
        /// The server.
        server: Arc<str>,
    },
}

impl fmt::Display for ClientError {
    /// ``MCP server `name` `` and what happened; the operator's line without the name is
    /// [`reason`](Self::reason).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let separator = match self {
            Self::ConnectionClosed { .. }
            | Self::SendFailed { .. }
            | Self::Pagination { .. }
            | Self::TaskFailed { .. }
            | Self::TaskCancelled { .. }
            | Self::TaskLost { .. }
            | Self::SkillRefused { .. } => ": ",
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
        match self {
            Self::ConnectFailed { source, .. } => Some(source),
            _ => None,
        }
    }
}

impl crate::telemetry::Failure for ClientError {
    fn error_type(&self) -> std::borrow::Cow<'static, str> {
        ClientError::error_type(self)
    }

    fn json_rpc(&self) -> Option<(i64, Option<&str>)> {
        match self {
            Self::JsonRpc { code, message, .. } => Some((*code, Some(message))),
            Self::MissingCapability { .. } => Some((
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

/// Which check refused a skill ([`ClientError::SkillRefused`]).
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
}

impl SkillCheck {
    /// The check as one word: `size`, `digest`, `frontmatter`, `not_listed`, `unreadable`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Size => "size",
            Self::Digest => "digest",
            Self::Frontmatter => "frontmatter",
            Self::NotListed => "not_listed",
            Self::Unreadable => "unreadable",
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
    /// give.
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
    /// The server the error is about.
    pub fn server(&self) -> &str {
        match self {
            Self::ConnectFailed { server, .. }
            | Self::Exited { server, .. }
            | Self::FrameTooLarge { server, .. }
            | Self::JsonRpc { server, .. }
            | Self::UnsupportedProtocolVersion { server, .. }
            | Self::ConnectionClosed { server, .. }
            | Self::SendFailed { server, .. }
            | Self::ServerFailed { server, .. }
            | Self::BackingOff { server, .. }
            | Self::Disabled { server }
            | Self::Pagination { server, .. }
            | Self::ProtocolViolation { server, .. }
            | Self::InitializeTimeout { server, .. }
            | Self::RequestTimeout { server, .. }
            | Self::TooManyInFlight { server, .. }
            | Self::InputRefused { server, .. }
            | Self::InputRounds { server, .. }
            | Self::NoCommonVersion { server, .. }
            | Self::NotModern { server, .. }
            | Self::TaskFailed { server, .. }
            | Self::TaskCancelled { server, .. }
            | Self::TaskLost { server, .. }
            | Self::MissingCapability { server, .. }
            | Self::NotOffered { server, .. }
            | Self::SkillRefused { server, .. }
            | Self::NoRuntime { server } => server,
        }
    }

    /// The request the error is about, if any.
    pub fn request(&self) -> Option<&RequestRef> {
        match self {
            Self::Exited { request, .. }
            | Self::FrameTooLarge { request, .. }
            | Self::ConnectionClosed { request, .. }
            | Self::ProtocolViolation { request, .. } => request.as_ref(),
            Self::JsonRpc { request, .. }
            | Self::SendFailed { request, .. }
            | Self::RequestTimeout { request, .. }
            | Self::InputRefused { request, .. }
            | Self::InputRounds { request, .. }
            | Self::TaskFailed { request, .. }
            | Self::TaskCancelled { request, .. }
            | Self::TaskLost { request, .. }
            | Self::MissingCapability { request, .. } => Some(request),
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
        match self {
            Self::SendFailed { failure, .. } => failure.message().to_owned(),
            Self::ConnectFailed { server, source } => {
                without_server(source.message(), server).to_owned()
            }
            Self::Exited {
                reason,
                stderr_tail,
                request,
                ..
            } => {
                let mut line = reason.clone();
                if let Some(r) = request {
                    line.push_str(&format!(" during {r}"));
                }
                line.push_str(&last_stderr_line(stderr_tail));
                line
            }
            Self::ServerFailed {
                failures,
                last_error,
                ..
            } => {
                let times = if *failures == 1 {
                    "1 failure".to_owned()
                } else {
                    format!("{failures} consecutive failures")
                };
                format!("marked failed after {times} (re-enable it to try again): {last_error}")
            }
            Self::BackingOff {
                retry_in,
                last_error,
                ..
            } => format!(
                "restarting, next attempt in {} ms: {last_error}",
                retry_in.as_millis()
            ),
            _ => Clause(self).to_string(),
        }
    }

    /// What the error means, in one word: see [`ErrorClass`].
    pub fn class(&self) -> ErrorClass {
        match self {
            Self::ConnectFailed { .. } => ErrorClass::Unreachable,
            Self::Exited { .. } | Self::ConnectionClosed { .. } => ErrorClass::Gone,
            Self::InitializeTimeout { .. } | Self::RequestTimeout { .. } => ErrorClass::Timeout,
            Self::SendFailed { .. } => ErrorClass::SendFailed,
            Self::JsonRpc { .. }
            | Self::TaskFailed { .. }
            | Self::TaskCancelled { .. }
            | Self::TaskLost { .. } => ErrorClass::Refused,
            Self::FrameTooLarge { .. }
            | Self::ProtocolViolation { .. }
            | Self::Pagination { .. }
            | Self::InputRounds { .. }
            | Self::SkillRefused { .. } => ErrorClass::Protocol,
            Self::UnsupportedProtocolVersion { .. }
            | Self::NoCommonVersion { .. }
            | Self::NotModern { .. } => ErrorClass::Version,
            Self::ServerFailed { .. }
            | Self::BackingOff { .. }
            | Self::Disabled { .. }
            | Self::TooManyInFlight { .. }
            | Self::NoRuntime { .. } => ErrorClass::Held,
            Self::MissingCapability { .. }
            | Self::NotOffered { .. }
            | Self::InputRefused { .. } => ErrorClass::Unsupported,
        }
    }

    /// The failure's `error.type` in telemetry (the OpenTelemetry MCP conventions): the
    /// JSON-RPC code for a JSON-RPC error (and -32021 for a missing capability), otherwise one
    /// low-cardinality word (`connect_failed`, `server_exited`, `connection_closed`,
    /// `frame_too_large`, `send_failed`, `protocol_violation`, `timeout`,
    /// `too_many_in_flight`, `unsupported_protocol_version`), `_OTHER` for the rest.
    pub fn error_type(&self) -> std::borrow::Cow<'static, str> {
        use std::borrow::Cow;
        Cow::Borrowed(match self {
            Self::JsonRpc { code, .. } => return Cow::Owned(code.to_string()),
            Self::MissingCapability { .. } => {
                return Cow::Owned(
                    crate::protocol::modern::MISSING_REQUIRED_CLIENT_CAPABILITY.to_string(),
                )
            }
            Self::ConnectFailed { .. } => "connect_failed",
            // An HTTP connection that ended unasked has no exit status: it was closed.
            Self::Exited {
                exit_status: Some(_),
                ..
            } => "server_exited",
            Self::Exited { .. } | Self::ConnectionClosed { .. } => "connection_closed",
            Self::FrameTooLarge { .. } => "frame_too_large",
            Self::SendFailed { .. } => "send_failed",
            Self::ProtocolViolation { .. } => "protocol_violation",
            Self::RequestTimeout { .. } | Self::InitializeTimeout { .. } => "timeout",
            Self::TooManyInFlight { .. } => "too_many_in_flight",
            Self::UnsupportedProtocolVersion { .. } | Self::NoCommonVersion { .. } => {
                "unsupported_protocol_version"
            }
            _ => "_OTHER",
        })
    }

    /// Whether a failed start was about the protocol era, so the era it assumed must be found
    /// again: a refused protocol version (-32022, [`UnsupportedProtocolVersion`],
    /// [`NoCommonVersion`]), a server that is not modern when told to be ([`NotModern`]), or a
    /// handshake the server answered with an error (a modern-only server refusing
    /// `initialize`, a `server/discover` refused in the modern way).
    ///
    /// [`UnsupportedProtocolVersion`]: Self::UnsupportedProtocolVersion
    /// [`NoCommonVersion`]: Self::NoCommonVersion
    /// [`NotModern`]: Self::NotModern
    pub fn is_about_the_era(&self) -> bool {
        match self {
            Self::JsonRpc { code, request, .. } => {
                *code == crate::protocol::modern::UNSUPPORTED_PROTOCOL_VERSION
                    || is_handshake(request.method)
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
        match self {
            Self::ConnectFailed { source, .. } => source.is_permanent(),
            // A 404 to `initialize` (the first request of a session, no session id): nothing
            // at the configured URL is an MCP endpoint, which no restart changes (a 404 to the
            // era probe alone is taken for a legacy server, which `initialize` then asks).
            Self::SendFailed {
                failure, request, ..
            } => {
                failure.is_permanent()
                    || (failure.http_status() == Some(404)
                        && (request.method == Initialize::METHOD
                            || (era_forced && is_handshake(request.method))))
            }
            Self::NoCommonVersion { .. } | Self::NotModern { .. } => true,
            Self::JsonRpc { request, code, .. } => {
                era_forced
                    && is_handshake(request.method)
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

    /// What sending the request met, for a [`SendFailed`](Self::SendFailed): delivered or
    /// not, worth retrying, permanent, the HTTP status.
    pub fn send_failure(&self) -> Option<&SendFailure> {
        match self {
            Self::SendFailed { failure, .. } => Some(failure),
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
        matches!(self, Self::SendFailed { failure, .. } if failure.is_retryable())
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
