//! The elicitation seam: how an embedder answers a server's `elicitation/create`.
//!
//! A server may ask the user for input in the middle of a call (spec revision `2025-11-25`,
//! "Elicitation"). A daemon has no one to ask, so elicitation is off by default: the client
//! does not advertise it and answers `elicitation/create` with −32601, like every request it
//! does not handle. An embedder that can ask someone (the daemon's operator UI) plugs in an
//! [`ElicitationService`] with [`ClientOptions::elicitation_handler`] or, for every server of a
//! session, [`SessionOptions::elicitation_handler`](crate::SessionOptions::elicitation_handler).
//! Then:
//!
//! - `initialize` advertises `capabilities.elicitation` as `{"form": {}}` (form mode only);
//! - every `elicitation/create` reaches the handler as an [`ElicitRequest`], which names the
//!   server that asks (its configuration key), and the handler answers with an
//!   [`ElicitResult`]: accept (with the values), decline or cancel;
//! - on accept of a form, every property of `requestedSchema.properties` that has a `default`
//!   and is missing from the values gets that default (SEP-1034), so an operator who only
//!   confirms sends the server's own defaults; a value the handler gave is never replaced.
//!   A URL-mode answer carries no `content`.
//!
//! Request params that do not decode (an unknown `mode`, a URL request without `url`) are
//! answered −32602 "invalid params" without reaching the handler. A handler's error is answered
//! as for any server request (see [`server_requests`](super::server_requests)).
//!
//! # Order
//! `RejectSampling` → elicitation → the
//! [`server_request_handler`](ClientOptions::server_request_handler) (or the default one):
//! sampling stays refused whatever is plugged in, and `elicitation/create` goes to the
//! elicitation handler even when a custom server-request handler is set. The handler is made
//! ready inside the answer's future, so a handler waiting for its operator never holds up
//! `ping`; the answer is sent when the handler is done, and the reader never waits for it.
//!
//! # Example
//! A handler that accepts every form with the schema's defaults and declines URLs:
//! ```
//! use kaged_mcp::client::elicitation::{ElicitMode, ElicitRequest, ElicitResult, ElicitationService};
//! use kaged_mcp::client::ClientOptions;
//! use kaged_mcp::SessionOptions;
//! use tower::{service_fn, BoxError};
//!
//! let handler = ElicitationService::new(service_fn(|req: ElicitRequest| async move {
//!     // A daemon would show `req.server` and `req.params.message` to its operator here.
//!     Ok::<_, BoxError>(match req.params.mode {
//!         ElicitMode::Form { .. } => ElicitResult::Accept(serde_json::Map::new()),
//!         _ => ElicitResult::Decline,
//!     })
//! }));
//! let client_options = ClientOptions::default().elicitation_handler(handler.clone());
//! let session_options = SessionOptions::new().elicitation_handler(handler);
//! ```

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use pin_project::pin_project;
use serde_json::{Map, Value};
use tower::util::{BoxCloneSyncService, Oneshot};
use tower::{BoxError, Service, ServiceExt};

pub use crate::protocol::elicitation::{ElicitMode, ElicitParams, ElicitResult};
use crate::protocol::jsonrpc::{JsonRpcError, INVALID_PARAMS};
use crate::protocol::method::{CreateElicitation, ServerRequestKind as _};
use crate::protocol::{RequestId, ServerRequest};

#[cfg(doc)]
use super::ClientOptions;

/// A type-erased elicitation handler. See the [module docs](self) for an example.
pub type ElicitationService = BoxCloneSyncService<ElicitRequest, ElicitResult, BoxError>;

/// An `elicitation/create` request, as the [`ElicitationService`] sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ElicitRequest {
    /// The key of the server that asks, to show whoever answers.
    pub server: Arc<str>,
    /// The server's id for the request.
    pub id: RequestId,
    /// What the server asks.
    pub params: ElicitParams,
}

/// Sends `elicitation/create` to the elicitation handler and every other request to `inner`.
/// See the [module docs](self).
#[derive(Clone)]
pub(crate) struct Elicit<S> {
    inner: S,
    handler: ElicitationService,
    server: Arc<str>,
}

