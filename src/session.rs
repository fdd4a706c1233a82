//! Session start: from a validated [`Config`] to a [`ToolRegistry`] full of MCP tools.
//!
//! [`Session::start`] resolves every `secret_ref` first (a missing one refuses the session),
//! skips servers disabled in `local.toml`, then starts and lists every other server
//! concurrently, each under the startup timeout. A server that fails is marked failed with its
//! error and the session goes on with the others. Tools register as `mcp.<key>.<tool>` through
//! the server's `tools:` filter; a name that is empty, longer than 128 bytes or outside
//! `[A-Za-z0-9_.-]`, or a duplicate within one server, is skipped with a WARN. When a server
//! sends `notifications/tools/list_changed`, its tools are listed again and swapped in
//! atomically.

use std::collections::{BTreeMap, BTreeSet};
#[cfg(feature = "oauth")]
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::join_all;
use serde::Serialize;
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::assemble;
use crate::client::elicitation::ElicitationService;
use crate::client::McpClient;
use crate::config::{self, Config, McpServerConfig, Secret};
#[cfg(feature = "oauth")]
use crate::oauth::{Authorizer, OAuthSource};
use crate::protocol::{ToolInfo, ToolResult};
use crate::registry::{
    check_tool_name, McpTool, ServerCatalog, ToolDefinition, ToolRegistry, ToolSource,
};
use crate::stack::{StackBuilder, ToolService};
use crate::validate::{ToolSchemas, Validation};
use crate::Error;
use kaged_mcp_layers::auth::TokenSource;
use kaged_mcp_layers::stats::CallStats;

/// A server's state as the session sees it.
#[derive(Debug, Clone, Serialize)]
pub struct ServerStatus {
    /// The server key.
    pub server: String,
    /// Its transport: `stdio`, `streamable-http` or `sse`.
    pub transport: &'static str,
    /// `starting`, `ready`, `restarting`, `failed` or `disabled`.
    pub state: String,
    /// How many of its tools are registered.
    pub tools: usize,
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
    /// The era the operator asked for (`auto`, `legacy` or `modern`, from `local.toml`).
    pub era_setting: &'static str,
    /// Median call latency in milliseconds (a histogram estimate, at most ~25 % high); `None`
    /// before the first call.
    pub p50_ms: Option<f64>,
    /// 99th percentile call latency in milliseconds (same estimate).
    pub p99_ms: Option<f64>,
}

/// A server that did not start and list its tools when the session started (or when it was
/// last [enabled](Session::enable)): see [`Session::start_failures`].
#[derive(Debug, Clone, Serialize)]
pub struct StartFailure {
    /// The server key.
    pub server: String,
    /// The operator's line: what happened and what to change, without the server's name.
    pub reason: String,
    /// The whole error, with its chain of causes.
    pub detail: String,
}

/// The embedder's hook on each server's stack: server key and standard builder in, builder out.
type CustomizeStack = Arc<dyn Fn(&str, StackBuilder) -> StackBuilder + Send + Sync>;

/// Hooks an embedder uses to shape every server's stack and answer its requests.
#[derive(Clone, Default)]
pub struct SessionOptions {
    customize: Option<CustomizeStack>,
    elicitation: Option<ElicitationService>,
    #[cfg(feature = "oauth")]
    authorizer: Option<Arc<dyn Authorizer>>,
    #[cfg(feature = "oauth")]
    token_dir: Option<PathBuf>,
    token_sources: BTreeMap<String, Arc<dyn TokenSource>>,
    only: Option<BTreeSet<String>>,
}

impl std::fmt::Debug for SessionOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("SessionOptions");
        d.field("customize", &self.customize.is_some());
        #[cfg(feature = "oauth")]
        d.field("authorizer", &self.authorizer)
            .field("token_dir", &self.token_dir);
        d.field(
            "token_sources",
            &self.token_sources.keys().collect::<Vec<_>>(),
        )
        .field("elicitation_handler", &self.elicitation.is_some())
        .field("only", &self.only)
        .finish()
    }
}

