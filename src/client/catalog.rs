//! The server's tool catalog as the client reads it: `tools/list` followed page by page
//! ([`pages`](super::pages): bounded pages, cursors, tool counts and time), its 2026-07-28
//! freshness (`ttlMs`) and the `x-mcp-header` parameters of its tools. The
//! `subscriptions/listen` stream that hears a modern server's list changes is in
//! [`listen`](super::listen).

use super::router::Router;
use super::*;
use crate::client::ErrorKind;
use crate::protocol::method::ToolsListChanged;
use crate::protocol::ListToolsResult;

/// Registers the catalog feature: `notifications/tools/list_changed` bumps `tools_changed`,
/// which has the list read again.
pub(super) fn register(router: &mut Router, tools_changed: &Arc<watch::Sender<u64>>) {
    let tools_changed = Arc::clone(tools_changed);
    router.notification::<ToolsListChanged, serde::de::IgnoredAny>(move |session, _| {
        tools_may_have_changed(&tools_changed);
        tracing::debug!(server = &*session.server, "server says its tools changed");
    });
}

/// Bumps the tools generation, as a `notifications/tools/list_changed` does: the list is read
/// again.
pub(super) fn tools_may_have_changed(tools_changed: &watch::Sender<u64>) {
    tools_changed.send_modify(|g| *g = g.wrapping_add(1));
}

/// The most `tools/list` pages followed (as for every list: [`MAX_PAGES`](super::pages::MAX_PAGES)).
pub const MAX_TOOL_PAGES: usize = super::pages::MAX_PAGES;

/// The most tools accepted from one server (as items of any list:
/// [`MAX_ITEMS`](super::pages::MAX_ITEMS)).
pub const MAX_TOOLS: usize = super::pages::MAX_ITEMS;

impl McpClient {
    /// Lists the server's tools, following `nextCursor` to the end. Each page is bounded by
    /// [`ClientOptions::request_timeout`]. Empty, without a request, when the server's
    /// capabilities do not declare `tools` (a server of skills or resources only).
    ///
    /// A failure is kept as the server's [`last_error`](Self::last_error), as a failed call's
    /// is in the stack's statistics: whoever keeps the catalog keeps the old one.
    ///
    /// # Errors
    /// [`ErrorKind::Pagination`] when a cursor comes back twice, after more than
    /// [`MAX_TOOL_PAGES`] pages or more than [`MAX_TOOLS`] tools;
    /// [`ErrorKind::RequestTimeout`] when a page is not answered in time; any error of the
    /// session.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        let listed = self.list_tools_unnoted().await;
        // A fail-fast refusal (failed, backing off, disabled) only repeats the last error,
        // which stays as it is.
        let fail_fast = |e: &ClientError| {
            matches!(
                e.kind(),
                ErrorKind::ServerFailed | ErrorKind::BackingOff | ErrorKind::Disabled
            )
        };
        if let Some(e) = listed.as_ref().err().filter(|e| !fail_fast(e)) {
            let mut sup = self.shared.lock();
            sup.last_error = Some(e.to_string());
            sup.last_reason = Some(e.reason());
        }
        listed
    }

    pub(super) async fn list_tools_unnoted(&self) -> Result<Vec<ToolInfo>, ClientError> {
        let session = self.shared.session().await?;
        if !self.declares_tools() {
            self.shared.lock().tools_fresh_until = None;
            return Ok(Vec::new());
        }
        let received = Instant::now();
        // The shortest positive ttl of the pages; none if a page named none (or 0).
        let mut ttl: Option<Duration> = Some(Duration::MAX);
        let tools = self
            .follow_pages(&session, |page: &ListToolsResult| {
                ttl = match (ttl, page.ttl_ms) {
                    (Some(t), Some(ms)) if ms > 0 => Some(t.min(Duration::from_millis(ms))),
                    _ => None,
                };
            })
            .await?;
        self.shared.lock().tools_fresh_until = ttl.and_then(|ttl| received.checked_add(ttl));
        if session.dialect().mirrors_param_headers() {
            return Ok(self.with_param_headers(&session, tools));
        }
        Ok(tools)
    }

    /// Whether the server, as last started, may be asked `tools/list`: its capabilities
    /// declare `tools`, or they are not known (a 2026-07-28 server chosen from a version
    /// error, whose `server/discover` answer gave none). A server that declares capabilities
    /// without `tools` (a skills or resources server) has no tools and is not asked.
    fn declares_tools(&self) -> bool {
        self.shared.lock().init.as_ref().is_none_or(|init| {
            init.capabilities
                .as_object()
                .is_none_or(|caps| caps.contains_key("tools"))
        })
    }

    /// Whether the last tool list is stale by the server's own cache hint (2026-07-28
    /// `ttlMs`): when it is, the list's expiry is signalled once through
    /// [`tools_changed`](Self::tools_changed), as a `notifications/tools/list_changed` would be,
    /// so whoever keeps the catalog reads it again. Call it where the list is needed (the
    /// session does when its catalog is read); the client never polls on its own (the
    /// specification asks a client not to treat the ttl as a polling interval). `false` for a
    /// list that named no positive ttl (legacy servers, `ttlMs: 0`), which is read again on
    /// list-change notifications only (and when the session enables the server again).
    pub fn refresh_tools_if_stale(&self) -> bool {
        let mut sup = self.shared.lock();
        match sup.tools_fresh_until {
            Some(until) if Instant::now() >= until => {
                sup.tools_fresh_until = None;
                drop(sup);
                tracing::debug!(
                    server = &*self.shared.server,
                    "the tool list's ttl expired; it is read again"
                );
                self.shared
                    .tools_changed
                    .send_modify(|g| *g = g.wrapping_add(1));
                true
            }
            _ => false,
        }
    }

    /// Keeps the `x-mcp-header` parameters of `tools` on `session` and leaves out every tool
    /// whose annotations are invalid, with a WARN naming it and why (2026-07-28 Streamable
    /// HTTP: a client must not offer such a tool).
    pub(super) fn with_param_headers(
        &self,
        session: &RpcSession,
        tools: Vec<ToolInfo>,
    ) -> Vec<ToolInfo> {
        let mut headers = std::collections::HashMap::new();
        let kept = tools
            .into_iter()
            .filter(|tool| match param_headers(&tool.input_schema) {
                Ok(found) if found.is_empty() => true,
                Ok(found) => {
                    headers.insert(tool.name.clone(), Arc::from(found));
                    true
                }
                Err(why) => {
                    tracing::warn!(server = &*self.shared.server, tool = %tool.name, reason = %why, "tool left out: its x-mcp-header annotations are invalid");
                    false
                }
            })
            .collect();
        session.dialect().set_param_headers(headers);
        kept
    }
}
