//! Session start: from a validated [`Config`] to a [`ToolRegistry`] full of MCP tools.
//!
//! [`Session::start`] resolves every `secret_ref` first (a missing one refuses the session),
//! skips servers disabled in `local.toml`, then starts and lists every other server
//! concurrently, each under the startup timeout. A server that fails keeps its error
//! ([`Session::start_failures`]) and its supervisor's state (`restarting`, or `failed` by the
//! rule), and the session goes on with the others. Tools register as `mcp.<key>.<tool>`
//! through the server's `tools:` filter ([`build_catalog`]); a name that is empty, longer than 128
//! bytes or outside `[A-Za-z0-9_.-]`, or a duplicate within one server, is skipped with a WARN.
//! When a server sends `notifications/tools/list_changed`, its tools are listed again and
//! swapped in atomically.
//!
//! Beside this file: `catalog.rs` (a `tools/list` made into a catalog), `status.rs` (what the
//! session tells of its servers), `explain.rs` (why a call failed, when the session knows
//! better than the stack).

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use futures::future::join_all;
use serde_json::{Map, Value};
use tokio::task::JoinHandle;
use tracing::Instrument;

use crate::assemble;
use crate::client::elicitation::ElicitationService;
use crate::client::McpClient;
use crate::config::{self, Config, McpServerConfig, Secret};
#[cfg(feature = "oauth")]
use crate::oauth::{Authorizer, OAuthSource};
use crate::protocol::ToolResult;
use crate::registry::{ServerCatalog, ToolDefinition, ToolRegistry};
use crate::stack::{StackBuilder, ToolService};
use crate::Error;
use kaged_mcp_layers::auth::TokenSource;
use kaged_mcp_layers::stats::CallStats;

mod catalog;
mod explain;
mod pins;
mod protocol;
mod skills;
mod status;

pub use self::catalog::{build_catalog, rebuild_catalog};
pub use self::pins::PinEvent;
pub use self::status::{ServerStatus, StartFailure};

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
    on_pin: Option<pins::OnPinEvent>,
    one_shot: bool,
    era_dir: Option<PathBuf>,
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
        .field("on_pin_event", &self.on_pin.is_some())
        .field("one_shot", &self.one_shot)
        .field("era_dir", &self.era_dir)
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
    /// server). The others are neither spawned nor contacted, their secrets (`auth` and
    /// `env`) are not required (a missing one does not stop the session), and
    /// [`Session::status`] does not list them; the configuration still declares them, so an
    /// unknown tool's hint knows every server.
    pub fn only_servers(mut self, servers: impl IntoIterator<Item = String>) -> Self {
        self.only = Some(servers.into_iter().collect());
        self
    }

    /// The session serves one command and ends (what every `kaged-mcp` command but `shell`
    /// does): nothing will start a failed server again, so a server whose start failed is
    /// `failed` in [`Session::status`] and in the errors of calls to it, never `restarting`,
    /// and a call to it starts no background restart. A daemon leaves it unset.
    pub fn one_shot(mut self) -> Self {
        self.one_shot = true;
        self
    }

    /// Remembers each server's protocol era between sessions in `dir`, one small file per
    /// server (what the `kaged-mcp` command line does, in `$XDG_STATE_HOME/kaged-mcp/eras`): a
    /// server found legacy is not probed with `server/discover` at its next start, which saves
    /// a round trip (and a legacy server's complaint about the probe). A server whose `era`
    /// is set in `local.toml` is not concerned; a start that fails for a reason about the era
    /// forgets it. See [`client::era_memory`](crate::client::era_memory) and
    /// [`assemble::era_memory`] (what names a server's file). Off by default.
    pub fn remember_eras(mut self, dir: impl Into<PathBuf>) -> Self {
        self.era_dir = Some(dir.into());
        self
    }

    /// Hears what pinning finds ([`crate::pin`]): each tool that differs from `mcp.lock`
    /// (held, or registered under `pins = "warn"`) and each server reached differently or
    /// saying it is someone else, once per session (again only when it changes, after a
    /// `notifications/tools/list_changed`). Called from the task that read the catalog: keep
    /// it short (send the event on a channel). Each event is also a WARN in the log.
    pub fn on_pin_event(mut self, f: impl Fn(&PinEvent) + Send + Sync + 'static) -> Self {
        self.on_pin = Some(Arc::new(f));
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
    startup_error: Mutex<Option<StartFailure>>,
    /// A start and listing is running in the background after a call found the server's
    /// catalog empty (see [`Session::retry_start`]).
    rediscovering: std::sync::atomic::AtomicBool,
    /// The tool-list changes, subscribed before the first `tools/list` of the session: a
    /// `list_changed` that arrives after that list began (server-everything sends one right
    /// after `initialized`) is not lost before the watcher starts.
    changes: Mutex<Option<tokio::sync::watch::Receiver<u64>>>,
}