impl SessionOptions {
    /// Default options: the standard stack, unchanged.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets the embedder add layers to each server's stack: the closure gets the server key
    /// and the builder of the standard stack, and returns it with its own layers added
    /// ([`StackBuilder::outer_layer`], [`StackBuilder::inner_layer`]).
    pub fn customize_stack(
        mut self,
        f: impl Fn(&str, StackBuilder) -> StackBuilder + Send + Sync + 'static,
    ) -> Self {
        self.customize = Some(Arc::new(f));
        self
    }

    /// Lets OAuth servers log in during the session: when a server has no usable token, the
    /// authorization-code flow runs through `authorizer` instead of failing the call with
    /// "run `kaged-mcp auth login`". A daemon leaves it unset; `kaged-mcp auth login` and
    /// tests plug one in.
    #[cfg(feature = "oauth")]
    pub fn oauth_authorizer(mut self, authorizer: Arc<dyn Authorizer>) -> Self {
        self.authorizer = Some(authorizer);
        self
    }

    /// Where OAuth token files live, over `config.toml`'s `oauth_token_dir` and the operator's
    /// state directory.
    #[cfg(feature = "oauth")]
    pub fn oauth_token_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.token_dir = Some(dir.into());
        self
    }

    /// Gives the server `server` its auth header from `source` (a daemon's own credential
    /// store), whatever its `auth` block says.
    pub fn token_source(mut self, server: impl Into<String>, source: Arc<dyn TokenSource>) -> Self {
        self.token_sources.insert(server.into(), source);
        self
    }

    /// Turns elicitation on for every server: each one's `initialize` advertises it, and its
    /// `elicitation/create` requests go to `handler`, which learns the asking server's key from
    /// [`ElicitRequest::server`](crate::client::elicitation::ElicitRequest::server). Without
    /// it, elicitation is not advertised and is refused. See
    /// [`client::elicitation`](crate::client::elicitation).
    pub fn elicitation_handler(mut self, handler: ElicitationService) -> Self {
        self.elicitation = Some(handler);
        self
    }

    /// Starts only these declared servers (what `kaged-mcp call` does: one tool needs one
    /// server). The others are neither spawned nor contacted, their `auth` secrets are not
    /// resolved (a missing one does not stop the session), and [`Session::status`] does not
    /// list them; the configuration still declares them, so an unknown tool's hint knows
    /// every server. (`env` secrets are resolved when the configuration loads, for every
    /// server: a missing one is a configuration error whatever is started.)
    pub fn only_servers(mut self, servers: impl IntoIterator<Item = String>) -> Self {
        self.only = Some(servers.into_iter().collect());
        self
    }
}

struct Server {
    config: McpServerConfig,
    client: Option<McpClient>,
    #[cfg(feature = "oauth")]
    oauth: Option<Arc<OAuthSource>>,
    stats: Option<Arc<CallStats>>,
    disabled: bool,
    startup_error: Mutex<Option<Failure>>,
    /// A start and listing is running in the background after a call found the server's
    /// catalog empty (see [`Session::retry_start`]).
    rediscovering: std::sync::atomic::AtomicBool,
}

/// Why a server did not start: the operator's line and the whole error.
#[derive(Debug, Clone)]
struct Failure {
    reason: String,
    chain: String,
}

impl Failure {
    /// A failure told by one text (which may start with ``server `key`: ``, as the
    /// assembler's errors do: the operator's line names the server once, in front).
    fn same(text: String, server: &str) -> Self {
        Self {
            reason: crate::client::without_server(&text, server).to_owned(),
            chain: text,
        }
    }
}

/// A running session: the registry, the servers, and the tasks that follow their tool lists.
///
/// Dropping the session stops the rediscovery tasks; the clients kill their processes when
/// the last handle to them goes away. Call [`Session::shutdown`] for an orderly stop.
pub struct Session {
    config: Arc<Config>,
    registry: Arc<ToolRegistry>,
    servers: BTreeMap<String, Arc<Server>>,
    watchers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("registry", &self.registry)
            .finish()
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        for w in &self.watchers {
            w.abort();
        }
    }
}

