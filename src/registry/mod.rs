//! The tool registry: tools of all three sources (builtin, plugin, MCP) under one catalog,
//! per-agent views, and dispatch by name.
//!
//! The `mcp` namespace is reserved (ADR-0033 as amended by ADR-0043): a builtin or plugin
//! registration under `mcp.` is refused. MCP tools are registered per server, as a whole
//! catalog that is swapped atomically when the server's tools change. A call by an agent is
//! checked against its grants before any server is contacted.

mod definition;
pub mod grants;
pub(crate) mod suggest;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::task::{Context, Poll, Waker};

use kaged_mcp_layers::timeout::ProgressHandle;
use serde_json::{Map, Value};
use tower::{Service, ServiceExt};

pub use definition::{check_tool_name, ToolDefinition, ToolRequirement, ToolSource, MAX_TOOL_NAME};

use crate::client::ToolCall;
use crate::config::ToolGrants;
use crate::pin::Verdict;
use crate::protocol::{ToolInfo, ToolResult};
use crate::stack::ToolService;
use crate::validate::ToolSchemas;
use crate::Error;

/// One MCP tool as registered: its definition and how to call it.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct McpTool {
    /// The tool's name as its server knows it, shared with every call (no copy per call).
    pub name: Arc<str>,
    /// The catalog entry.
    pub definition: ToolDefinition,
    /// Whether a failed call may be sent again: the tool declares `idempotentHint` or
    /// `readOnlyHint` and the operator trusts the server's annotations.
    pub retry_safe: bool,
    /// Its compiled schemas, handed to the stack with each call ([`crate::validate`]);
    /// `None` with `validate = "off"`.
    pub schemas: Option<Arc<ToolSchemas>>,
    /// Calls ask a 2025-11-25 server to run them as tasks (`params.task`): the tool requires
    /// it, or allows it and the server's `tasks` mode is `prefer` ([`crate::client::tasks`]).
    pub task: bool,
    /// The tool as its server listed it (title, annotations, `execution`, icons, `_meta`,
    /// both schemas, every other field as sent): what `kaged-mcp tools --json` and `describe`
    /// show. Shared, never copied on a call.
    pub tool: Arc<ToolInfo>,
    /// Its standing against `mcp.lock` ([`crate::pin`]): pinned, or (under `pins = "warn"`)
    /// registered although it differs.
    pub pin: Verdict,
}

/// One server's registered tools, by full name.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ServerCatalog {
    /// Full name → tool.
    pub tools: BTreeMap<String, McpTool>,
    /// Tools the server offers that the project's `tools:` filter removed: the server's name
    /// for each → the rule that removed it (`tools.deny`, …), to explain a call of one.
    pub filtered: BTreeMap<String, &'static str>,
    /// Tools the server offers that could not be registered (a name MCP does not allow, a
    /// name given twice): the name, escaped for a log line → why. Each was one WARN; the CLI's
    /// `tools` prints them as notes.
    pub skipped: BTreeMap<String, String>,
    /// Tools the server offers that pinning holds out of the catalog (`pins = "enforce"`): the
    /// server's name for each → how it differs from `mcp.lock`. A call of one is refused with
    /// [`Error::ToolHeld`].
    pub held: BTreeMap<String, Verdict>,
}

struct McpEntry {
    /// Shared with the calls in flight, which start outside the registry's lock.
    stack: Arc<StackPool>,
    catalog: Arc<ServerCatalog>,
}

/// A server's stack and the clones of it that calls have used and given back.
///
/// `tower` calls a service through `&mut`, so concurrent calls each need their own clone;
/// cloning the type-erased stack per call (an allocation, a clone of every layer, their drops)
/// was ~500 instructions of a call's ~15 000 over stdio (benches/README.md, issue 41). A call
/// takes an idle clone (or makes one), calls it, and gives it back as soon as its future
/// exists: the future owns all it needs, and the lock is held only to take and to give. So
/// there are never more clones than calls being started at one instant (the runtime's
/// threads). A clone that is not ready at once (an embedder's layer waiting for capacity)
/// waits for readiness inside the call's future, as `tower`'s `oneshot`, and is dropped after;
/// one whose readiness failed fails the call with that error and is dropped.
///
/// So a layer's state kept per clone (not shared through an `Arc`) now lasts across the calls
/// that reuse that clone, as it would for any service called more than once; the standard
/// layers keep theirs shared.
struct StackPool {
    stack: ToolService,
    idle: Mutex<Vec<ToolService>>,
}

/// The future of one call of a stack: the stack's own, or the one of a clone that waits for
/// the stack to be ready.
enum StackCall {
    Ready(<ToolService as Service<ToolCall>>::Future),
    Waiting(tower::util::Oneshot<ToolService, ToolCall>),
    /// The stack's readiness failed: a failed service is not polled again.
    Failed(tower::BoxError),
}

