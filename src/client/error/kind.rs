//! What happened, in two forms: [`Kind`], the crate's own, holding each failure's parts, and
//! [`ErrorKind`], the public word for it, which a caller compares and matches on.

use std::process::ExitStatus;
use std::time::Duration;

use serde_json::Value;

use super::SkillCheck;
use crate::transport::{SendFailure, TransportError};

/// What happened to a request or a server, with the parts that say how: the representation
/// behind [`ClientError`](super::ClientError), private to the crate so it can grow and change.
/// The server and the request are the error's, never a kind's.
#[derive(Debug, Clone)]
pub(crate) enum Kind {
    /// The transport could not connect (stdio: the process could not be spawned).
    ConnectFailed { source: TransportError },
    /// The server went away (stdio: the process exited, or its stdout closed).
    Exited {
        /// What happened, e.g. `exited (exit status: 3)`.
        reason: String,
        /// The exit status, when the transport runs a process.
        exit_status: Option<ExitStatus>,
        /// The last bytes the server wrote to stderr.
        stderr_tail: String,
    },
    /// The server sent a message longer than the frame limit; the message was discarded.
    /// `stopped`: reading stopped at the limit, so `len` (declared or read) is a lower bound.
    FrameTooLarge {
        limit: usize,
        len: u64,
        stopped: bool,
    },
    /// The server answered with a JSON-RPC error.
    JsonRpc {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    /// The server chose a protocol revision this client does not speak.
    UnsupportedProtocolVersion { version: String },
    /// The connection is closed (or was shut down by the client).
    ConnectionClosed { detail: String },
    /// Sending the request failed (HTTP: its POST, or the stream of its answer).
    SendFailed { failure: SendFailure },
    /// The server failed too many times in a row.
    ServerFailed { failures: u32, last_error: String },
    /// The server failed recently and the next restart attempt is not due yet.
    BackingOff {
        retry_in: Duration,
        last_error: String,
    },
    /// The server is disabled (by the operator, or shut down).
    Disabled,
    /// A list did not end properly.
    Pagination {
        method: &'static str,
        detail: String,
    },
    /// The server sent something the protocol does not allow.
    ProtocolViolation { detail: String },
    /// The server did not answer `initialize` in time.
    InitializeTimeout { after: Duration },
    /// The server did not answer a request the client sent on its own in time.
    RequestTimeout { after: Duration },
    /// The bound on calls in flight is reached.
    TooManyInFlight { limit: usize },
    /// The caller's params of a `method` request did not serialize to JSON (nothing was sent).
    BadParams {
        method: &'static str,
        detail: String,
    },
    /// The server asked for input the client does not give.
    InputRefused {
        input: Box<str>,
        method: Box<str>,
        detail: Box<str>,
    },
    /// The server still asked for input after too many rounds of the same call.
    InputRounds { rounds: u32 },
    /// The server speaks no protocol version this client speaks.
    NoCommonVersion { supported: Vec<String> },
    /// The server is configured modern and did not answer `server/discover` as one.
    NotModern { detail: String },
    /// The task running the call failed.
    TaskFailed {
        task_id: Box<str>,
        code: i64,
        message: Box<str>,
        data: Option<Box<Value>>,
    },
    /// The server cancelled the task running the call.
    TaskCancelled {
        task_id: Box<str>,
        message: Option<Box<str>>,
    },
    /// The task running the call can no longer be followed.
    TaskLost { task_id: Box<str>, detail: Box<str> },
    /// The server refused a request because the client lacks a capability (-32021).
    MissingCapability {
        required: Box<str>,
        hint: Option<Box<str>>,
    },
    /// The server's capabilities do not offer what a request needs: it was not sent.
    NotOffered {
        method: &'static str,
        name: Box<str>,
        capability: Box<str>,
    },
    /// The server serves no skill by this name or URI: its listing lacks it, and `skills/get`
    /// was refused (or could not be asked: `name` is neither a skill name nor a URI).
    UnknownSkill { name: Box<str>, why: Box<str> },
    /// A skill (SEP-2640) was refused.
    SkillRefused {
        skill: Box<str>,
        file: Box<str>,
        check: SkillCheck,
        detail: Box<str>,
    },
    /// The server had to be started outside a tokio runtime.
    NoRuntime,
}

/// What went wrong, in one word: which failure a [`ClientError`](super::ClientError) is.
/// Its parts are the error's accessors ([`code`](super::ClientError::code),
/// [`exit_status`](super::ClientError::exit_status), [`retry_in`](super::ClientError::retry_in),
/// …); what it means to whoever must act is its [`class`](super::ClientError::class).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ErrorKind {
    /// The transport could not connect (stdio: the process could not be spawned); the
    /// transport's error is the [`source`](std::error::Error::source).
    ConnectFailed,
    /// The server went away (stdio: the process exited, or its stdout closed); see
    /// [`exit_status`](super::ClientError::exit_status) and
    /// [`stderr_tail`](super::ClientError::stderr_tail).
    Exited,
    /// The server sent a message longer than the frame limit; the message was discarded. See
    /// [`limit`](super::ClientError::limit) and [`frame_len`](super::ClientError::frame_len).
    FrameTooLarge,
    /// The server answered with a JSON-RPC error: [`code`](super::ClientError::code),
    /// [`message`](super::ClientError::message), [`data`](super::ClientError::data).
    JsonRpc,
    /// The server chose a protocol revision this client does not speak
    /// ([`version`](super::ClientError::version)).
    UnsupportedProtocolVersion,
    /// The connection is closed (or was shut down by the client).
    ConnectionClosed,
    /// Sending the request failed (HTTP: its POST, or the stream of its answer); see
    /// [`send_failure`](super::ClientError::send_failure). When the server provably did not
    /// process it and sending it again may help, the error comes wrapped in
    /// [`NotSent`](kaged_mcp_layers::retry::NotSent) so the retry policy may send it again
    /// whatever the tool.
    SendFailed,
    /// The server failed too many times in a row
    /// ([`failures`](super::ClientError::failures)); calls fail fast until it is re-enabled.
    ServerFailed,
    /// The server failed recently and the next restart attempt is not due yet
    /// ([`retry_in`](super::ClientError::retry_in)).
    BackingOff,
    /// The server is disabled (by the operator, or shut down).
    Disabled,
    /// A list (`tools/list`, `resources/list`, …) did not end properly: a cursor seen twice,
    /// too many pages or items.
    Pagination,
    /// The server sent something the protocol does not allow.
    ProtocolViolation,
    /// The server did not answer `initialize` in time.
    InitializeTimeout,
    /// The server did not answer a request within
    /// [`ClientOptions::request_timeout`](crate::client::ClientOptions::request_timeout); the
    /// request was cancelled.
    RequestTimeout,
    /// The bound on calls in flight is reached ([`limit`](super::ClientError::limit)).
    TooManyInFlight,
    /// The params a caller gave [`McpClient::request`](crate::client::McpClient::request) did
    /// not serialize to JSON (their `Serialize` failed, or a map had keys that are not
    /// strings): nothing was sent.
    BadParams,
    /// The server asked for input the client does not give (a multi round-trip request of
    /// the 2026-07-28 revision): sampling (ADR-0043 §6), or a request the server-request
    /// handler refused. The call is not retried.
    InputRefused,
    /// The server still asked for input after
    /// [`MAX_INPUT_ROUNDS`](crate::client::MAX_INPUT_ROUNDS) retries of the same call.
    InputRounds,
    /// The server speaks no protocol version this client speaks
    /// ([`supported_versions`](super::ClientError::supported_versions)).
    NoCommonVersion,
    /// The server is configured to speak the modern era (`era = "modern"`) and did not answer
    /// `server/discover` as a modern server.
    NotModern,
    /// The server ran the call as a task, and the task failed: the JSON-RPC error it ended
    /// with ([`code`](super::ClientError::code), [`message`](super::ClientError::message),
    /// [`task_id`](super::ClientError::task_id)).
    TaskFailed,
    /// The server ran the call as a task, and cancelled it.
    TaskCancelled,
    /// The server ran the call as a task, and the task can no longer be followed: the server
    /// no longer knows it, exited, or could not be asked for it several times in a row. The
    /// tool was not called again.
    TaskLost,
    /// The server refused a request because the client lacks a capability (-32021,
    /// 2026-07-28); [`capability`](super::ClientError::capability) names it.
    MissingCapability,
    /// The server's capabilities do not offer what a request needs
    /// ([`capability`](super::ClientError::capability)): it was not sent. Also a skill the
    /// server neither lists nor serves by `skills/get` (SEP-2640).
    NotOffered,
    /// A skill (SEP-2640) was refused: a file of it failed a check against the server's own
    /// listing ([`skill_check`](super::ClientError::skill_check)), and none of its content was
    /// used.
    SkillRefused,
    /// The server had to be started outside a tokio runtime.
    NoRuntime,
}

