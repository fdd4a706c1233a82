//! The request kinds the client sends, each built on [`RpcSession::request`] (or, for
//! `tools/call`, the hot path's own writer): `initialize`, `server/discover`, a page of any
//! list, the resource requests, `prompts/get`,
//! `completion/complete`, `logging/setLevel` and `tools/call`, with their parameters. Each
//! kind's method name and result type come from its [`crate::protocol::method`] type.

use serde_json::Map;

use super::*;
use crate::protocol::method::ReadResource;
use crate::protocol::method::{CallTool, Complete, Discover, GetPrompt, Initialize, SetLevel};
use crate::protocol::prompts::{
    CompleteArgument, CompleteContext, CompleteParams, CompleteResult, CompletionRef,
    GetPromptParams, GetPromptResult, SetLevelParams,
};
use crate::protocol::resources::{PageParams, ReadResourceResult, UriParams};
use crate::protocol::LoggingLevel;

impl RpcSession {
    /// Sends `initialize`, advertising `capabilities` (see
    /// [`ClientOptions::capabilities`](super::super::ClientOptions)); the caller awaits the
    /// receiver and, if it gives up, ends the request with [`gave_up`](Self::gave_up). Never
    /// cancelled.
    pub(crate) fn initialize(
        &self,
        client_info: &Implementation,
        capabilities: serde_json::Map<String, Value>,
    ) -> Result<
        (
            u64,
            oneshot::Receiver<Result<InitializeResult, ClientError>>,
        ),
        ClientError,
    > {
        let params = InitializeParams {
            protocol_version: crate::protocol::LATEST_PROTOCOL_VERSION,
            capabilities,
            client_info,
        };
        let head = RequestHead::new(Initialize::METHOD);
        self.send_typed(Initialize::METHOD, head, Some(&params), &mut |_| {})
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
        let head = RequestHead::new(Discover::METHOD).protocol_version(Some(meta.version()));
        self.send_typed(Discover::METHOD, head, Some(&params), &mut |_| {})
    }

    /// Sends one page request of a list `R` (`tools/list`, `resources/list`,
    /// `resources/templates/list`, `prompts/list`).
    pub(crate) fn list_page<R: Request>(
        self: &Arc<Self>,
        cursor: Option<&str>,
    ) -> Result<(Receiver<R::Result>, CallGuard), ClientError> {
        let meta = self.meta();
        // A legacy first page has no params at all.
        let params =
            (cursor.is_some() || meta.modern.is_some()).then_some(PageParams { cursor, meta });
        let head = RequestHead::new(R::METHOD).protocol_version(self.declared_version());
        self.request::<R>(head, params.as_ref())
    }

    /// Sends a request `R` about one resource (`resources/subscribe`,
    /// `resources/unsubscribe`); the URI is the request's name in its head.
    pub(crate) fn about_resource<R: Request>(
        self: &Arc<Self>,
        uri: &str,
    ) -> Result<(Receiver<R::Result>, CallGuard), ClientError> {
        let (head, params) = self.resource_request::<R>(uri, None);
        self.request::<R>(head, Some(&params))
    }

    /// Sends `resources/read` of `uri`, with a multi round-trip `retry`'s answers.
    pub(crate) fn read_resource(
        self: &Arc<Self>,
        uri: &str,
        retry: Option<&InputRetry>,
    ) -> Result<(AnswerReceiver<ReadResourceResult>, CallGuard), ClientError> {
        let (head, params) = self.resource_request::<ReadResource>(uri, retry);
        self.request_answer::<ReadResource>(head, Some(&params))
    }

