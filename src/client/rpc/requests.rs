//! The request kinds the client sends, each built on [`RpcSession::request`] (or, for
//! `tools/call`, the hot path's own writer): `initialize`, `server/discover`,
//! `subscriptions/listen`, a `tools/list` page and `tools/call`, with their parameters. A new
//! kind is a method here.

use super::*;

impl RpcSession {
    /// Sends `initialize`, advertising form-mode `elicitation` when `elicitation` is set; the
    /// caller awaits the receiver and, if it gives up, ends the request with
    /// [`gave_up`](Self::gave_up). Never cancelled.
    pub(crate) fn initialize(
        &self,
        client_info: &Implementation,
        elicitation: bool,
    ) -> Result<
        (
            u64,
            oneshot::Receiver<Result<InitializeResult, ClientError>>,
        ),
        ClientError,
    > {
        let params = InitializeParams {
            protocol_version: crate::protocol::LATEST_PROTOCOL_VERSION,
            capabilities: client_capabilities(elicitation),
            client_info,
        };
        let head = RequestHead::new("initialize");
        self.send_typed("initialize", head, Some(&params), &mut |_| {})
    }

    /// Sends `server/discover` with the modern `_meta` entries `meta` (the era probe, or a
    /// modern session's first request); the caller awaits the receiver and, if it gives up,
    /// [`forget`](Self::forget)s the id (no `notifications/cancelled`: a legacy server has
    /// no session yet to be told).
    pub(crate) fn discover(
        &self,
        meta: &ModernMeta,
    ) -> Result<(u64, oneshot::Receiver<Result<DiscoverResult, ClientError>>), ClientError> {
        let params = DiscoverParams {
            meta: RequestMeta {
                progress_token: None,
                modern: Some(meta),
            },
        };
        let head = RequestHead::new(DISCOVER).protocol_version(Some(meta.version()));
        self.send_typed(DISCOVER, head, Some(&params), &mut |_| {})
    }

    /// Opens a modern `subscriptions/listen` stream for `notifications/tools/list_changed`
    /// (which bump the tools generation like a legacy server's); the receiver completes when
    /// the subscription ends, and it stays in the request table until then. With `relist`
    /// (a stream opened again), its acknowledgement has the tool list read again: only then
    /// is a change sure to be heard, so one made while no stream was open is not missed.
    pub(crate) fn listen_for_tool_changes(
        &self,
        relist: bool,
    ) -> Result<oneshot::Receiver<Result<IgnoredAny, ClientError>>, ClientError> {
        let params = ListenParams {
            meta: self.meta(),
            notifications: ListenFilter {
                tools_list_changed: true,
            },
        };
        let head = RequestHead::new(LISTEN).protocol_version(self.declared_version());
        // Set before the request can reach the server, so its acknowledgement finds it.
        let mut on_id = |id| {
            if relist {
                self.relist_on_ack.store(id, Ordering::Release);
            }
        };
        let (_, rx) = self.send_typed(LISTEN, head, Some(&params), &mut on_id)?;
        Ok(rx)
    }

    /// Sends one `tools/list` page request.
    pub(crate) fn list_tools_page(
        self: &Arc<Self>,
        cursor: Option<&str>,
    ) -> Result<
        (
            oneshot::Receiver<Result<ListToolsResult, ClientError>>,
            CallGuard,
        ),
        ClientError,
    > {
        let meta = self.meta();
        // A legacy first page has no params at all.
        let params =
            (cursor.is_some() || meta.modern.is_some()).then_some(ListToolsParams { cursor, meta });
        let head = RequestHead::new("tools/list").protocol_version(self.declared_version());
        self.request("tools/list", head, params.as_ref())
    }

    /// Sends one `tools/call`; a multi round-trip retry carries the answers to the server's
    /// input requests and its state.
    pub(crate) fn start_call(
        self: &Arc<Self>,
        call: &ToolCall,
        retry: Option<&InputRetry>,
    ) -> Result<
        (
            oneshot::Receiver<Result<CallAnswer, ClientError>>,
            CallGuard,
        ),
        ClientError,
    > {
        let (tx, rx) = oneshot::channel();
        let modern = self.dialect.modern_meta();
        let params = match modern {
            Some(_) => self.dialect.param_header_values(call),
            None => Vec::new(),
        };
        let head = RequestHead::new("tools/call")
            .name(Some(&call.name))
            .protocol_version(modern.map(ModernMeta::version))
            .params(&params);
        let id = self.send_request(
            "tools/call",
            head,
            if call.task && modern.is_none() {
                Expect::TaskCall(tx)
            } else {
                Expect::CallTool(tx)
            },
            call.progress.clone(),
            &mut |id, buf| {
                if modern.is_none() && retry.is_none() {
                    let params = LegacyCallToolParams {
                        name: &call.name,
                        arguments: call.arguments.as_deref(),
                        meta: call
                            .progress
                            .as_ref()
                            .map(|_| ProgressMeta { progress_token: id }),
                        task: call.task.then_some(self.task_metadata),
                    };
                    return write_request(buf, id, "tools/call", Some(&params));
                }
                let params = CallToolParams {
                    name: &call.name,
                    arguments: call.arguments.as_deref(),
                    meta: RequestMeta {
                        progress_token: call.progress.as_ref().map(|_| id),
                        modern,
                    },
                    input_responses: retry.map(|r| &r.responses),
                    request_state: retry.and_then(|r| r.state.as_deref()),
                };
                write_request(buf, id, "tools/call", Some(&params))
            },
        )?;
        tracing::Span::current().record("request_id", id);
        tracing::debug!(server = &*self.server, tool = %call.name, request_id = id, "tools/call sent");
        Ok((rx, CallGuard::new(Arc::clone(self), id)))
    }
}

/// The `server/discover` method.
pub(crate) const DISCOVER: &str = "server/discover";

/// The `subscriptions/listen` method.
pub(crate) const LISTEN: &str = "subscriptions/listen";

/// `subscriptions/listen` parameters.
#[derive(Debug, Serialize)]
struct ListenParams<'a> {
    #[serde(rename = "_meta")]
    meta: RequestMeta<'a>,
    notifications: ListenFilter,
}

/// The notifications a subscription asks for.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct ListenFilter {
    tools_list_changed: bool,
}

/// What a multi round-trip retry of a `tools/call` adds to it.
#[derive(Debug, Clone, Default)]
pub(crate) struct InputRetry {
    /// `inputResponses`: the answers, by the server's keys.
    pub(crate) responses: serde_json::Map<String, Value>,
    /// `requestState`, echoed unchanged.
    pub(crate) state: Option<String>,
}