impl Kind {
    /// The public word for this kind.
    pub(crate) fn word(&self) -> ErrorKind {
        match self {
            Self::ConnectFailed { .. } => ErrorKind::ConnectFailed,
            Self::Exited { .. } => ErrorKind::Exited,
            Self::FrameTooLarge { .. } => ErrorKind::FrameTooLarge,
            Self::JsonRpc { .. } => ErrorKind::JsonRpc,
            Self::UnsupportedProtocolVersion { .. } => ErrorKind::UnsupportedProtocolVersion,
            Self::ConnectionClosed { .. } => ErrorKind::ConnectionClosed,
            Self::SendFailed { .. } => ErrorKind::SendFailed,
            Self::ServerFailed { .. } => ErrorKind::ServerFailed,
            Self::BackingOff { .. } => ErrorKind::BackingOff,
            Self::Disabled => ErrorKind::Disabled,
            Self::Pagination { .. } => ErrorKind::Pagination,
            Self::ProtocolViolation { .. } => ErrorKind::ProtocolViolation,
            Self::InitializeTimeout { .. } => ErrorKind::InitializeTimeout,
            Self::RequestTimeout { .. } => ErrorKind::RequestTimeout,
            Self::TooManyInFlight { .. } => ErrorKind::TooManyInFlight,
            Self::BadParams { .. } => ErrorKind::BadParams,
            Self::InputRefused { .. } => ErrorKind::InputRefused,
            Self::InputRounds { .. } => ErrorKind::InputRounds,
            Self::NoCommonVersion { .. } => ErrorKind::NoCommonVersion,
            Self::NotModern { .. } => ErrorKind::NotModern,
            Self::TaskFailed { .. } => ErrorKind::TaskFailed,
            Self::TaskCancelled { .. } => ErrorKind::TaskCancelled,
            Self::TaskLost { .. } => ErrorKind::TaskLost,
            Self::MissingCapability { .. } => ErrorKind::MissingCapability,
            Self::NotOffered { .. } | Self::UnknownSkill { .. } => ErrorKind::NotOffered,
            Self::SkillRefused { .. } => ErrorKind::SkillRefused,
            Self::NoRuntime => ErrorKind::NoRuntime,
        }
    }
}