impl<S> Elicit<S> {
    pub(crate) fn new(inner: S, handler: ElicitationService, server: &str) -> Self {
        Self {
            inner,
            handler,
            server: Arc::from(server),
        }
    }
}

impl<S> fmt::Debug for Elicit<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Elicit")
            .field("inner", &std::any::type_name::<S>())
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl<S> Service<ServerRequest> for Elicit<S>
where
    S: Service<ServerRequest, Response = Value, Error = BoxError>,
{
    type Response = Value;
    type Error = BoxError;
    type Future = ResponseFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        // The handler is readied in the call's future (`Oneshot`), not here: a busy handler
        // must not hold up `ping`.
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        if req.method != CreateElicitation::METHOD {
            return ResponseFuture::inner(self.inner.call(req));
        }
        let params = req.params.unwrap_or_else(|| Value::Object(Map::new()));
        let params = match serde_json::from_value::<ElicitParams>(params) {
            Ok(params) => params,
            Err(e) => {
                tracing::warn!(server = &*self.server, method = CreateElicitation::METHOD, error = %e, "invalid elicitation request; refused");
                return ResponseFuture::error(JsonRpcError::new(
                    INVALID_PARAMS,
                    format!("invalid {} params: {e}", CreateElicitation::METHOD),
                ));
            }
        };
        // Only a form's answer carries values, and only a form's schema has defaults.
        let properties = match &params.mode {
            ElicitMode::Form { requested_schema } => Some(
                requested_schema
                    .get("properties")
                    .and_then(Value::as_object)
                    .cloned()
                    .unwrap_or_default(),
            ),
            ElicitMode::Url { .. } => None,
        };
        let request = ElicitRequest {
            server: Arc::clone(&self.server),
            id: req.id,
            params,
        };
        ResponseFuture::elicit(
            self.handler.clone().oneshot(request),
            properties,
            Arc::clone(&self.server),
        )
    }
}

/// Fills in the `default` of every property of `properties` that `content` leaves out
/// (SEP-1034); a key present in `content`, even `null`, is kept. Returns how many were filled.
pub(crate) fn fill_defaults(
    properties: &Map<String, Value>,
    content: &mut Map<String, Value>,
) -> usize {
    let mut filled = 0;
    for (name, schema) in properties {
        let Some(default) = schema.get("default") else {
            continue;
        };
        if !content.contains_key(name) {
            content.insert(name.clone(), default.clone());
            filled += 1;
        }
    }
    filled
}

/// Response future for [`Elicit`]: the inner call, the handler's answer, or an immediate
/// "invalid params".
#[pin_project]
pub(crate) struct ResponseFuture<F> {
    #[pin]
    kind: Kind<F>,
}

#[pin_project(project = KindProj)]
enum Kind<F> {
    Inner {
        #[pin]
        future: F,
    },
    Elicit {
        #[pin]
        future: Oneshot<ElicitationService, ElicitRequest>,
        /// `requestedSchema.properties` of a form; `None` for a URL.
        properties: Option<Map<String, Value>>,
        server: Arc<str>,
    },
    Error {
        error: Option<JsonRpcError>,
    },
}

impl<F> ResponseFuture<F> {
    fn inner(future: F) -> Self {
        Self {
            kind: Kind::Inner { future },
        }
    }

    fn elicit(
        future: Oneshot<ElicitationService, ElicitRequest>,
        properties: Option<Map<String, Value>>,
        server: Arc<str>,
    ) -> Self {
        Self {
            kind: Kind::Elicit {
                future,
                properties,
                server,
            },
        }
    }

    fn error(error: JsonRpcError) -> Self {
        Self {
            kind: Kind::Error { error: Some(error) },
        }
    }
}

impl<F> fmt::Debug for ResponseFuture<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.kind {
            Kind::Inner { .. } => "Inner",
            Kind::Elicit { .. } => "Elicit",
            Kind::Error { .. } => "Error",
        };
        f.debug_struct("ResponseFuture")
            .field("state", &state)
            .finish_non_exhaustive()
    }
}