impl StackCall {
    async fn result(self) -> Result<ToolResult, tower::BoxError> {
        match self {
            Self::Ready(future) => future.await,
            Self::Waiting(oneshot) => oneshot.await,
            Self::Failed(e) => Err(e),
        }
    }
}

impl StackPool {
    /// At most this many idle clones are kept (more than a runtime's threads would need).
    const MAX_IDLE: usize = 64;

    fn new(stack: ToolService) -> Self {
        Self {
            stack,
            idle: Mutex::new(Vec::new()),
        }
    }

    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<ToolService>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts `call`.
    fn call(&self, call: ToolCall) -> StackCall {
        let taken = self.idle().pop();
        let mut stack = taken.unwrap_or_else(|| self.stack.clone());
        let mut cx = Context::from_waker(Waker::noop());
        match stack.poll_ready(&mut cx) {
            Poll::Ready(Ok(())) => {
                let future = stack.call(call);
                let mut idle = self.idle();
                if idle.len() < Self::MAX_IDLE {
                    idle.push(stack);
                }
                StackCall::Ready(future)
            }
            Poll::Ready(Err(e)) => StackCall::Failed(e),
            // Not ready: `oneshot` waits for it with the call's own waker.
            Poll::Pending => StackCall::Waiting(stack.oneshot(call)),
        }
    }
}

struct LocalEntry {
    definition: ToolDefinition,
    handler: ToolService,
}

/// All registered tools, and the way to call each. Cheap to share behind an `Arc`.
#[derive(Default)]
pub struct ToolRegistry {
    local: RwLock<BTreeMap<String, LocalEntry>>,
    mcp: RwLock<BTreeMap<String, McpEntry>>,
}

impl std::fmt::Debug for ToolRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolRegistry")
            .field("tools", &self.catalog().len())
            .finish()
    }
}

/// `Err(NotGranted)` unless `grants` enable `tool` for `agent`.
fn check_grant(agent: &str, grants: &ToolGrants, tool: &str) -> Result<(), Error> {
    if grants::is_granted(grants, tool) {
        Ok(())
    } else {
        Err(Error::NotGranted {
            agent: agent.to_owned(),
            tool: tool.to_owned(),
        })
    }
}

fn read<T>(l: &RwLock<T>) -> std::sync::RwLockReadGuard<'_, T> {
    l.read().unwrap_or_else(|p| p.into_inner())
}

