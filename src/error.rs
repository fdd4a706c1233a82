//! [`Error`]: the one public error of kaged-mcp, made from the `BoxError`s of the stack once,
//! at the registry edge.
//!
//! Every variant names what failed: the server, the tool, the agent or the file. A tool result
//! flagged `isError` by its server is not an error here: it is `Ok(ToolResult)`.

use std::time::Duration;

use tower::BoxError;

use crate::config::ConfigErrors;
use crate::validate::{write_violations, Violation};

/// Writes violations as the validation layer's errors do.
struct Violations<'a>(&'a [Violation], usize);

impl std::fmt::Display for Violations<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write_violations(f, self.0, self.1)
    }
}

/// What went wrong with a session or a tool call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is invalid, or a secret is missing.
    #[error("configuration: {0}")]
    Config(#[from] ConfigErrors),
    /// No tool of that name is registered.
    #[error("unknown tool `{tool}`{}", hint.as_deref().map(|h| format!(": {h}")).unwrap_or_default())]
    UnknownTool {
        /// The name asked for.
        tool: String,
        /// Why, when the session can tell: a `tools` filter removed it, its server is not
        /// declared, the name lacks `mcp.<server>.`, or a near miss (`did you mean …?`).
        hint: Option<String>,
    },
    /// The tool belongs to a server that is not ready (it failed to start, is disabled or is
    /// restarting), so its tools are not registered now.
    #[error("server `{server}` is not ready ({state}){}", last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    ServerNotReady {
        /// The server.
        server: String,
        /// Its state: `failed`, `disabled`, `starting`, `restarting`, …, or `started, but its
        /// tools could not be listed` for a ready server whose `tools/list` failed at start.
        state: String,
        /// Its last error, if any.
        last_error: Option<String>,
    },
    /// The server offers the tool, but pinning holds it out of the catalog (`pins =
    /// "enforce"`): its definition differs from the one `mcp.lock` approved, or the lock does
    /// not have it. No server was contacted.
    #[error(
        "server `{server}`: tool `{tool}` is held: {reason}; {}",
        crate::pin::Verdict::approve_with(server)
    )]
    ToolHeld {
        /// The server.
        server: String,
        /// The tool, as the server names it.
        tool: String,
        /// How it differs from the lock, with the fields that changed.
        reason: String,
    },
    /// A skill the project keeps out (the server's `skills:` filter), or that the agent's
    /// `skills:` grants do not enable; nothing was read from the server.
    #[error("{}skill `mcp.{server}.{skill}` is not granted: {why}", agent.as_deref().map(|a| format!("agent `{a}`: ")).unwrap_or_default())]
    SkillNotGranted {
        /// The agent, when one asked.
        agent: Option<String>,
        /// The server.
        server: String,
        /// The skill's name.
        skill: String,
        /// Which rule refused it.
        why: String,
    },
    /// The agent's `tools:` block does not grant the tool; no server was contacted.
    #[error("tool `{tool}` is not granted to agent `{agent}`")]
    NotGranted {
        /// The agent.
        agent: String,
        /// The tool.
        tool: String,
    },
    /// The agent has no `tools:` block in the project.
    #[error("unknown agent `{agent}`: the project has no tools block for it")]
    UnknownAgent {
        /// The agent asked for.
        agent: String,
    },
    /// The server is an OAuth server without a usable token (none stored, or its refresh
    /// refused, or it needs a scope only a login can grant). The CLI exits 2.
    #[error("server `{server}` needs an OAuth login: run `kaged-mcp auth login {server}`")]
    LoginRequired {
        /// The server.
        server: String,
    },
    /// A request other than a tool call (`resources/read`, `prompts/get`, …) failed: the
    /// source names the server, the request and the cause (a JSON-RPC error, a timeout, a
    /// capability the server does not offer).
    #[error("server `{server}`: {method}: {}", source.reason())]
    Request {
        /// The server.
        server: String,
        /// The request's method.
        method: &'static str,
        /// The underlying error (boxed: every `Result` of the session carries this enum).
        #[source]
        source: Box<crate::client::ClientError>,
    },
    /// A resource read whose blobs do not fit the result cap: refused whole, never cut.
    #[error("server `{server}`: resources/read: {source} (raise `result_max_bytes` under [mcp] in config.toml)")]
    ReadTooLarge {
        /// The server.
        server: String,
        /// The URI, the size and the cap.
        source: crate::protocol::ReadTooLarge,
    },
    /// The agent may not read the server's resources: it is granted none of the server's
    /// tools; no server was contacted.
    #[error("agent `{agent}` may not read `{}` of server `{server}`: it is granted none of the server's tools", crate::transport::text::redact_uri(uri))]
    ResourceNotGranted {
        /// The agent.
        agent: String,
        /// The server.
        server: String,
        /// The URI asked for.
        uri: String,
    },
    /// No server of that key is declared.
    #[error("unknown MCP server `{server}`")]
    UnknownServer {
        /// The key asked for.
        server: String,
    },
    /// A registration under the reserved `mcp` namespace, or a name taken twice.
    #[error("cannot register `{tool}`: {reason}")]
    Registration {
        /// The tool name.
        tool: String,
        /// Why not.
        reason: String,
    },
    /// The call did not finish within the server's timeout.
    #[error("server `{server}`: tool `{tool}` timed out after {} ms{} (raise `timeout_ms` under [mcp.{server}] in local.toml, or `default_timeout_ms` under [mcp] in config.toml)", timeout.as_millis(), poll_interval.map(|p| format!(": its task, polled every {} ms as the server asked, had not changed", p.as_millis())).unwrap_or_default())]
    Timeout {
        /// The server.
        server: String,
        /// The tool, as the server knows it.
        tool: String,
        /// The timeout that fired (`timeout_ms` or the daemon default).
        timeout: Duration,
        /// When the call ran as an MCP task whose server asked to be polled only every so
        /// often, and the timeout came at a poll that found the task unchanged: that interval
        /// (the timeout never fires between two such polls).
        poll_interval: Option<Duration>,
    },
    /// The call failed on its way to or from the server: transport, protocol, JSON-RPC error,
    /// a failed server. The source says what, and names the server and request id.
    #[error("server `{server}`: tool `{tool}`: {source}")]
    Call {
        /// The server.
        server: String,
        /// The tool, as the server knows it.
        tool: String,
        /// The underlying error.
        #[source]
        source: BoxError,
    },
    /// The call's arguments break the tool's `inputSchema`: the call was not sent. A caller's
    /// error, never retried: hand it back to the agent as something to fix.
    #[error("server `{server}`: tool `{tool}`: the arguments break the tool's inputSchema (not sent): {} (to send such arguments anyway, set `validate = \"results\"` under [mcp.{server}] in local.toml)", Violations(violations, *more))]
    InvalidArguments {
        /// The server.
        server: String,
        /// The tool, as the server knows it.
        tool: String,
        /// Where and how (at most [`MAX_VIOLATIONS`](crate::validate::MAX_VIOLATIONS)).
        violations: Vec<Violation>,
        /// How many more violations there were.
        more: usize,
    },
    /// The tool's result breaks its `outputSchema` (wrong `structuredContent`, or none although
    /// the tool declares a schema).
    #[error("server `{server}`: tool `{tool}`: the result breaks the tool's outputSchema: {} (to accept such results, set `validate = \"arguments\"` under [mcp.{server}] in local.toml)", Violations(violations, *more))]
    InvalidResult {
        /// The server.
        server: String,
        /// The tool, as the server knows it.
        tool: String,
        /// Where and how (at most [`MAX_VIOLATIONS`](crate::validate::MAX_VIOLATIONS)).
        violations: Vec<Violation>,
        /// How many more violations there were.
        more: usize,
    },
    /// A builtin or plugin tool's own handler failed.
    #[error("tool `{tool}`: {source}")]
    Handler {
        /// The tool.
        tool: String,
        /// The handler's error.
        #[source]
        source: BoxError,
    },
}

