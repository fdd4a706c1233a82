//! What pinning found, told once per session: a WARN line and a [`PinEvent`] for each tool
//! that differs from `mcp.lock` (held or, under `pins = "warn"`, registered all the same), and
//! for a server reached differently or saying it is someone else than the lock recorded.
//! Catalogs are judged in [`rebuild_catalog`](super::rebuild_catalog); this module only
//! tells, comparing with the catalog before, so a `list_changed` that changes nothing says
//! nothing again.

use std::sync::Arc;

use crate::config::{Config, McpServerConfig};
use crate::pin::{LockedServer, PinPolicy, Verdict};
use crate::protocol::InitializeResult;
use crate::registry::ServerCatalog;

/// Something pinning found, for an embedder to act on (the daemon asks its operator):
/// [`SessionOptions::on_pin_event`](super::SessionOptions::on_pin_event).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum PinEvent {
    /// A tool differs from `mcp.lock`.
    Tool {
        /// The server's key.
        server: String,
        /// The tool, as the server names it.
        tool: String,
        /// How it differs.
        verdict: Verdict,
        /// Whether it is held out of the catalog (`pins = "enforce"`), or registered all the
        /// same (`pins = "warn"`).
        held: bool,
    },
    /// How the server is reached, or what it says it is, differs from `mcp.lock`. Its tools
    /// are judged one by one all the same.
    Server {
        /// The server's key.
        server: String,
        /// What differs: `transport`, `command`, `url`, `server name`, `server version`,
        /// `instructions`.
        differences: Vec<String>,
    },
}

/// The embedder's hook for [`PinEvent`]s.
pub(super) type OnPinEvent = Arc<dyn Fn(&PinEvent) + Send + Sync>;

/// The verdict a catalog held for `tool` (server's name), registered or held.
fn verdict_in<'a>(catalog: &'a ServerCatalog, server: &str, tool: &str) -> Option<&'a Verdict> {
    catalog.held.get(tool).or_else(|| {
        catalog
            .tools
            .get(&format!("mcp.{server}.{tool}"))
            .map(|t| &t.pin)
    })
}

/// Tells each difference of `catalog` that `previous` did not already have.
pub(super) fn announce_tools(
    config: &Config,
    server: &str,
    previous: Option<&ServerCatalog>,
    catalog: &ServerCatalog,
    hook: Option<&OnPinEvent>,
) {
    let policy = config.pin_policy(server);
    if policy == PinPolicy::Off {
        return;
    }
    let registered = catalog
        .tools
        .values()
        .filter_map(|t| Some((t.definition.mcp_tool_name.as_deref()?, &t.pin, false)));
    let held = catalog.held.iter().map(|(n, v)| (n.as_str(), v, true));
    for (tool, verdict, is_held) in held.chain(registered) {
        if !verdict.differs() {
            continue;
        }
        let before = previous.and_then(|p| verdict_in(p, server, tool));
        if before == Some(verdict) {
            continue;
        }
        let reason = verdict.reason(server);
        let approve = Verdict::approve_with(server);
        if is_held {
            tracing::warn!(server, tool, reason = %reason, "tool held by mcp.lock; {approve}");
        } else {
            tracing::warn!(server, tool, reason = %reason, "tool differs from mcp.lock, registered as pins = \"warn\" says; {approve}");
        }
        if let Some(hook) = hook {
            hook(&PinEvent::Tool {
                server: server.to_owned(),
                tool: tool.to_owned(),
                verdict: verdict.clone(),
                held: is_held,
            });
        }
    }
}

/// Tells how the server, as configured and as it answered `initialize`, differs from its
/// lock entry (nothing when pins are off, or the lock has no entry: its tools say that).
pub(super) fn announce_server(
    config: &Config,
    server: &McpServerConfig,
    init: Option<&InitializeResult>,
    hook: Option<&OnPinEvent>,
) {
    let pins = config.server_pins(&server.key);
    let Some(locked) = pins.entry().filter(|_| pins.policy != PinPolicy::Off) else {
        return;
    };
    let now = LockedServer::observe(server.reached(), init, &[]);
    let differences = crate::pin::identity_differences(locked, &now);
    if differences.is_empty() {
        return;
    }
    tracing::warn!(
        server = %server.key,
        differences = %differences.join(", "),
        "server differs from mcp.lock (its tools are judged one by one); {}",
        Verdict::approve_with(&server.key)
    );
    if let Some(hook) = hook {
        hook(&PinEvent::Server {
            server: server.key.clone(),
            differences,
        });
    }
}

impl super::Session {
    /// What each started server answers now, as `mcp.lock` would record it: how it is
    /// configured to be reached, its `serverInfo` and `instructions`, and every tool it lists
    /// (before the project's `tools:` filter, so that changing the filter needs no new lock).
    /// `only`: these servers (all started ones when `None`). A server that did not start, or
    /// whose `tools/list` failed, maps to the operator's line saying why; disabled servers
    /// are left out.
    ///
    /// What `kaged-mcp lock` writes and `lock --check` compares ([`crate::pin::LockReport`]).
    pub async fn observe_pins(
        &self,
        only: Option<&[String]>,
    ) -> std::collections::BTreeMap<String, Result<LockedServer, String>> {
        let mut out = std::collections::BTreeMap::new();
        for (key, server) in &self.servers {
            if server.disabled || only.is_some_and(|o| !o.contains(key)) {
                continue;
            }
            let observed = match &server.client {
                None => Err(self
                    .start_failures()
                    .into_iter()
                    .find(|f| &f.server == key)
                    .map_or_else(|| "did not start".to_owned(), |f| f.reason)),
                Some(client) => match client.list_tools().await {
                    Ok(tools) => match repeated_name(&tools) {
                        // One name, two definitions: which one the server runs is its choice,
                        // so neither can be reviewed and pinned.
                        Some(name) => Err(format!(
                            "lists the tool `{}` twice in one tools/list, with {}; a tool \
                             listed twice cannot be pinned",
                            crate::escape::visible(name),
                            if tools
                                .iter()
                                .filter(|t| t.name == name)
                                .map(crate::pin::tool_digest)
                                .collect::<std::collections::BTreeSet<_>>()
                                .len()
                                > 1
                            {
                                "two different definitions"
                            } else {
                                "the same definition"
                            }
                        )),
                        None => Ok(LockedServer::observe(
                            server.config.reached(),
                            client.initialize_result().as_deref(),
                            &tools,
                        )),
                    },
                    Err(e) => Err(e.reason()),
                },
            };
            out.insert(key.clone(), observed);
        }
        out
    }
}

/// The first tool name `tools` lists more than once.
fn repeated_name(tools: &[crate::protocol::ToolInfo]) -> Option<&str> {
    let mut seen = std::collections::HashSet::new();
    tools
        .iter()
        .map(|t| t.name.as_str())
        .find(|n| !seen.insert(*n))
}
