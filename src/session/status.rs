//! What the session tells of its servers: [`ServerStatus`] (state, counters, last error as
//! the operator's line and as the whole chain) and [`StartFailure`] (what failed at start).

use serde::Serialize;

use super::Session;
use crate::client::{McpClient, ServerState};

/// A server's state as the session sees it.
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct ServerStatus {
    /// The server key.
    pub server: String,
    /// Its transport: `stdio`, `streamable-http` or `sse`.
    pub transport: &'static str,
    /// `starting`, `ready`, `restarting`, `failed` or `disabled` (never `restarting` in a
    /// [one-shot](super::SessionOptions::one_shot) session: nothing will restart the server).
    pub state: String,
    /// How many of its tools are registered.
    pub tools: usize,
    /// How its catalog is held to `mcp.lock`: `enforce`, `warn` or `off` ([`crate::pin`]).
    pub pins: &'static str,
    /// The tools it offers that pinning holds out of the catalog: the server's name for
    /// each → why (how it differs from `mcp.lock`).
    pub held: std::collections::BTreeMap<String, String>,
    /// The last error as the operator's line (what happened and what to change, without the
    /// server's name), if any.
    pub last_error: Option<String>,
    /// The same error in full, with its chain of causes (what `-v` prints).
    pub error_detail: Option<String>,
    /// Consecutive failures to start the server or keep it up: at
    /// [`ClientOptions::max_consecutive_failures`](crate::client::ClientOptions::max_consecutive_failures)
    /// (5) the state is `failed`; a refusal a restart cannot fix (an HTTP 401 or 403, a
    /// redirect, an OAuth login to make, no protocol version in common, the era set in
    /// `local.toml` refused) makes it `failed` at the first. Back to 0 once a session that ran
    /// well ends (it answered a call, or lived `stable_after`), so a ready server may still
    /// show the failures before its last start.
    pub consecutive_failures: u32,
    /// Calls since the session started, through the server's stack (as agents see them).
    pub calls: u64,
    /// Calls answered with a tool error (`isError: true`).
    pub tool_errors: u64,
    /// Calls that failed (transport, protocol, JSON-RPC error, server not running), timeouts
    /// excluded.
    pub failed_calls: u64,
    /// Calls that timed out.
    pub timeouts: u64,
    /// Times the server was started again after its first start.
    pub restarts: u64,
    /// The protocol era it speaks (`legacy` or `modern`; see [`crate::client::era`]), once it
    /// started.
    pub era: Option<&'static str>,
    /// The protocol version it speaks, once it started.
    pub protocol_version: Option<String>,
    /// What the server said about itself when it started (`serverInfo`: `name`, `version`,
    /// `title`, `websiteUrl`, `description`, `icons`, … as sent), once it started.
    pub server_info: Option<crate::protocol::Implementation>,
    /// The capabilities it announced (`tools`, `resources`, `prompts`, `logging`, …), as sent.
    pub capabilities: Option<serde_json::Value>,
    /// The instructions it gave its clients, whole, as pinning allows them: under
    /// `pins = "enforce"`, changed instructions are held and these are the approved ones (or
    /// none); see [`ServerPins::instructions`](crate::pin::ServerPins::instructions).
    pub instructions: Option<String>,
    /// Whether the server's instructions differ from `mcp.lock` and are held (not shown in
    /// [`instructions`](Self::instructions)) until approved.
    pub instructions_held: bool,
    /// The era the operator asked for (`auto`, `legacy` or `modern`, from `local.toml`).
    pub era_setting: &'static str,
    /// Median call latency in milliseconds (a histogram estimate, at most ~25 % high); `None`
    /// before the first call.
    pub p50_ms: Option<f64>,
    /// 99th percentile call latency in milliseconds (same estimate).
    pub p99_ms: Option<f64>,
    /// Calls the server runs as tasks now ([`crate::client::tasks`]).
    pub tasks_in_flight: u64,
    /// Tasks that ended: `completed` (with a result, `isError` or not).
    pub tasks_completed: u64,
    /// Tasks that ended `failed` or were lost (the server no longer knew them, or exited).
    pub tasks_failed: u64,
    /// Tasks cancelled: by the server, or by the client when the call timed out or its caller
    /// gave up (`tasks/cancel` sent).
    pub tasks_cancelled: u64,
}

