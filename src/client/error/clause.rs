//! What each [`ClientError`] says happened, without the server's name: the text after
//! ``MCP server `name` `` in its `Display`, and the operator's line for most errors.

use std::fmt;

use super::{About, ClientError, Kind, Req, Stderr};
use crate::protocol::lifecycle::SUPPORTED_PROTOCOL_VERSIONS;
use crate::protocol::modern::SUPPORTED_MODERN_VERSIONS;

/// What happened, without the server's name: the text after ``MCP server `name` `` in
/// [`ClientError`]'s `Display`, and the operator's line for most errors.
pub(super) struct Clause<'a>(pub(super) &'a ClientError);

impl fmt::Display for Clause<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.parts() {
            Kind::ConnectFailed { .. }
            | Kind::Exited { .. }
            | Kind::FrameTooLarge { .. }
            | Kind::ConnectionClosed { .. }
            | Kind::SendFailed { .. }
            | Kind::ProtocolViolation { .. } => self.connection(f),
            Kind::UnsupportedProtocolVersion { .. }
            | Kind::NoCommonVersion { .. }
            | Kind::NotModern { .. }
            | Kind::ServerFailed { .. }
            | Kind::BackingOff { .. }
            | Kind::Disabled
            | Kind::NoRuntime
            | Kind::InitializeTimeout { .. }
            | Kind::TooManyInFlight { .. } => self.server(f),
            _ => self.request(f),
        }
    }
}

impl Clause<'_> {
    /// What the connection or the transport met.
    fn connection(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let request = Req(self.0.request());
        match self.0.parts() {
            Kind::ConnectFailed { source, .. } => {
                write!(f, "could not be started: {source}")
            }
            Kind::Exited {
                reason,
                stderr_tail,
                ..
            } => write!(
                f,
                "{reason}{}{}",
                About(self.0.request()),
                Stderr(stderr_tail)
            ),
            Kind::FrameTooLarge {
                limit,
                len,
                stopped,
            } => {
                let at_least = if *stopped { "at least " } else { "" };
                write!(
                    f,
                    "sent a message too large: {at_least}{len} bytes, over the frame limit of \
                     {limit} bytes{}; it was discarded{}. A larger limit is `frame_limit_bytes` \
                     under [mcp] in config.toml (`ClientOptions::frame_limit`)",
                    About(self.0.request()),
                    if *stopped {
                        ", unread past the limit"
                    } else {
                        ""
                    },
                )
            }
            Kind::ConnectionClosed { detail, .. } => {
                write!(f, "connection closed{}: {detail}", About(self.0.request()))
            }
            Kind::SendFailed { failure, .. } => {
                let not_delivered = if failure.not_delivered() {
                    " (not delivered)"
                } else {
                    ""
                };
                write!(f, "sending {request} failed{not_delivered}: {failure}")
            }
            Kind::ProtocolViolation { detail, .. } => write!(
                f,
                "violated the protocol{}: {detail}",
                About(self.0.request())
            ),
            _ => Ok(()),
        }
    }

    /// What the server is, or the state the client holds it in.
    fn server(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.0.parts() {
            Kind::UnsupportedProtocolVersion { version, .. } => write!(
                f,
                "answered initialize with protocol version {version:?}, which this client does not support (it supports {})",
                SUPPORTED_PROTOCOL_VERSIONS.join(", ")
            ),
            Kind::ServerFailed {
                failures,
                last_error,
                ..
            } => write!(
                f,
                "is marked failed after {failures} consecutive failures (re-enable it to try again); last error: {last_error}"
            ),
            Kind::BackingOff {
                retry_in,
                last_error,
                ..
            } => write!(
                f,
                "is restarting, next attempt in {} ms; last error: {last_error}",
                retry_in.as_millis()
            ),
            Kind::Disabled => f.write_str("is disabled"),
            Kind::InitializeTimeout { after, .. } => write!(
                f,
                "did not answer initialize within {} ms",
                after.as_millis()
            ),
            Kind::TooManyInFlight { limit, .. } => {
                write!(f, "already has {limit} requests in flight (the limit)")
            }
            Kind::NoCommonVersion { supported, .. } => write!(
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
            Kind::NotModern { detail } => write!(
                f,
                "is configured with era = \"modern\" but did not answer server/discover as a 2026-07-28 server: {detail} (set era = \"auto\" or \"legacy\" under [mcp.{server}] in local.toml)",
                server = self.0.server()
            ),
            Kind::NoRuntime => {
                f.write_str("cannot be started outside a tokio runtime")
            }
            _ => Ok(()),
        }
    }

    /// How one request was answered or refused.
    fn request(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let request = Req(self.0.request());
        match self.0.parts() {
            Kind::JsonRpc {
                code,
                message,
                ..
            } => write!(f, "answered {request} with JSON-RPC error {code}: {message}"),
            Kind::Pagination { method, detail, .. } => {
                write!(f, "{method} stopped: {detail}")
            }
            Kind::RequestTimeout { after, .. } => write!(
                f,
                "did not answer {request} within {} ms; check that it is responsive or raise its `timeout_ms`",
                after.as_millis()
            ),
            Kind::InputRefused {
                input,
                method,
                detail,
                ..
            } => write!(
                f,
                "asked for input `{input}` ({method}) to answer {request}; refused: {detail}"
            ),
            Kind::InputRounds {
                rounds, ..
            } => write!(
                f,
                "still asked for input after {rounds} rounds of {request}; the call is given up"
            ),
            Kind::TaskFailed {
                task_id,
                code,
                message,
                ..
            } => write!(
                f,
                "task {task_id} of {request} failed with JSON-RPC error {code}: {message}"
            ),
            Kind::TaskCancelled {
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
            Kind::TaskLost {
                task_id,
                detail,
                ..
            } => write!(f, "task {task_id} of {request} was lost: {detail}"),
            Kind::BadParams { method, detail } => {
                write!(f, "{method} not sent: its params are not JSON: {detail}")
            }
            Kind::MissingCapability {
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
            Kind::NotOffered {
                method,
                name,
                capability,
                ..
            } => write!(
                f,
                "does not offer {capability} (its capabilities at start); {method} {name} was not sent"
            ),
            Kind::UnknownSkill { name, why } => write!(f, "serves no skill `{name}`: {why}"),
            // A file the skill does not list was asked for (a typo, or a path out of the
            // skill): no check failed, nothing was read.
            Kind::SkillRefused {
                skill,
                file,
                check: super::SkillCheck::NotListed,
                ..
            } => write!(
                f,
                "skill `{skill}` lists no file `{file}`; nothing of it was read"
            ),
            Kind::SkillRefused {
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
