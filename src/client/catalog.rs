//! The server's tool catalog as the client reads it: `tools/list` followed page by page
//! (bounded pages, cursors, tool counts and time), its 2026-07-28 freshness (`ttlMs`), the
//! `x-mcp-header` parameters of its tools, and the `subscriptions/listen` stream that hears
//! a modern server's list changes.

use super::*;

/// The most `tools/list` pages followed.
pub const MAX_TOOL_PAGES: usize = 100;

/// The most tools accepted from one server.
pub const MAX_TOOLS: usize = 10_000;

/// The pause before a `subscriptions/listen` stream that ended is opened again; it doubles
/// with each stream that ends within [`LISTEN_STEADY`], up to [`LISTEN_MAX_PAUSE`], and each
/// pause is drawn between half of that and all of it (equal jitter).
pub const LISTEN_FIRST_PAUSE: Duration = Duration::from_secs(1);

/// The longest pause before a `subscriptions/listen` stream is opened again.
pub const LISTEN_MAX_PAUSE: Duration = Duration::from_secs(60);

/// A `subscriptions/listen` stream that lasted this long was a working one: the next pause
/// is [`LISTEN_FIRST_PAUSE`] again (a proxy that cuts idle streams every 30 s costs a 1 s gap
/// each time), and a JSON-RPC error that ends it is no refusal.
pub const LISTEN_STEADY: Duration = Duration::from_secs(10);

/// Whether `error`, ending a `subscriptions/listen` that lasted `lasted`, means the server (or
/// what stands before it) refuses the subscription, so asking again would only repeat it: a
/// JSON-RPC error within [`LISTEN_STEADY`], or an HTTP refusal (`401`/`403` and any other
/// `4xx` but `408`, `425` and `429`, or `202` with no answer). A cut, an error after a working
/// stream, a `5xx` or a request that could not be sent are not.
pub(super) fn listen_refused(error: &ClientError, lasted: Duration) -> bool {
    match error {
        ClientError::JsonRpc { .. } => lasted < LISTEN_STEADY,
        ClientError::SendFailed { failure, .. } => {
            failure.is_permanent()
                || match failure.http_status() {
                    Some(202) => true,
                    Some(status) => (400..500).contains(&status) && !is_transient_status(status),
                    None => false,
                }
        }
        _ => false,
    }
}