/// The token source of an `auth: {type: oauth}` server (none for any other), kept on `server`
/// too so the session can tell when it needs a login.
#[cfg(feature = "oauth")]
fn oauth_source(
    config: &Config,
    sc: &McpServerConfig,
    options: &SessionOptions,
    server: &mut Server,
) -> Result<Option<Arc<dyn TokenSource>>, String> {
    OAuthSource::for_server(
        config,
        sc,
        options.token_dir.as_deref(),
        options.authorizer.clone(),
    )
    .map(|o| {
        o.map(|o| {
            let o = Arc::new(o);
            server.oauth = Some(Arc::clone(&o));
            o as Arc<dyn TokenSource>
        })
    })
}

/// Built without the `oauth` feature: an `auth: {type: oauth}` server cannot start.
#[cfg(not(feature = "oauth"))]
fn oauth_source(
    _: &Config,
    sc: &McpServerConfig,
    _: &SessionOptions,
    _: &mut Server,
) -> Result<Option<Arc<dyn TokenSource>>, String> {
    match &sc.auth {
        Some(a) if a.kind == config::AuthKind::OAuth => Err(format!(
            "server `{}`: `auth: {{type: oauth}}` needs kaged-mcp built with its `oauth` feature",
            sc.key
        )),
        _ => Ok(None),
    }
}

/// The client of the configured server `server`: its options and transport from the
/// configuration ([`assemble`]), the session's elicitation handler.
fn client_for(
    config: &Config,
    server: &McpServerConfig,
    secret: Option<&Secret>,
    session: &SessionOptions,
    source: Option<Arc<dyn TokenSource>>,
) -> Result<McpClient, String> {
    let mut options = assemble::client_options(config, server);
    options.elicitation_handler = session.elicitation.clone();
    let transport =
        assemble::transport(config, server, secret, source).map_err(|e| e.to_string())?;
    Ok(McpClient::new(server.key.clone(), transport, options))
}

impl Session {
    /// Starts a session with the standard stacks.
    pub async fn start(config: Config) -> Result<Session, Error> {
        Self::start_with(config, SessionOptions::default()).await
    }

    /// Starts a session, letting `options` shape each server's stack and answer its requests.
    pub async fn start_with(config: Config, options: SessionOptions) -> Result<Session, Error> {
        let started = |key: &str| options.only.as_ref().is_none_or(|o| o.contains(key));
        let secrets = match &options.only {
            None => config.resolve_secrets()?,
            Some(_) => {
                let mut scoped = config.clone();
                scoped.project.servers.retain(|s| started(&s.key));
                scoped.resolve_secrets()?
            }
        };
        let config = Arc::new(config);
        let registry = Arc::new(ToolRegistry::new());
        let mut servers = BTreeMap::new();
        for sc in config.project.servers.iter().filter(|s| started(&s.key)) {
            let overrides = config.local.overrides(&sc.key);
            let mut server = Server {
                config: sc.clone(),
                client: None,
                #[cfg(feature = "oauth")]
                oauth: None,
                stats: None,
                disabled: overrides.disabled,
                startup_error: Mutex::new(None),
                rediscovering: std::sync::atomic::AtomicBool::new(false),
            };
            let source = match options.token_sources.get(&sc.key) {
                Some(s) => Ok(Some(Arc::clone(s))),
                None => oauth_source(&config, sc, &options, &mut server),
            };
            if !overrides.disabled {
                let client = source.and_then(|source| {
                    client_for(&config, sc, secrets.get(&sc.key), &options, source)
                });
                match client {
                    Ok(client) => {
                        let settings = assemble::stack_settings(&config, &sc.key);
                        server.stats = Some(Arc::clone(&settings.stats));
                        let mut builder = StackBuilder::new(settings);
                        if let Some(f) = &options.customize {
                            builder = f(&sc.key, builder);
                        }
                        let stack: ToolService = builder.build(client.clone());
                        registry.set_server(&sc.key, stack, ServerCatalog::default());
                        server.client = Some(client);
                    }
                    Err(e) => {
                        tracing::error!(server = %sc.key, error = %e, "server cannot start");
                        *server
                            .startup_error
                            .lock()
                            .unwrap_or_else(|p| p.into_inner()) = Some(Failure::same(e, &sc.key));
                    }
                }
            }
            servers.insert(sc.key.clone(), Arc::new(server));
        }
        let mut session = Session {
            config,
            registry,
            servers,
            watchers: Vec::new(),
        };
        let starts = session
            .servers
            .values()
            .filter(|s| s.client.is_some())
            .map(|s| session.discover(s.clone()));
        join_all(starts).await;
        session.watch_list_changes();
        Ok(session)
    }

