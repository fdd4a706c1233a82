//! Why a call failed, when the session knows better than the stack: a server that needs an
//! OAuth login, one that is not ready (and is then tried again in the background), an unknown
//! tool's hint ([`crate::registry::suggest`]).

use std::sync::Arc;

use super::{Server, Session};
use crate::Error;

impl Session {
    /// Says why a call to `mcp.<server>.<tool>` failed when the server knows better: any
    /// failure (but a refused grant) of an OAuth server whose token source needs a login
    /// becomes [`Error::LoginRequired`]; an unknown tool of a declared server that is not ready
    /// and has no tools registered becomes [`Error::ServerNotReady`]: its tools are missing
    /// because it is not running. (A restarting server keeps its catalog, so a misspelt tool of
    /// it stays [`Error::UnknownTool`].)
    pub(super) fn explain(&self, tool: &str, err: Error) -> Error {
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
        if self.one_shot {
            return;
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
        let skipped = |server: &str, name: &str| {
            self.registry
                .server_catalog(server)
                .and_then(|c| c.skipped.get(name).cloned())
        };
        let hint = crate::registry::suggest::unknown_tool_hint(
            tool,
            &crate::registry::suggest::Known {
                servers: &servers,
                names: &names,
                filtered: &filtered,
                skipped: &skipped,
            },
        );
        Error::UnknownTool {
            tool: tool.to_owned(),
            hint,
        }
    }
}