impl<F> Future for ResponseFuture<F>
where
    F: Future<Output = Result<Value, BoxError>>,
{
    type Output = Result<Value, BoxError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.project().kind.project() {
            KindProj::Inner { future } => future.poll(cx),
            KindProj::Elicit {
                future,
                properties,
                server,
            } => {
                let mut result = ready!(future.poll(cx))?;
                let mut filled = 0;
                if let (ElicitResult::Accept(content), Some(properties)) =
                    (&mut result, &*properties)
                {
                    filled = fill_defaults(properties, content);
                }
                tracing::debug!(
                    server = &**server,
                    method = CreateElicitation::METHOD,
                    action = result.action(),
                    defaults_filled = filled,
                    "elicitation answered"
                );
                Poll::Ready(Ok(result.into_result(properties.is_some())))
            }
            KindProj::Error { error } => {
                let error = error.take().expect("polled after completion");
                Poll::Ready(Err(Box::new(error)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::server_requests::{self, to_jsonrpc_error};
    use crate::protocol::jsonrpc::METHOD_NOT_FOUND;
    use kaged_mcp_layers::reject_sampling::RejectedCounter;
    use serde_json::json;
    use std::sync::Mutex;

    fn request(method: &str, params: Value) -> ServerRequest {
        ServerRequest {
            id: RequestId::Number(3),
            method: method.into(),
            params: Some(params),
        }
    }

    /// The scenario's schema: a default for each primitive type.
    fn form() -> Value {
        json!({
            "message": "accept with defaults",
            "requestedSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "default": "John Doe"},
                    "age": {"type": "integer", "default": 30},
                    "score": {"type": "number", "default": 95.5},
                    "status": {"type": "string", "enum": ["active", "inactive"], "default": "active"},
                    "verified": {"type": "boolean", "default": true},
                    "nickname": {"type": "string"}
                },
                "required": []
            }
        })
    }

    /// A handler answering `answer`, keeping the requests it saw.
    fn handler(answer: ElicitResult) -> (ElicitationService, Arc<Mutex<Vec<ElicitRequest>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&seen);
        let svc = ElicitationService::new(tower::service_fn(move |req: ElicitRequest| {
            log.lock().unwrap().push(req);
            let answer = answer.clone();
            async move { Ok::<_, BoxError>(answer) }
        }));
        (svc, seen)
    }

    fn stack(elicitation: Option<ElicitationService>) -> server_requests::ServerRequestService {
        server_requests::stack("github", None, elicitation, None, RejectedCounter::new())
    }

    #[tokio::test]
    async fn an_empty_accept_gets_every_default_of_each_primitive_type() {
        let (h, seen) = handler(ElicitResult::Accept(Map::new()));
        let answer = stack(Some(h))
            .oneshot(request(CreateElicitation::METHOD, form()))
            .await
            .unwrap();
        assert_eq!(
            answer,
            json!({"action": "accept", "content": {
                "name": "John Doe", "age": 30, "score": 95.5, "status": "active", "verified": true
            }})
        );
        let seen = seen.lock().unwrap();
        assert_eq!(&*seen[0].server, "github");
        assert_eq!(seen[0].id, RequestId::Number(3));
        assert_eq!(seen[0].params.message, "accept with defaults");
    }

    #[tokio::test]
    async fn a_value_the_handler_gave_is_never_replaced_by_a_default() {
        let given = json!({"name": "Ada", "age": 36, "score": 1, "status": "inactive",
            "verified": false, "nickname": null});
        let (h, _) = handler(ElicitResult::Accept(given.as_object().unwrap().clone()));
        let answer = stack(Some(h))
            .oneshot(request(CreateElicitation::METHOD, form()))
            .await
            .unwrap();
        assert_eq!(answer, json!({"action": "accept", "content": given}));
    }

    #[tokio::test]
    async fn only_the_missing_fields_get_their_defaults() {
        let (h, _) = handler(ElicitResult::Accept(
            json!({"age": 7}).as_object().unwrap().clone(),
        ));
        let answer = stack(Some(h))
            .oneshot(request(CreateElicitation::METHOD, form()))
            .await
            .unwrap();
        assert_eq!(answer["content"]["age"], 7);
        assert_eq!(answer["content"]["name"], "John Doe");
        assert!(answer["content"].get("nickname").is_none(), "{answer}");
    }

    #[tokio::test]
    async fn decline_and_cancel_pass_through_without_content() {
        for (result, action) in [
            (ElicitResult::Decline, "decline"),
            (ElicitResult::Cancel, "cancel"),
        ] {
            let (h, _) = handler(result);
            let answer = stack(Some(h))
                .oneshot(request(CreateElicitation::METHOD, form()))
                .await
                .unwrap();
            assert_eq!(answer, json!({ "action": action }));
        }
    }

    #[tokio::test]
    async fn a_url_request_reaches_the_handler_and_its_accept_carries_no_content() {
        let (h, seen) = handler(ElicitResult::Accept(
            json!({"x": 1}).as_object().unwrap().clone(),
        ));
        let params = json!({"mode": "url", "message": "open", "url": "https://e.example/k",
            "elicitationId": "e-1"});
        let answer = stack(Some(h))
            .oneshot(request(CreateElicitation::METHOD, params))
            .await
            .unwrap();
        assert_eq!(answer, json!({"action": "accept"}));
        assert!(matches!(
            &seen.lock().unwrap()[0].params.mode,
            ElicitMode::Url { url, elicitation_id } if url == "https://e.example/k" && elicitation_id == "e-1"
        ));
    }

    #[tokio::test]
    async fn invalid_params_are_refused_without_reaching_the_handler() {
        let (h, seen) = handler(ElicitResult::Decline);
        let err = stack(Some(h))
            .oneshot(request(
                CreateElicitation::METHOD,
                json!({"mode": "telepathy"}),
            ))
            .await
            .unwrap_err();
        let rpc = to_jsonrpc_error(&err);
        assert_eq!(rpc.code, INVALID_PARAMS);
        assert!(rpc.message.contains("telepathy"), "{}", rpc.message);
        assert!(seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn without_a_handler_elicitation_is_method_not_found() {
        let err = stack(None)
            .oneshot(request(CreateElicitation::METHOD, form()))
            .await
            .unwrap_err();
        assert_eq!(to_jsonrpc_error(&err).code, METHOD_NOT_FOUND);
    }

    #[tokio::test]
    async fn with_a_handler_ping_is_answered_and_sampling_still_refused() {
        let (h, seen) = handler(ElicitResult::Accept(Map::new()));
        let counter = RejectedCounter::new();
        let svc = server_requests::stack("github", None, Some(h), None, counter.clone());
        assert_eq!(
            svc.clone()
                .oneshot(request("ping", json!({})))
                .await
                .unwrap(),
            json!({})
        );
        let err = svc
            .oneshot(request(
                "sampling/createMessage",
                json!({"messages": [], "maxTokens": 1}),
            ))
            .await
            .unwrap_err();
        assert_eq!(to_jsonrpc_error(&err).code, METHOD_NOT_FOUND);
        assert_eq!(counter.get(), 1);
        assert!(seen.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn the_elicitation_handler_comes_before_a_custom_server_request_handler() {
        let custom = server_requests::ServerRequestService::new(tower::service_fn(
            |req: ServerRequest| async move { Ok::<_, BoxError>(json!({"custom": req.method})) },
        ));
        let (h, _) = handler(ElicitResult::Cancel);
        let svc = server_requests::stack(
            "github",
            Some(custom),
            Some(h),
            None,
            RejectedCounter::new(),
        );
        assert_eq!(
            svc.clone()
                .oneshot(request(CreateElicitation::METHOD, form()))
                .await
                .unwrap(),
            json!({"action": "cancel"})
        );
        assert_eq!(
            svc.oneshot(request("roots/list", json!({}))).await.unwrap(),
            json!({"custom": "roots/list"})
        );
    }

    #[test]
    fn fill_defaults_counts_what_it_filled() {
        let properties = form()["requestedSchema"]["properties"]
            .as_object()
            .unwrap()
            .clone();
        let mut content = json!({"name": "x"}).as_object().unwrap().clone();
        assert_eq!(fill_defaults(&properties, &mut content), 4);
        assert_eq!(fill_defaults(&properties, &mut content), 0);
    }
}