    /// Starts and lists one server under the startup timeout; registers its tools or records
    /// its failure.
    fn discover(
        &self,
        server: Arc<Server>,
    ) -> impl std::future::Future<Output = ()> + Send + 'static {
        let registry = self.registry.clone();
        let config = self.config.clone();
        let timeout = config.daemon.startup_timeout;
        async move {
            let Some(client) = server.client.clone() else {
                return;
            };
            let key = server.config.key.clone();
            let result = tokio::time::timeout(timeout, async {
                client.start().await?;
                client.list_tools().await
            })
            .await;
            let err = match result {
                Ok(Ok(tools)) => {
                    let catalog = build_catalog(&config, &server.config, tools);
                    tracing::info!(server = %key, tools = catalog.tools.len(), "tools registered");
                    registry.replace_catalog(&key, catalog);
                    None
                }
                Ok(Err(e)) => Some(Failure {
                    reason: e.reason(),
                    chain: e.to_string(),
                }),
                Err(_) => Some(Failure::same(
                    format!(
                        "did not start and list its tools within the startup timeout of {} ms \
                         (`startup_timeout_ms` in config.toml)",
                        timeout.as_millis()
                    ),
                    &key,
                )),
            };
            if let Some(e) = &err {
                tracing::error!(server = %key, error = %e.chain, "server failed at session start");
            }
            *server
                .startup_error
                .lock()
                .unwrap_or_else(|p| p.into_inner()) = err;
        }
        .instrument(tracing::info_span!("mcp.discover"))
    }

    fn watch_list_changes(&mut self) {
        for server in self.servers.values() {
            let Some(client) = server.client.clone() else {
                continue;
            };
            let mut changes = client.tools_changed();
            let server = server.clone();
            let registry = self.registry.clone();
            let config = self.config.clone();
            self.watchers.push(tokio::spawn(async move {
                while changes.changed().await.is_ok() {
                    let key = &server.config.key;
                    match client.list_tools().await {
                        Ok(tools) => {
                            let previous = registry.server_catalog(key);
                            let catalog =
                                rebuild_catalog(&config, &server.config, tools, previous.as_deref());
                            tracing::info!(server = %key, tools = catalog.tools.len(), "tools rediscovered");
                            registry.replace_catalog(key, catalog);
                        }
                        Err(e) => {
                            tracing::warn!(server = %key, error = %e, "rediscovery after tools/list_changed failed");
                        }
                    }
                }
            }));
        }
    }

    /// The registry: every tool, and dispatch.
    pub fn registry(&self) -> &Arc<ToolRegistry> {
        &self.registry
    }

    /// The configuration the session runs on.
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// Every registered tool.
    ///
    /// A server whose tool list is stale by its own cache hint (2026-07-28 `ttlMs`) has it
    /// read again in the background: the catalog follows the server at the pace it asks, the
    /// change visible once the new list is in (see [`McpClient::refresh_tools_if_stale`]).
    pub fn catalog(&self) -> Vec<ToolDefinition> {
        self.refresh_stale_tool_lists();
        self.registry.catalog()
    }

    /// Signals every server whose tool list's ttl expired (see [`Session::catalog`]).
    fn refresh_stale_tool_lists(&self) {
        for server in self.servers.values() {
            if let Some(client) = &server.client {
                client.refresh_tools_if_stale();
            }
        }
    }

    /// The tools `agent` (`primary` or a subagent's key) is granted.
    pub fn catalog_for(&self, agent: &str) -> Result<Vec<ToolDefinition>, Error> {
        let grants = self.grants(agent)?;
        self.refresh_stale_tool_lists();
        Ok(self.registry.catalog_for(grants))
    }

    fn grants(&self, agent: &str) -> Result<&config::ToolGrants, Error> {
        self.config
            .project
            .agents
            .for_agent(agent)
            .ok_or_else(|| Error::UnknownAgent {
                agent: agent.to_owned(),
            })
    }

    /// Calls a tool by its full name, with no agent restriction.
    ///
    /// # Errors
    /// [`Error::ServerNotReady`] for a tool of a server that is not ready (with its last
    /// error), [`Error::UnknownTool`] for a name no server offers, and whatever the call met.
    pub async fn call(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<ToolResult, Error> {
        let result = self.registry.call(tool, arguments).await;
        result.map_err(|e| self.explain(tool, e))
    }

    /// Says why a call to `mcp.<server>.<tool>` failed when the server knows better: any
    /// failure (but a refused grant) of an OAuth server whose token source needs a login
    /// becomes [`Error::LoginRequired`]; an unknown tool of a declared server that is not ready
    /// and has no tools registered becomes [`Error::ServerNotReady`]: its tools are missing
    /// because it is not running. (A restarting server keeps its catalog, so a misspelt tool of
    /// it stays [`Error::UnknownTool`].)
    fn explain(&self, tool: &str, err: Error) -> Error {
        let Some((server, _)) = tool.strip_prefix("mcp.").and_then(|t| t.split_once('.')) else {
            return self.hint_unknown(tool, err);
        };
        // An OAuth server whose token source needs the operator: say so, whatever failed.
        #[cfg(feature = "oauth")]
        if let Some(o) = self.servers.get(server).and_then(|s| s.oauth.as_ref()) {
            if o.needs_login() && !matches!(err, Error::NotGranted { .. }) {
                return Error::LoginRequired {
                    server: server.to_owned(),
                };
            }
        }
        // A call that timed out while its server was down (waiting for a restart that kept
        // failing) says why the server is down, not only that time ran out.
        if let Error::Timeout { .. } = &err {
            return match self.status().into_iter().find(|s| s.server == server) {
                Some(s) if s.state != "ready" && s.last_error.is_some() => Error::ServerNotReady {
                    server: s.server,
                    state: s.state,
                    last_error: s.last_error,
                },
                _ => err,
            };
        }
        if !matches!(err, Error::UnknownTool { .. }) {
            return err;
        }
        let start_failed = self.start_failed(server);
        match self.status().into_iter().find(|s| s.server == server) {
            Some(s) if (s.state != "ready" || start_failed) && s.tools == 0 => {
                self.retry_start(server);
                let state = if s.state == "ready" {
                    "started, but its tools could not be listed".to_owned()
                } else {
                    s.state
                };
                Error::ServerNotReady {
                    server: s.server,
                    state,
                    last_error: s.last_error,
                }
            }
            _ => self.hint_unknown(tool, err),
        }
    }

    /// A call asked for a tool of `server`, which has no catalog because its start failed and
    /// it is `restarting`: starts and lists it again in the background (once at a time, and
    /// within the supervisor's backoff, which refuses an attempt that is not due), so the
    /// state means what it says: the server is tried again when it is asked for, and its
    /// tools come back once it starts. A `failed` or disabled server waits for
    /// [`enable`](Self::enable).
    fn retry_start(&self, server: &str) {
        use crate::client::ServerState;
        use std::sync::atomic::Ordering;
        /// Clears the flag however the task ends (done, panicked, aborted at shutdown).
        struct Done(Arc<Server>);
        impl Drop for Done {
            fn drop(&mut self) {
                self.0.rediscovering.store(false, Ordering::Release);
            }
        }
        let Some(s) = self.servers.get(server) else {
            return;
        };
        let Some(client) = &s.client else { return };
        // Restarting: start and list; ready (its list failed at start): list again.
        if !matches!(client.state(), ServerState::Restarting | ServerState::Ready)
            || s.rediscovering.swap(true, Ordering::AcqRel)
        {
            return;
        }
        let done = Done(Arc::clone(s));
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let discover = self.discover(Arc::clone(s));
        drop(runtime.spawn(async move {
            discover.await;
            drop(done);
        }));
    }

    /// Whether `server`'s start (or its last listing at start) failed.
    fn start_failed(&self, server: &str) -> bool {
        self.servers.get(server).is_some_and(|s| {
            s.startup_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .is_some()
        })
    }

    /// Gives an [`Error::UnknownTool`] its hint: a filter that removed the tool, a server not
    /// declared, a name without `mcp.<server>.`, or the near miss.
    fn hint_unknown(&self, tool: &str, err: Error) -> Error {
        if !matches!(err, Error::UnknownTool { hint: None, .. }) {
            return err;
        }
        let servers: Vec<&str> = self
            .config
            .project
            .servers
            .iter()
            .map(|s| s.key.as_str())
            .collect();
        let names = self.registry.names();
        let filtered = |server: &str, name: &str| {
            self.registry
                .server_catalog(server)
                .and_then(|c| c.filtered.get(name).copied())
        };
        let hint = crate::registry::suggest::unknown_tool_hint(
            tool,
            &crate::registry::suggest::Known {
                servers: &servers,
                names: &names,
                filtered: &filtered,
            },
        );
        Error::UnknownTool {
            tool: tool.to_owned(),
            hint,
        }
    }

    /// Calls a tool for `agent`: refused without contacting a server unless granted.
    pub async fn call_as(
        &self,
        agent: &str,
        tool: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<ToolResult, Error> {
        let grants = self.grants(agent)?;
        let result = self.registry.call_as(agent, grants, tool, arguments).await;
        result.map_err(|e| self.explain(tool, e))
    }

    /// Calls a tool that reports progress, for `agent` (grants checked) or for the daemon
    /// (`None`): `timeout_ms` bounds the time between progress notifications and the stack's
    /// progress cap the whole call. `progress` is notified on each one.
    pub async fn call_with_progress(
        &self,
        agent: Option<&str>,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        progress: kaged_mcp_layers::timeout::ProgressHandle,
    ) -> Result<ToolResult, Error> {
        let agent = match agent {
            Some(a) => Some((a, self.grants(a)?)),
            None => None,
        };
        let result = self
            .registry
            .call_with_progress(agent, tool, arguments, progress)
            .await;
        result.map_err(|e| self.explain(tool, e))
    }

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
                let f = s
                    .startup_error
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .clone()?;
                Some(StartFailure {
                    server: s.config.key.clone(),
                    reason: f.reason,
                    detail: f.chain,
                })
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
                    .clone();
                // The state is the supervisor's, whatever the start did: a server that failed
                // its first start once is `restarting` (the next call tries again after the
                // backoff), as its log says; `failed` only once the rule says so.
                let (state, failure, consecutive_failures) = match (&s.client, s.disabled) {
                    (_, true) => ("disabled".to_owned(), None, 0),
                    (None, false) => ("failed".to_owned(), startup, 1),
                    (Some(c), false) => {
                        let known = c
                            .last_reason()
                            .zip(c.last_error())
                            .map(|(reason, chain)| Failure { reason, chain });
                        (
                            c.state().to_string(),
                            known.or(startup),
                            c.consecutive_failures(),
                        )
                    }
                };
                let (last_error, error_detail) = match failure {
                    Some(f) => (Some(f.reason), Some(f.chain)),
                    None => (None, None),
                };
                let stats = s.stats.as_ref().map(|st| st.snapshot()).unwrap_or_default();
                let ms = |d: Option<std::time::Duration>| d.map(|d| d.as_secs_f64() * 1000.0);
                ServerStatus {
                    transport: s.config.transport.name(),
                    tools: self.registry.server_tool_count(&key),
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
                    era_setting: self.config.local.overrides(&s.config.key).era.as_str(),
                    p50_ms: ms(stats.p50),
                    p99_ms: ms(stats.p99),
                }
            })
            .collect()
    }

    /// Re-enables a failed server and discovers its tools again.
    pub async fn enable(&self, server: &str) -> Result<(), Error> {
        let s = self
            .servers
            .get(server)
            .ok_or_else(|| Error::UnknownServer {
                server: server.to_owned(),
            })?;
        if let Some(c) = &s.client {
            c.reenable();
            self.discover(s.clone()).await;
        }
        Ok(())
    }

    /// Stops every server: closes stdin, waits, then terminates the process groups.
    pub async fn shutdown(self) {
        let clients: Vec<McpClient> = self
            .servers
            .values()
            .filter_map(|s| s.client.clone())
            .collect();
        join_all(clients.iter().map(|c| c.shutdown())).await;
    }
}