/// A server that did not start and list its tools when the session started (or when it was
/// last [enabled](Session::enable)): see [`Session::start_failures`].
#[derive(Debug, Clone, Serialize)]
#[non_exhaustive]
pub struct StartFailure {
    /// The server key.
    pub server: String,
    /// The operator's line: what happened and what to change, without the server's name.
    pub reason: String,
    /// The whole error, with its chain of causes.
    pub detail: String,
}

impl StartFailure {
    /// A failure told by one text (which may start with ``server `key`: ``, as the
    /// assembler's errors do: the operator's line names the server once, in front).
    pub(super) fn told(server: &str, text: String) -> Self {
        Self {
            server: server.to_owned(),
            reason: crate::client::without_server(&text, server).to_owned(),
            detail: text,
        }
    }
}

impl Session {
    /// The servers whose start (or last [`enable`](Self::enable)) failed, in declaration
    /// order; disabled servers are not among them.
    pub fn start_failures(&self) -> Vec<StartFailure> {
        self.config
            .project
            .servers
            .iter()
            .filter_map(|sc| self.servers.get(&sc.key))
            .filter(|s| !s.disabled)
            .filter_map(|s| {
                s.startup_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
            })
            .collect()
    }

    /// Every declared server's state, tool count and last error, in declaration order.
    pub fn status(&self) -> Vec<ServerStatus> {
        self.config
            .project
            .servers
            .iter()
            .filter_map(|sc| self.servers.get(&sc.key))
            .map(|s| {
                let key = s.config.key.clone();
                let startup = s
                    .startup_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()
                    .map(|f| (f.reason, f.detail));
                // The state is the supervisor's, whatever the start did: a server that failed
                // its first start once is `restarting` (the next call tries again after the
                // backoff), as its log says; `failed` only once the rule says so.
                let (state, failure, consecutive_failures) = match (&s.client, s.disabled) {
                    (_, true) => ("disabled".to_owned(), None, 0),
                    (None, false) => ("failed".to_owned(), startup, 1),
                    (Some(c), false) => {
                        let known = c.last_reason().zip(c.last_error());
                        (
                            c.state().to_string(),
                            known.or(startup),
                            c.consecutive_failures(),
                        )
                    }
                };
                // A one-shot session ends with its command: a server it would restart on the
                // next call will never see one.
                let state = if self.one_shot && state == ServerState::Restarting.as_str() {
                    ServerState::Failed.as_str().to_owned()
                } else {
                    state
                };
                let (last_error, error_detail) = failure.unzip();
                let stats = s.stats.as_ref().map(|st| st.snapshot()).unwrap_or_default();
                let ms = |d: Option<std::time::Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
                let init = s.client.as_ref().and_then(McpClient::initialize_result);
                let (instructions, instructions_held) = match &init {
                    Some(i) => self
                        .config
                        .server_pins(&key)
                        .instructions(i.instructions.as_deref()),
                    None => (None, false),
                };
                let tasks = s
                    .client
                    .as_ref()
                    .map(McpClient::task_counts)
                    .unwrap_or_default();
                let held = self
                    .registry
                    .server_catalog(&key)
                    .map(|c| {
                        c.held
                            .iter()
                            .map(|(tool, v)| (tool.clone(), v.reason(&key)))
                            .collect()
                    })
                    .unwrap_or_default();
                ServerStatus {
                    transport: s.config.transport.name(),
                    tools: self.registry.server_tool_count(&key),
                    pins: self.config.pin_policy(&key).name(),
                    held,
                    server: key,
                    state,
                    last_error,
                    error_detail,
                    consecutive_failures,
                    calls: stats.calls,
                    tool_errors: stats.errors,
                    failed_calls: stats.failures,
                    timeouts: stats.timeouts,
                    restarts: s.client.as_ref().map_or(0, McpClient::restarts),
                    era: s
                        .client
                        .as_ref()
                        .and_then(McpClient::era)
                        .map(|e| e.as_str()),
                    protocol_version: s.client.as_ref().and_then(McpClient::protocol_version),
                    server_info: init.as_ref().map(|i| i.server_info.clone()),
                    capabilities: init.as_ref().map(|i| i.capabilities.clone()),
                    instructions,
                    instructions_held,
                    era_setting: self.config.local.overrides(&s.config.key).era.as_str(),
                    p50_ms: ms(stats.p50),
                    p99_ms: ms(stats.p99),
                    tasks_in_flight: tasks.in_flight,
                    tasks_completed: tasks.completed,
                    tasks_failed: tasks.failed,
                    tasks_cancelled: tasks.cancelled,
                }
            })
            .collect()
    }
}