impl Error {
    /// What kind of failure this is, as one stable word scripts can match on (`kaged-mcp call
    /// --json` prints it): `config`, `unknown_tool`, `server_not_ready`, `not_granted`,
    /// `unknown_agent`, `login_required`, `unknown_server`, `registration`, `timeout`,
    /// `call_failed`, `invalid_arguments`, `invalid_result`, `handler`, `request_failed`,
    /// `read_too_large`, `resource_not_granted`, `tool_held`, `skill_not_granted`.
    pub fn kind(&self) -> &'static str {
        match self {
            Error::Config(_) => "config",
            Error::UnknownTool { .. } => "unknown_tool",
            Error::ServerNotReady { .. } => "server_not_ready",
            Error::NotGranted { .. } => "not_granted",
            Error::UnknownAgent { .. } => "unknown_agent",
            Error::LoginRequired { .. } => "login_required",
            Error::UnknownServer { .. } => "unknown_server",
            Error::Registration { .. } => "registration",
            Error::Timeout { .. } => "timeout",
            Error::Call { .. } => "call_failed",
            Error::InvalidArguments { .. } => "invalid_arguments",
            Error::InvalidResult { .. } => "invalid_result",
            Error::Handler { .. } => "handler",
            Error::Request { .. } => "request_failed",
            Error::ReadTooLarge { .. } => "read_too_large",
            Error::ResourceNotGranted { .. } => "resource_not_granted",
            Error::ToolHeld { .. } => "tool_held",
            Error::SkillNotGranted { .. } => "skill_not_granted",
        }
    }

    /// What the failure below means, when a server's client failed
    /// ([`ClientError::class`](crate::client::ClientError::class)): the same classification the
    /// retry policy, supervision and telemetry use. `None` for a failure of the registry or the
    /// configuration (an unknown tool, a grant, bad arguments).
    pub fn class(&self) -> Option<crate::client::ErrorClass> {
        let source: &(dyn std::error::Error + 'static) = match self {
            Error::Call { source, .. } => &**source,
            Error::Request { source, .. } => &**source,
            _ => return None,
        };
        crate::client::ClientError::find(source).map(crate::client::ClientError::class)
    }

    /// The server the error is about, when there is one.
    pub fn server(&self) -> Option<&str> {
        match self {
            Error::ServerNotReady { server, .. }
            | Error::LoginRequired { server }
            | Error::UnknownServer { server }
            | Error::Timeout { server, .. }
            | Error::Call { server, .. }
            | Error::InvalidArguments { server, .. }
            | Error::InvalidResult { server, .. }
            | Error::Request { server, .. }
            | Error::ReadTooLarge { server, .. }
            | Error::ResourceNotGranted { server, .. }
            | Error::ToolHeld { server, .. }
            | Error::SkillNotGranted { server, .. } => Some(server),
            _ => None,
        }
    }

    /// The operator's line: the server and tool named once, then what happened and what to
    /// change, without the chain of underlying errors that [`Display`](std::fmt::Display)
    /// keeps (for logs and `kaged-mcp -v`). A failed call says
    /// ``server `down`: tool `echo`: cannot connect to http://127.0.0.1:8101/mcp: connection refused``.
    pub fn reason(&self) -> String {
        match self {
            Error::Call {
                server,
                tool,
                source,
            } => match crate::client::ClientError::find(&**source) {
                Some(c) => format!("server `{server}`: tool `{tool}`: {}", c.reason()),
                None => self.to_string(),
            },
            _ => self.to_string(),
        }
    }
}
