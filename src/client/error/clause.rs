//! What each [`ClientError`] says happened, without the server's name: the text after
//! ``MCP server `name` `` in its `Display`, and the operator's line for most errors.

use std::fmt;

use super::{About, ClientError, Stderr};
use crate::protocol::lifecycle::SUPPORTED_PROTOCOL_VERSIONS;
use crate::protocol::modern::SUPPORTED_MODERN_VERSIONS;

/// What happened, without the server's name: the text after ``MCP server `name` `` in
/// [`ClientError`]'s `Display`, and the operator's line for most errors.
pub(super) struct Clause<'a>(pub(super) &'a ClientError);

impl fmt::Display for Clause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ClientError::ConnectFailed { .. }
            | ClientError::Exited { .. }
            | ClientError::FrameTooLarge { .. }
            | ClientError::ConnectionClosed { .. }
            | ClientError::SendFailed { .. }
            | ClientError::ProtocolViolation { .. } => self.connection(f),
            ClientError::UnsupportedProtocolVersion { .. }
            | ClientError::NoCommonVersion { .. }
            | ClientError::NotModern { .. }
            | ClientError::ServerFailed { .. }
            | ClientError::BackingOff { .. }
            | ClientError::Disabled { .. }
            | ClientError::NoRuntime { .. }
            | ClientError::InitializeTimeout { .. }
            | ClientError::TooManyInFlight { .. } => self.server(f),
            _ => self.request(f),
        }
    }
}

impl Clause<'_> {
    /// What the connection or the transport met.
    fn connection(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ClientError::ConnectFailed { source, .. } => {
                write!(f, "could not be started: {source}")
            }
            ClientError::Exited {
                reason,
                stderr_tail,
                request,
                ..
            } => write!(f, "{reason}{}{}", About(request), Stderr(stderr_tail)),
            ClientError::FrameTooLarge {
                limit,
                len,
                request,
                ..
            } => write!(
                f,
                "sent a message of {len} bytes, over the frame limit of {limit} bytes{}",
                About(request)
            ),
            ClientError::ConnectionClosed {
                request, detail, ..
            } => write!(f, "connection closed{}: {detail}", About(request)),
            ClientError::SendFailed {
                request, failure, ..
            } => {
                let not_delivered = if failure.not_delivered() {
                    " (not delivered)"
                } else {
                    ""
                };
                write!(f, "sending {request} failed{not_delivered}: {failure}")
            }
            ClientError::ProtocolViolation {
                request, detail, ..
            } => write!(f, "violated the protocol{}: {detail}", About(request)),
            _ => Ok(()),
        }
    }

    /// What the server is, or the state the client holds it in.
    fn server(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ClientError::UnsupportedProtocolVersion { version, .. } => write!(
                f,
                "answered initialize with protocol version {version:?}, which this client does not support (it supports {})",
                SUPPORTED_PROTOCOL_VERSIONS.join(", ")
            ),
            ClientError::ServerFailed {
                failures,
                last_error,
                ..
            } => write!(
                f,
                "is marked failed after {failures} consecutive failures (re-enable it to try again); last error: {last_error}"
            ),
            ClientError::BackingOff {
                retry_in,
                last_error,
                ..
            } => write!(
                f,
                "is restarting, next attempt in {} ms; last error: {last_error}",
                retry_in.as_millis()
            ),
            ClientError::Disabled { .. } => f.write_str("is disabled"),
            ClientError::InitializeTimeout { after, .. } => write!(
                f,
                "did not answer initialize within {} ms",
                after.as_millis()
            ),
            ClientError::TooManyInFlight { limit, .. } => {
                write!(f, "already has {limit} requests in flight (the limit)")
            }
            ClientError::NoCommonVersion { supported, .. } => write!(
                f,
                "speaks protocol versions {}, none of which this client speaks ({}, {})",
                if supported.is_empty() {
                    "(none listed)".to_owned()
                } else {
                    supported.join(", ")
                },
                SUPPORTED_MODERN_VERSIONS.join(", "),
                SUPPORTED_PROTOCOL_VERSIONS.join(", ")
            ),
            ClientError::NotModern { server, detail } => write!(
                f,
                "is configured with era = \"modern\" but did not answer server/discover as a 2026-07-28 server: {detail} (set era = \"auto\" or \"legacy\" under [mcp.{server}] in local.toml)"
            ),
            ClientError::NoRuntime { .. } => {
                f.write_str("cannot be started outside a tokio runtime")
            }
            _ => Ok(()),
        }
    }

    /// How one request was answered or refused.
    fn request(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0 {
            ClientError::JsonRpc {
                request,
                code,
                message,
                ..
            } => write!(f, "answered {request} with JSON-RPC error {code}: {message}"),
            ClientError::Pagination { method, detail, .. } => {
                write!(f, "{method} stopped: {detail}")
            }
            ClientError::RequestTimeout { request, after, .. } => write!(
                f,
                "did not answer {request} within {} ms; check that it is responsive or raise its `timeout_ms`",
                after.as_millis()
            ),
            ClientError::InputRefused {
                request,
                input,
                method,
                detail,
                ..
            } => write!(
                f,
                "asked for input `{input}` ({method}) to answer {request}; refused: {detail}"
            ),
            ClientError::InputRounds {
                request, rounds, ..
            } => write!(
                f,
                "still asked for input after {rounds} rounds of {request}; the call is given up"
            ),
            ClientError::TaskFailed {
                request,
                task_id,
                code,
                message,
                ..
            } => write!(
                f,
                "task {task_id} of {request} failed with JSON-RPC error {code}: {message}"
            ),
            ClientError::TaskCancelled {
                request,
                task_id,
                message,
                ..
            } => {
                write!(f, "task {task_id} of {request} was cancelled by the server")?;
                match message {
                    Some(m) => write!(f, ": {m}"),
                    None => Ok(()),
                }
            }
            ClientError::TaskLost {
                request,
                task_id,
                detail,
                ..
            } => write!(f, "task {task_id} of {request} was lost: {detail}"),
            ClientError::MissingCapability {
                request,
                required,
                hint,
                ..
            } => {
                write!(f, "refused {request}: it needs the client capability {required}")?;
                match hint {
                    Some(h) => write!(f, " ({h})"),
                    None => Ok(()),
                }
            }
            ClientError::NotOffered {
                method,
                name,
                capability,
                ..
            } => write!(
                f,
                "does not offer {capability} (its capabilities at start); {method} {name} was not sent"
            ),
            ClientError::SkillRefused {
                skill,
                file,
                check,
                detail,
                ..
            } => write!(
                f,
                "skill `{skill}` refused: {file} failed its {check} check ({detail}); none of it was used"
            ),
            _ => Ok(()),
        }
    }
}