fn write<T>(l: &RwLock<T>) -> std::sync::RwLockWriteGuard<'_, T> {
    l.write().unwrap_or_else(|p| p.into_inner())
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Registers a builtin or plugin tool with the service that runs it.
    ///
    /// Refused when the source is `mcp`, when the name is under the reserved `mcp` namespace,
    /// when the namespace does not match the name's first segment, or when the name is taken.
    pub fn register(&self, definition: ToolDefinition, handler: ToolService) -> Result<(), Error> {
        let refuse = |reason: &str| Error::Registration {
            tool: definition.name.clone(),
            reason: reason.to_owned(),
        };
        if definition.source == ToolSource::Mcp {
            return Err(refuse(
                "MCP tools are registered by their server, not one by one",
            ));
        }
        let first = definition.name.split('.').next().unwrap_or_default();
        if first == "mcp" || definition.namespace == "mcp" {
            return Err(refuse("the `mcp` namespace is reserved for MCP servers"));
        }
        if first != definition.namespace {
            return Err(refuse("the name must start with its namespace"));
        }
        let mut local = write(&self.local);
        if local.contains_key(&definition.name) {
            return Err(refuse("a tool of that name is already registered"));
        }
        local.insert(
            definition.name.clone(),
            LocalEntry {
                definition,
                handler,
            },
        );
        Ok(())
    }

    /// Puts a server's catalog in place, replacing the previous one atomically.
    pub fn set_server(&self, server: &str, stack: ToolService, catalog: ServerCatalog) {
        write(&self.mcp).insert(
            server.to_owned(),
            McpEntry {
                stack: Arc::new(StackPool::new(stack)),
                catalog: Arc::new(catalog),
            },
        );
    }

    /// Every registered MCP tool with a side left unvalidated (its schema did not compile),
    /// and why: `(full name, ["inputSchema: <reason>", …])`, sorted by name.
    pub fn unvalidated(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = read(&self.mcp)
            .values()
            .flat_map(|e| e.catalog.tools.iter())
            .filter_map(|(name, t)| {
                let why = t.schemas.as_ref()?.unvalidated();
                (!why.is_empty()).then(|| (name.clone(), why.to_vec()))
            })
            .collect();
        out.sort();
        out
    }

    /// The catalog registered for `server`, if any.
    pub fn server_catalog(&self, server: &str) -> Option<Arc<ServerCatalog>> {
        read(&self.mcp).get(server).map(|e| Arc::clone(&e.catalog))
    }

    /// Swaps in a new catalog for a server already registered; its stack stays.
    pub fn replace_catalog(&self, server: &str, catalog: ServerCatalog) -> bool {
        match write(&self.mcp).get_mut(server) {
            Some(e) => {
                e.catalog = Arc::new(catalog);
                true
            }
            None => false,
        }
    }

    /// Removes a server and all its tools.
    pub fn remove_server(&self, server: &str) {
        write(&self.mcp).remove(server);
    }

    /// The number of tools a server has registered.
    pub fn server_tool_count(&self, server: &str) -> usize {
        read(&self.mcp)
            .get(server)
            .map_or(0, |e| e.catalog.tools.len())
    }

    /// Every registered tool, sorted by name.
    pub fn catalog(&self) -> Vec<ToolDefinition> {
        let mut out: Vec<ToolDefinition> = read(&self.local)
            .values()
            .map(|e| e.definition.clone())
            .collect();
        for e in read(&self.mcp).values() {
            out.extend(e.catalog.tools.values().map(|t| t.definition.clone()));
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        out
    }

    /// Every registered tool's name (unsorted), without copying a definition.
    pub fn names(&self) -> Vec<String> {
        let mut out: Vec<String> = read(&self.local).keys().cloned().collect();
        for e in read(&self.mcp).values() {
            out.extend(e.catalog.tools.keys().cloned());
        }
        out
    }

    /// The tools `grants` enable, sorted by name.
    pub fn catalog_for(&self, grants: &ToolGrants) -> Vec<ToolDefinition> {
        self.catalog()
            .into_iter()
            .filter(|d| grants::is_granted(grants, &d.name))
            .collect()
    }

    /// Calls a tool by its full name, with no agent restriction (the daemon's own use).
    pub async fn call(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<ToolResult, Error> {
        self.dispatch(tool, arguments, None).await
    }

    /// Calls a tool that reports progress: the server's timeout then bounds the time between
    /// progress notifications (each one notifies `progress`), and the stack's progress cap the
    /// whole call. Grants are checked as by [`call_as`](Self::call_as) when `agent` is given.
    pub async fn call_with_progress(
        &self,
        agent: Option<(&str, &ToolGrants)>,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        progress: ProgressHandle,
    ) -> Result<ToolResult, Error> {
        if let Some((agent, grants)) = agent {
            check_grant(agent, grants, tool)?;
        }
        self.dispatch(tool, arguments, Some(progress)).await
    }

    /// Calls a tool on behalf of an agent: refused, without contacting any server, unless the
    /// agent's grants enable it.
    pub async fn call_as(
        &self,
        agent: &str,
        grants: &ToolGrants,
        tool: &str,
        arguments: Option<Map<String, Value>>,
    ) -> Result<ToolResult, Error> {
        check_grant(agent, grants, tool)?;
        self.dispatch(tool, arguments, None).await
    }

    async fn dispatch(
        &self,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        progress: Option<ProgressHandle>,
    ) -> Result<ToolResult, Error> {
        if let Some(rest) = tool.strip_prefix("mcp.") {
            let (server, _) = rest.split_once('.').ok_or_else(|| Error::UnknownTool {
                tool: tool.to_owned(),
                hint: None,
            })?;
            // Only what the call needs leaves the lock: no schema is cloned per call.
            // The call is made outside the lock: a layer's `call` (an embedder's among them)
            // runs no registry code under it, and a writer waits for no call.
            let (stack, call, name) = {
                let mcp = read(&self.mcp);
                let entry = mcp.get(server).ok_or_else(|| Error::UnknownTool {
                    tool: tool.to_owned(),
                    hint: None,
                })?;
                let Some(t) = entry.catalog.tools.get(tool) else {
                    let name = &tool[server.len() + 5..];
                    return Err(match entry.catalog.held.get(name) {
                        Some(verdict) => Error::ToolHeld {
                            server: server.to_owned(),
                            tool: name.to_owned(),
                            reason: verdict.reason(server),
                        },
                        None => Error::UnknownTool {
                            tool: tool.to_owned(),
                            hint: None,
                        },
                    });
                };
                let name = Arc::clone(&t.name);
                let call = ToolCall {
                    name: Arc::clone(&name),
                    arguments: arguments.map(Arc::new),
                    retry_safe: t.retry_safe,
                    progress,
                    schemas: t.schemas.clone(),
                    task: t.task,
                };
                (Arc::clone(&entry.stack), call, name)
            };
            stack
                .call(call)
                .result()
                .await
                .map_err(|e| crate::stack::into_error(server, &name, e))
        } else {
            let handler = {
                let local = read(&self.local);
                let e = local.get(tool).ok_or_else(|| Error::UnknownTool {
                    tool: tool.to_owned(),
                    hint: None,
                })?;
                e.handler.clone()
            };
            let call = ToolCall {
                name: Arc::from(tool),
                arguments: arguments.map(Arc::new),
                retry_safe: false,
                progress,
                schemas: None,
                task: false,
            };
            handler
                .oneshot(call)
                .await
                .map_err(|source| Error::Handler {
                    tool: tool.to_owned(),
                    source,
                })
        }
    }
}

#[cfg(test)]
mod pool_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::task::{Context, Poll};

    use tower::{BoxError, Service};

    use super::*;

    /// A stack that counts its clones and answers with the tool's name.
    struct Counted(Arc<AtomicUsize>);

    impl Clone for Counted {
        fn clone(&self) -> Self {
            self.0.fetch_add(1, Ordering::Relaxed);
            Self(Arc::clone(&self.0))
        }
    }

    impl Service<ToolCall> for Counted {
        type Response = ToolResult;
        type Error = BoxError;
        type Future = std::future::Ready<Result<ToolResult, BoxError>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
            Poll::Ready(Ok(()))
        }

        fn call(&mut self, call: ToolCall) -> Self::Future {
            std::future::ready(Ok(ToolResult::text(call.name.to_string())))
        }
    }

    #[tokio::test]
    async fn a_ready_stack_is_called_in_place_and_not_cloned_per_call() {
        let clones = Arc::new(AtomicUsize::new(0));
        let pool = StackPool::new(ToolService::new(Counted(Arc::clone(&clones))));
        for i in 0..10 {
            let name = format!("t{i}");
            let result = pool
                .call(ToolCall::new(name.as_str()))
                .result()
                .await
                .unwrap();
            assert_eq!(result.joined_text(), name);
        }
        // One clone, made by the first call and given back; none after.
        assert_eq!(clones.load(Ordering::Relaxed), 1);
        assert_eq!(pool.idle().len(), 1);
    }

    /// A stack whose readiness fails; it counts how often it was asked.
    #[derive(Clone)]
    struct Broken(Arc<AtomicUsize>);

    impl Service<ToolCall> for Broken {
        type Response = ToolResult;
        type Error = BoxError;
        type Future = std::future::Ready<Result<ToolResult, BoxError>>;

        fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
            self.0.fetch_add(1, Ordering::Relaxed);
            Poll::Ready(Err("the connection is gone".into()))
        }

        fn call(&mut self, _: ToolCall) -> Self::Future {
            unreachable!("a service whose readiness failed is never called")
        }
    }

    #[tokio::test]
    async fn a_stack_whose_readiness_fails_fails_the_call_and_is_not_asked_again() {
        let asked = Arc::new(AtomicUsize::new(0));
        let pool = StackPool::new(ToolService::new(Broken(Arc::clone(&asked))));
        let err = pool.call(ToolCall::new("t")).result().await.unwrap_err();
        assert_eq!(err.to_string(), "the connection is gone");
        assert_eq!(asked.load(Ordering::Relaxed), 1);
        assert!(pool.idle().is_empty(), "a failed clone is not given back");
    }

    #[tokio::test]
    async fn a_stack_that_is_not_ready_at_once_waits_for_readiness() {
        // One call at a time; the first holds its place until `release` is sent.
        let (release, held) = tokio::sync::oneshot::channel::<()>();
        let held = Arc::new(Mutex::new(Some(held)));
        let inner = tower::service_fn(move |call: ToolCall| {
            let held = held.lock().unwrap().take();
            async move {
                if let Some(held) = held {
                    let _ = held.await;
                }
                Ok::<_, BoxError>(ToolResult::text(call.name.to_string()))
            }
        });
        let limited = tower::limit::ConcurrencyLimit::new(inner, 1);
        let pool = StackPool::new(ToolService::new(limited));
        let first = pool.call(ToolCall::new("first"));
        let second = pool.call(ToolCall::new("second"));
        assert!(matches!(first, StackCall::Ready(_)));
        assert!(
            matches!(second, StackCall::Waiting(_)),
            "the limit's one place is taken"
        );
        let second = tokio::spawn(second.result());
        tokio::task::yield_now().await;
        assert!(!second.is_finished(), "waits for the first call's place");
        release.send(()).unwrap();
        assert_eq!(first.result().await.unwrap().joined_text(), "first");
        assert_eq!(second.await.unwrap().unwrap().joined_text(), "second");
    }
}