/// Turns a server's `tools/list` into its catalog: names checked, filter applied, duplicates
/// and bad names skipped with a WARN, each tool's schemas compiled as `validate` says
/// ([`crate::validate`]).
pub fn build_catalog(
    config: &Config,
    server: &McpServerConfig,
    tools: Vec<ToolInfo>,
) -> ServerCatalog {
    rebuild_catalog(config, server, tools, None)
}

/// [`build_catalog`] for a server whose catalog `previous` is being replaced (`list_changed`,
/// a `ttlMs` re-read): a tool whose schemas did not change keeps its compiled validators (no
/// compile, no WARN repeated).
pub fn rebuild_catalog(
    config: &Config,
    server: &McpServerConfig,
    tools: Vec<ToolInfo>,
    previous: Option<&ServerCatalog>,
) -> ServerCatalog {
    let overrides = config.local.overrides(&server.key);
    let trust = overrides.trust_annotations;
    let validation = overrides.validate;
    let mut catalog = ServerCatalog::default();
    for t in tools {
        if let Err(why) = check_tool_name(&t.name) {
            tracing::warn!(server = %server.key, tool = %t.name.escape_debug(), reason = %why, "tool skipped");
            let name: String = t.name.escape_debug().take(100).collect();
            catalog.skipped.insert(name, why.to_string());
            continue;
        }
        if let Some(rule) = server.tools.refusal(&t.name) {
            catalog.filtered.insert(t.name.clone(), rule);
            continue;
        }
        let full = format!("mcp.{}.{}", server.key, t.name);
        if catalog.tools.contains_key(&full) {
            tracing::warn!(server = %server.key, tool = %t.name, "duplicate tool name skipped");
            catalog.skipped.insert(
                t.name.clone(),
                "the server lists this name twice".to_owned(),
            );
            continue;
        }
        let retry_safe = trust && t.is_retry_safe();
        let returns = t
            .output_schema
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let schemas = (validation != Validation::Off).then(|| {
            previous
                .and_then(|p| p.tools.get(&full))
                .and_then(|p| p.schemas.clone().map(|s| (p, s)))
                .filter(|(p, s)| {
                    // `returns` is `{}` for no output schema too: compare whether one is declared.
                    p.definition.parameters == t.input_schema
                        && p.definition.returns == returns
                        && s.declares_output() == t.output_schema.is_some()
                })
                .map(|(_, s)| s)
                .unwrap_or_else(|| Arc::new(ToolSchemas::compile(&server.key, &t, validation)))
        });
        let definition = ToolDefinition {
            name: full.clone(),
            namespace: "mcp".into(),
            description: t
                .description
                .clone()
                .or(t.title.clone())
                .unwrap_or_default(),
            parameters: t.input_schema.clone(),
            returns,
            requires: Vec::new(),
            source: ToolSource::Mcp,
            mcp_server: Some(server.key.clone()),
            mcp_tool_name: Some(t.name.clone()),
        };
        catalog.tools.insert(
            full,
            McpTool {
                definition,
                retry_safe,
                schemas,
            },
        );
    }
    catalog
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Sources;

    fn tool(name: &str, read_only: bool) -> ToolInfo {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "description": format!("tool {name}"),
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": read_only},
        }))
        .unwrap()
    }

    fn config(local: &str) -> Config {
        Sources::new(
            "mcp:\n  gh:\n    transport: stdio\n    command: [x]\n    tools:\n      deny: [\"repo.delete\"]\n",
        )
        .local(local)
        .load()
        .unwrap()
    }

    #[test]
    fn bad_names_and_duplicates_are_skipped_and_the_filter_applies() {
        let c = config("");
        let server = c.project.server("gh").unwrap();
        let long = "x".repeat(129);
        let tools = vec![
            tool("issue.create", false),
            tool("", false),
            tool("has space", false),
            tool("slash/no", false),
            tool(&long, false),
            tool("issue.create", true),
            tool("repo.delete", false),
            tool("repo.list", true),
        ];
        let catalog = build_catalog(&c, server, tools);
        let names: Vec<&str> = catalog.tools.keys().map(String::as_str).collect();
        assert_eq!(names, ["mcp.gh.issue.create", "mcp.gh.repo.list"]);
        let first = &catalog.tools["mcp.gh.issue.create"];
        assert_eq!(
            first.definition.description, "tool issue.create",
            "the first one wins"
        );
        assert_eq!(
            first.definition.mcp_tool_name.as_deref(),
            Some("issue.create")
        );
        assert_eq!(first.definition.returns, serde_json::json!({}));
        // What was left out is kept, to be explained: skipped names with why, filtered ones
        // with the rule.
        let skipped: Vec<&str> = catalog.skipped.keys().map(String::as_str).collect();
        assert_eq!(
            skipped,
            ["", "has space", "issue.create", "slash/no", &long[..100]]
        );
        assert_eq!(
            catalog.skipped["issue.create"],
            "the server lists this name twice"
        );
        assert!(catalog.skipped["has space"].contains("' '"));
        assert_eq!(catalog.filtered.get("repo.delete"), Some(&"tools.deny"));
    }

    #[test]
    fn a_rebuilt_catalog_keeps_the_validators_of_unchanged_schemas_only() {
        let c = config("");
        let server = c.project.server("gh").unwrap();
        let schemas = |cat: &ServerCatalog| cat.tools["mcp.gh.repo.list"].schemas.clone().unwrap();
        let first = build_catalog(&c, server, vec![tool("repo.list", true)]);
        let same = rebuild_catalog(&c, server, vec![tool("repo.list", true)], Some(&first));
        assert!(
            Arc::ptr_eq(&schemas(&first), &schemas(&same)),
            "not compiled again"
        );
        // An output schema of `{}` looks like none in `returns`: it is a change all the same.
        let mut declared = tool("repo.list", true);
        declared.output_schema = Some(serde_json::json!({}));
        let changed = rebuild_catalog(&c, server, vec![declared], Some(&same));
        assert!(!Arc::ptr_eq(&schemas(&same), &schemas(&changed)));
        assert!(schemas(&changed).declares_output());
    }

    #[test]
    fn annotations_make_a_tool_retry_safe_only_on_trusted_servers() {
        let untrusted = config("");
        let server = untrusted.project.server("gh").unwrap();
        let c = build_catalog(&untrusted, server, vec![tool("repo.list", true)]);
        assert!(!c.tools["mcp.gh.repo.list"].retry_safe);
        let trusted = config("[mcp.gh]\ntrust_annotations = true\n");
        let c = build_catalog(
            &trusted,
            server,
            vec![tool("repo.list", true), tool("repo.push", false)],
        );
        assert!(c.tools["mcp.gh.repo.list"].retry_safe);
        assert!(!c.tools["mcp.gh.repo.push"].retry_safe);
    }
}