/// A running session: the registry, the servers, and the tasks that follow their tool lists.
///
/// Dropping the session stops the rediscovery tasks; the clients kill their processes when
/// the last handle to them goes away. Call [`Session::shutdown`] for an orderly stop.
///
/// # Who may read a server's resources
/// An agent may read the resources of the server `S` ([`Session::read_resource_as`]: what a
/// tool result of `S` linked or embedded) when its `tools:` grants enable at least one of
/// `S`'s tools in the current catalog (`mcp.S.<tool>`, by exact name, dot-boundary prefix or
/// glob, the most specific key deciding, as for calls). A server none of whose tools the agent
/// may call is closed to it, resources included: [`Error::ResourceNotGranted`], and no request
/// is sent. A server that lists no tools is readable by the daemon
/// ([`Session::read_resource`]) only. The `mcp.` namespace stays reserved: reading registers
/// no tool.
pub struct Session {
    config: Arc<Config>,
    registry: Arc<ToolRegistry>,
    servers: BTreeMap<String, Arc<Server>>,
    watchers: Vec<JoinHandle<()>>,
    on_pin: Option<pins::OnPinEvent>,
    one_shot: bool,
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
    .map_err(|e| e.to_string())
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
    if let (Some(dir), crate::client::EraPreference::Auto) = (&session.era_dir, options.era) {
        options.era_memory = Some(assemble::era_memory(config, server, dir));
    }
    options.roots = assemble::roots(config, server).map_err(|e| e.to_string())?;
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
                changes: Mutex::new(None),
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
                            .unwrap_or_else(|p| p.into_inner()) =
                            Some(StartFailure::told(&sc.key, e));
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
            on_pin: options.on_pin.clone(),
            one_shot: options.one_shot,
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
        let on_pin = self.on_pin.clone();
        let timeout = config.daemon.startup_timeout;
        async move {
            let Some(client) = server.client.clone() else {
                return;
            };
            let key = server.config.key.clone();
            let result = tokio::time::timeout(timeout, async {
                client.start().await?;
                // Before the list: a change announced while it runs is heard by the watcher.
                *server.changes.lock().unwrap_or_else(|p| p.into_inner()) =
                    Some(client.tools_changed());
                client.list_tools().await
            })
            .await;
            let err = match result {
                Ok(Ok(tools)) => {
                    let init = client.initialize_result();
                    pins::announce_server(
                        &config,
                        &server.config,
                        init.as_deref(),
                        on_pin.as_ref(),
                    );
                    let catalog =
                        build_catalog(&config, &server.config, tools, client.runs_tool_tasks());
                    let previous = registry.server_catalog(&key);
                    tracing::info!(server = %key, tools = catalog.tools.len(), "tools registered");
                    registry.replace_catalog(&key, catalog);
                    // Told once the catalog is in: an embedder that hears an event sees it.
                    if let Some(current) = registry.server_catalog(&key) {
                        pins::announce_tools(
                            &config,
                            &key,
                            previous.as_deref(),
                            &current,
                            on_pin.as_ref(),
                        );
                    }
                    None
                }
                Ok(Err(e)) => Some(StartFailure {
                    server: key.clone(),
                    reason: e.reason(),
                    detail: e.to_string(),
                }),
                Err(_) => Some(StartFailure::told(
                    &key,
                    match client.stdout_noise() {
                        // What it wrote is the likelier cause than its speed.
                        Some(line) => format!(
                            "did not answer as an MCP server within the startup timeout of {} \
                             ms; it wrote `{}` on stdout, which must carry JSON-RPC messages \
                             only (is the command an MCP server? one that logs must log to \
                             stderr)",
                            timeout.as_millis(),
                            line
                        ),
                        None => format!(
                            "did not start and list its tools within the startup timeout of {} \
                             ms (`startup_timeout_ms` in config.toml)",
                            timeout.as_millis()
                        ),
                    },
                )),
            };
            if let Some(e) = &err {
                tracing::error!(server = %key, error = %e.detail, "server failed at session start");
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
            let taken = server
                .changes
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .take();
            let mut changes = taken.unwrap_or_else(|| client.tools_changed());
            let server = server.clone();
            let registry = self.registry.clone();
            let config = self.config.clone();
            let on_pin = self.on_pin.clone();
            self.watchers.push(tokio::spawn(async move {
                while changes.changed().await.is_ok() {
                    let key = &server.config.key;
                    match client.list_tools().await {
                        Ok(tools) => {
                            let previous = registry.server_catalog(key);
                            let catalog =
                                rebuild_catalog(
                                &config,
                                &server.config,
                                tools,
                                previous.as_deref(),
                                client.runs_tool_tasks(),
                            );
                            tracing::info!(server = %key, tools = catalog.tools.len(), "tools rediscovered");
                            registry.replace_catalog(key, catalog);
                            if let Some(current) = registry.server_catalog(key) {
                                pins::announce_tools(&config, key, previous.as_deref(), &current, on_pin.as_ref());
                            }
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

    /// [`shutdown`](Self::shutdown) bounded by `deadline` (see
    /// [`McpClient::shutdown_within`]): every server at once, each given a third of it to
    /// leave after stdin closes and again after SIGTERM, then killed; an HTTP session is
    /// ended. For a one-shot command, or the daemon's own SIGINT/SIGTERM handling, where a
    /// stuck server must not keep the process alive. What the dropped calls queued
    /// (`notifications/cancelled`, `tasks/cancel`) is written first.
    pub async fn shutdown_within(self, deadline: std::time::Duration) {
        self.closer().shutdown_within(deadline).await;
    }

    /// A handle that shuts this session's servers down even where the session itself is
    /// owned by a task being dropped (a command interrupted by a signal): it keeps the
    /// clients alive past the session, so what the dropped calls queued
    /// (`notifications/cancelled`, `tasks/cancel`) is still written, and then closes them as
    /// [`shutdown_within`](Self::shutdown_within) does.
    pub fn closer(&self) -> SessionCloser {
        SessionCloser {
            clients: self
                .servers
                .values()
                .filter_map(|s| s.client.clone())
                .collect(),
        }
    }
}

/// Shuts a session's servers down from outside it ([`Session::closer`]).
#[derive(Debug, Clone)]
pub struct SessionCloser {
    clients: Vec<McpClient>,
}

impl SessionCloser {
    /// Every server at once, within `deadline` (see [`McpClient::shutdown_within`]).
    pub async fn shutdown_within(self, deadline: std::time::Duration) {
        join_all(self.clients.iter().map(|c| c.shutdown_within(deadline))).await;
    }

    /// Waits at most `limit` until every `tasks/cancel` a server was sent got its answer or
    /// failed (see [`McpClient::settle_cancels`]); `true` when none is awaited any more.
    pub async fn settle_cancels(&self, limit: std::time::Duration) -> bool {
        join_all(self.clients.iter().map(|c| c.settle_cancels(limit)))
            .await
            .into_iter()
            .all(|settled| settled)
    }

    /// Takes the `tasks/cancel` requests no server confirmed, server by server (see
    /// [`McpClient::unconfirmed_cancels`]).
    pub fn unconfirmed_cancels(&self) -> Vec<crate::client::UnconfirmedCancel> {
        self.clients
            .iter()
            .flat_map(McpClient::unconfirmed_cancels)
            .collect()
    }
}