impl McpClient {
    /// Lists the server's tools, following `nextCursor` to the end. Each page is bounded by
    /// [`ClientOptions::request_timeout`].
    ///
    /// A failure is kept as the server's [`last_error`](Self::last_error), as a failed call's
    /// is in the stack's statistics: whoever keeps the catalog keeps the old one.
    ///
    /// # Errors
    /// [`ClientError::Pagination`] when a cursor comes back twice, after more than
    /// [`MAX_TOOL_PAGES`] pages or more than [`MAX_TOOLS`] tools;
    /// [`ClientError::RequestTimeout`] when a page is not answered in time; any error of the
    /// session.
    pub async fn list_tools(&self) -> Result<Vec<ToolInfo>, ClientError> {
        let listed = self.list_tools_unnoted().await;
        // A fail-fast refusal (failed, backing off, disabled) only repeats the last error,
        // which stays as it is.
        let fail_fast = |e: &ClientError| {
            matches!(
                e,
                ClientError::ServerFailed { .. }
                    | ClientError::BackingOff { .. }
                    | ClientError::Disabled { .. }
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
        let pagination = |detail: String| ClientError::Pagination {
            server: Arc::clone(&self.shared.server),
            detail,
        };
        let mut tools = Vec::new();
        let mut seen = HashSet::new();
        let mut cursor: Option<String> = None;
        let received = Instant::now();
        // The shortest positive ttl of the pages; none if a page named none (or 0).
        let mut ttl: Option<Duration> = Some(Duration::MAX);
        for page in 1..=MAX_TOOL_PAGES {
            let (rx, guard) = session.list_tools_page(cursor.as_deref())?;
            let limit = self.shared.options.request_timeout;
            let result = guard.answer_within(rx, "tools/list", limit).await?;
            ttl = match (ttl, result.ttl_ms) {
                (Some(t), Some(ms)) if ms > 0 => Some(t.min(Duration::from_millis(ms))),
                _ => None,
            };
            tools.extend(result.tools);
            if tools.len() > MAX_TOOLS {
                return Err(pagination(format!("more than {MAX_TOOLS} tools")));
            }
            match result.next_cursor {
                Some(next) if !next.is_empty() => {
                    if !seen.insert(next.clone()) {
                        return Err(pagination(format!(
                            "the cursor {next:?} came back twice (page {page})"
                        )));
                    }
                    cursor = Some(next);
                }
                _ => {
                    self.shared.lock().tools_fresh_until =
                        ttl.and_then(|ttl| received.checked_add(ttl));
                    if session.dialect().mirrors_param_headers() {
                        tools = self.with_param_headers(&session, tools);
                    }
                    return Ok(tools);
                }
            }
        }
        Err(pagination(format!("more than {MAX_TOOL_PAGES} pages")))
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

impl Shared {
    /// Keeps a `subscriptions/listen` stream open for a modern server that offers list
    /// changes, for the life of `session`. A stream that ends while the session lives (the
    /// server ended it, or the transport cut it: an idle timeout, a proxy), or that could not
    /// be sent, is opened again after a pause ([`LISTEN_FIRST_PAUSE`], doubling up to
    /// [`LISTEN_MAX_PAUSE`]; the first again after a stream that lasted [`LISTEN_STEADY`]);
    /// its acknowledgement has the tool list read again, since a change may have come in the
    /// gap. A refusal ([`listen_refused`]) ends it for the session.
    pub(super) fn listen_for_tool_changes(&self, session: &Arc<RpcSession>) {
        let server = Arc::clone(&self.server);
        let session = Arc::downgrade(session);
        tokio::spawn(async move {
            // Equal jitter: between half the doubling pause and all of it.
            let mut backoff = JitteredBackoff::new(LISTEN_FIRST_PAUSE, LISTEN_MAX_PAUSE)
                .expect("the listen pauses are valid")
                .jitter(Jitter::Equal);
            let mut retry = 0;
            let mut reopened = false;
            loop {
                let Some(live) = session.upgrade() else {
                    return;
                };
                let opened = Instant::now();
                let sent = live.listen_for_tool_changes(reopened);
                drop(live);
                let outcome = match sent {
                    Ok(rx) => match rx.await {
                        Ok(outcome) => outcome,
                        Err(_) => return,
                    },
                    // Not sent (the bound on requests in flight, a full stdio pipe, or the
                    // session's end, seen just below): tried again like a cut.
                    Err(e) => Err(e),
                };
                match session.upgrade() {
                    Some(live) if !live.is_closed() => {}
                    _ => return,
                }
                let lasted = opened.elapsed();
                if lasted >= LISTEN_STEADY {
                    retry = 0;
                }
                let pause = backoff.delay(retry);
                let pause_ms = pause.as_millis() as u64;
                match &outcome {
                    Err(e) if listen_refused(e, lasted) => {
                        tracing::warn!(server = &*server, error = %e, "the server refused subscriptions/listen; tool changes are seen at the ttl or a restart");
                        return;
                    }
                    Ok(_) => tracing::info!(
                        server = &*server,
                        pause_ms,
                        "the server ended the tools/list_changed subscription; opening it again"
                    ),
                    Err(e) => tracing::info!(
                        server = &*server,
                        error = %e,
                        pause_ms,
                        "the tools/list_changed subscription was cut; opening it again"
                    ),
                }
                tokio::time::sleep(pause).await;
                retry = retry.saturating_add(1);
                reopened = true;
            }
        });
    }
}
