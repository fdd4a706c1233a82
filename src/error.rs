//! [`Error`]: the one public error of kaged-mcp, made from the `BoxError`s of the stack once,
//! at the registry edge.
//!
//! Every variant names what failed: the server, the tool, the agent or the file. A tool result
//! flagged `isError` by its server is not an error here: it is `Ok(ToolResult)`.

use std::time::Duration;

use tower::BoxError;

use crate::config::ConfigErrors;

/// What went wrong with a session or a tool call.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The configuration is invalid, or a secret is missing.
    #[error("configuration: {0}")]
    Config(#[from] ConfigErrors),
    /// No tool of that name is registered.
    #[error("unknown tool `{tool}`")]
    UnknownTool {
        /// The name asked for.
        tool: String,
    },
    /// The tool belongs to a server that is not ready (it failed to start, is disabled or is
    /// restarting), so its tools are not registered now.
    #[error("server `{server}` is not ready ({state}){}", last_error.as_deref().map(|e| format!(": {e}")).unwrap_or_default())]
    ServerNotReady {
        /// The server.
        server: String,
        /// Its state: `failed`, `disabled`, `starting`, `restarting`, …
        state: String,
        /// Its last error, if any.
        last_error: Option<String>,
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
    #[error("server `{server}`: tool `{tool}` timed out after {} ms", timeout.as_millis())]
    Timeout {
        /// The server.
        server: String,
        /// The tool, as the server knows it.
        tool: String,
        /// The timeout that fired (`timeout_ms` or the daemon default).
        timeout: Duration,
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
