//! The server→client request stack: `RejectSampling` → roots (if set) → elicitation (if
//! plugged) → the handler.
//!
//! Every request a server sends to the client passes through [`RejectSampling`] first, so
//! `sampling/createMessage` never reaches a handler (ADR-0043 §5), whatever an embedder puts
//! below it. When an elicitation handler is plugged in
//! ([`ClientOptions::elicitation_handler`](super::ClientOptions::elicitation_handler)),
//! `elicitation/create` goes to it next (see [`elicitation`](super::elicitation)). The default
//! handler, [`DefaultServerRequests`], answers `ping` with `{}` and every other method
//! (`roots/list` when no roots are set, `elicitation/create` when no elicitation handler is plugged in, anything
//! unknown) with JSON-RPC error −32601. A refused sampling request is answered −32601 too, with
//! a message saying why; the refusal is counted
//! ([`McpClient::sampling_refused_count`](super::McpClient::sampling_refused_count)) and logged
//! at WARN by the layer.
//!
//! A handler returns the `result` value, or an error: a [`JsonRpcError`] in the [`BoxError`]
//! is sent as is; any other error becomes −32603 "internal error".
//!
//! # Example
//! An embedder answering `roots/list` itself:
//! ```
//! use kaged_mcp::client::{server_requests::{DefaultServerRequests, ServerRequestService}, ClientOptions};
//! use kaged_mcp::protocol::ServerRequest;
//! use tower::{service_fn, BoxError, Service, ServiceExt};
//!
//! let handler = service_fn(|req: ServerRequest| async move {
//!     if req.method == "roots/list" {
//!         return Ok::<_, BoxError>(serde_json::json!({"roots": []}));
//!     }
//!     DefaultServerRequests.oneshot(req).await
//! });
//! let options = ClientOptions::default().server_request_handler(ServerRequestService::new(handler));
//! ```

use std::future::{ready, Ready};
use std::task::{Context, Poll};

use kaged_mcp_layers::reject_sampling::{error::Rejected, RejectSampling, RejectedCounter};
use serde_json::Value;
use tower::util::BoxCloneSyncService;
use tower::{BoxError, Service};

use super::elicitation::{Elicit, ElicitationService};
use super::roots::{Root, Roots, RootsAnswered};
use crate::protocol::jsonrpc::{JsonRpcError, INTERNAL_ERROR, METHOD_NOT_FOUND};
use crate::protocol::method::{ServerPing, ServerRequestKind as _};
use crate::protocol::ServerRequest;

/// A type-erased handler of server→client requests.
pub type ServerRequestService = BoxCloneSyncService<ServerRequest, Value, BoxError>;

/// The default handler: `ping` → `{}`, everything else → "method not found".
#[derive(Debug, Clone, Copy, Default)]
pub struct DefaultServerRequests;

impl Service<ServerRequest> for DefaultServerRequests {
    type Response = Value;
    type Error = BoxError;
    type Future = Ready<Result<Value, BoxError>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        if req.method == ServerPing::METHOD {
            return ready(Ok(Value::Object(serde_json::Map::new())));
        }
        ready(Err(Box::new(JsonRpcError::method_not_found(&req.method))))
    }
}

/// The full stack for one server: `RejectSampling` over the roots, if any (see
/// [`roots`](super::roots)), over the elicitation handler, if any (see
/// [`elicitation`](super::elicitation)), over `handler` or the default one.
pub(crate) fn stack(
    server: &str,
    handler: Option<ServerRequestService>,
    elicitation: Option<ElicitationService>,
    roots: Option<(&[Root], RootsAnswered)>,
    counter: RejectedCounter,
) -> ServerRequestService {
    let handler = handler.unwrap_or_else(|| ServerRequestService::new(DefaultServerRequests));
    let inner = match elicitation {
        Some(elicit) => ServerRequestService::new(Elicit::new(handler, elicit, server)),
        None => handler,
    };
    let inner = match roots {
        Some((roots, answered)) => ServerRequestService::new(Roots::new(inner, roots, answered)),
        None => inner,
    };
    ServerRequestService::new(RejectSampling::with_counter(inner, server, counter))
}

/// The JSON-RPC error to answer for a handler's error.
pub(crate) fn to_jsonrpc_error(err: &BoxError) -> JsonRpcError {
    if let Some(rejected) = err.downcast_ref::<Rejected>() {
        return JsonRpcError::new(
            METHOD_NOT_FOUND,
            format!(
                "{} is not supported: this client (kaged) does not let MCP servers request \
                 LLM sampling",
                rejected.method()
            ),
        );
    }
    if let Some(rpc) = err.downcast_ref::<JsonRpcError>() {
        return rpc.clone();
    }
    JsonRpcError::new(INTERNAL_ERROR, format!("internal error: {err}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::RequestId;
    use tower::ServiceExt;

    fn req(method: &str) -> ServerRequest {
        ServerRequest {
            id: RequestId::Number(0),
            method: method.into(),
            params: None,
        }
    }

    #[tokio::test]
    async fn ping_is_answered_with_an_empty_object() {
        let svc = stack("s", None, None, None, RejectedCounter::new());
        assert_eq!(
            svc.oneshot(req("ping")).await.unwrap(),
            serde_json::json!({})
        );
    }

    #[tokio::test]
    async fn sampling_is_refused_with_method_not_found_and_counted() {
        let counter = RejectedCounter::new();
        let svc = stack("s", None, None, None, counter.clone());
        let err = svc
            .oneshot(req("sampling/createMessage"))
            .await
            .unwrap_err();
        let rpc = to_jsonrpc_error(&err);
        assert_eq!(rpc.code, METHOD_NOT_FOUND);
        assert!(rpc.message.contains("sampling"), "{}", rpc.message);
        assert_eq!(counter.get(), 1);
    }

    #[tokio::test]
    async fn roots_elicitation_and_unknown_methods_are_not_found() {
        for method in ["roots/list", "elicitation/create", "x/unknown"] {
            let svc = stack("s", None, None, None, RejectedCounter::new());
            let err = svc.oneshot(req(method)).await.unwrap_err();
            let rpc = to_jsonrpc_error(&err);
            assert_eq!(rpc.code, METHOD_NOT_FOUND, "{method}");
            assert!(rpc.message.contains(method));
        }
    }

    #[tokio::test]
    async fn a_custom_handler_cannot_see_sampling() {
        let handler = ServerRequestService::new(tower::service_fn(|_: ServerRequest| async {
            Ok::<_, BoxError>(serde_json::json!({"model": "leaked"}))
        }));
        let counter = RejectedCounter::new();
        let svc = stack("s", Some(handler), None, None, counter.clone());
        assert!(svc
            .clone()
            .oneshot(req("sampling/createMessage"))
            .await
            .is_err());
        assert_eq!(
            svc.oneshot(req("roots/list")).await.unwrap()["model"],
            "leaked"
        );
        assert_eq!(counter.get(), 1);
    }
}