    /// The head and params of a request `R` about the resource `uri`.
    fn resource_request<'a, R: Request>(
        &'a self,
        uri: &'a str,
        retry: Option<&'a InputRetry>,
    ) -> (RequestHead<'a>, UriParams<'a>) {
        let params = UriParams {
            uri,
            meta: self.meta(),
            input_responses: retry.map(|r| &r.responses),
            request_state: retry.and_then(|r| r.state.as_deref()),
        };
        let head = RequestHead::new(R::METHOD)
            .name(Some(uri))
            .protocol_version(self.declared_version());
        (head, params)
    }

    /// Sends `prompts/get` for the prompt `name` with `arguments`, and a multi round-trip
    /// `retry`'s answers.
    pub(crate) fn get_prompt(
        self: &Arc<Self>,
        name: &str,
        arguments: Option<&Map<String, Value>>,
        retry: Option<&InputRetry>,
    ) -> Result<(AnswerReceiver<GetPromptResult>, CallGuard), ClientError> {
        let params = GetPromptParams {
            name,
            arguments,
            meta: self.meta(),
            input_responses: retry.map(|r| &r.responses),
            request_state: retry.and_then(|r| r.state.as_deref()),
        };
        let head = RequestHead::new(GetPrompt::METHOD)
            .name(Some(name))
            .protocol_version(self.declared_version());
        self.request_answer::<GetPrompt>(head, Some(&params))
    }

    /// Sends `completion/complete` for the argument `name` of `reference`, typed so far as
    /// `value`, with the arguments already chosen (`context.arguments`).
    pub(crate) fn complete(
        self: &Arc<Self>,
        reference: &CompletionRef,
        name: &str,
        value: &str,
        chosen: Option<&Map<String, Value>>,
    ) -> Result<(Receiver<CompleteResult>, CallGuard), ClientError> {
        let params = CompleteParams {
            reference,
            argument: CompleteArgument { name, value },
            context: chosen.map(|arguments| CompleteContext { arguments }),
            meta: self.meta(),
        };
        let head = RequestHead::new(Complete::METHOD).protocol_version(self.declared_version());
        self.request::<Complete>(head, Some(&params))
    }

    /// Sends `logging/setLevel`.
    pub(crate) fn set_log_level(
        self: &Arc<Self>,
        level: LoggingLevel,
    ) -> Result<(Receiver<IgnoredAny>, CallGuard), ClientError> {
        let params = SetLevelParams {
            level,
            meta: self.meta(),
        };
        let head = RequestHead::new(SetLevel::METHOD).protocol_version(self.declared_version());
        self.request::<SetLevel>(head, Some(&params))
    }

    /// Sends one `tools/call`; a multi round-trip retry carries the answers to the server's
    /// input requests and its state.
    pub(crate) fn start_call(
        self: &Arc<Self>,
        call: &ToolCall,
        retry: Option<&InputRetry>,
    ) -> Result<(Receiver<CallAnswer>, CallGuard), ClientError> {
        let (tx, rx) = oneshot::channel();
        let modern = self.dialect.modern_meta();
        let params = match modern {
            Some(_) => self.dialect.param_header_values(call),
            None => Vec::new(),
        };
        let head = RequestHead::new(CallTool::METHOD)
            .name(Some(&call.name))
            .protocol_version(modern.map(ModernMeta::version))
            .params(&params);
        let id = self.send_request(
            CallTool::METHOD,
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
                        task: call.task.then_some(self.calls.metadata),
                    };
                    return write_request_with(buf, id, CallTool::METHOD, |buf| {
                        params.write_json(buf)
                    });
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
                write_request_with(buf, id, CallTool::METHOD, |buf| params.write_json(buf))
            },
        )?;
        tracing::Span::current().record("request_id", id);
        tracing::debug!(server = &*self.server, tool = %call.name, request_id = id, "tools/call sent");
        Ok((rx, CallGuard::new(Arc::clone(self), id, CallTool::METHOD)))
    }
}

/// The receiver of a request that may be answered `input_required`.
pub(crate) type AnswerReceiver<R> = Receiver<Answer<R>>;

/// What a multi round-trip retry of a `tools/call` adds to it.
#[derive(Debug, Clone, Default)]
pub(crate) struct InputRetry {
    /// `inputResponses`: the answers, by the server's keys.
    pub(crate) responses: serde_json::Map<String, Value>,
    /// `requestState`, echoed unchanged.
    pub(crate) state: Option<String>,
}
