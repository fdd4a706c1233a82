//! The one generic entry: [`McpClient::request`] sends a request of any kind `R` (one of
//! [`crate::protocol::method`], with its [`Request::Params`] from [`crate::protocol::params`],
//! or an embedder's own [`Request`] type for a method this crate does not know, such as an
//! extension's) and [`McpClient::notify`] a notification, each with the era's `_meta` added and
//! the same bounds as every request the client sends. The typed helpers (`list_tools`,
//! `read_resource`, …) stay for what needs more than a request: pages, caps, capabilities.

use std::sync::Arc;

use serde::ser::{Serialize, SerializeMap, Serializer};
use serde_json::{Map, Value};

use super::error::{ClientError, Kind};
use super::rpc::{CallGuard, InputRetry, RpcSession};
use super::McpClient;
use crate::protocol::method::{Notification, Request};
use crate::protocol::modern::RequestMeta;
use crate::transport::RequestHead;

impl McpClient {
    /// Sends a request of kind `R` with `params` (serialized into the JSON object of its
    /// `params`; the session adds the era's `_meta` entries, keeping the caller's other
    /// `_meta` entries) and returns its result, decoded into `R::Result`. Bounded by
    /// [`ClientOptions::request_timeout`](super::ClientOptions::request_timeout) (each round of
    /// a 2026-07-28 `input_required` exchange, answered as for every request); a caller that
    /// stops waiting cancels it. No capability is checked: the server's answer says.
    ///
    /// # Example
    /// ```no_run
    /// # async fn f(client: &kaged_mcp::client::McpClient) -> Result<(), kaged_mcp::client::ClientError> {
    /// use kaged_mcp::protocol::method::{GetPrompt, Request};
    /// use kaged_mcp::protocol::params::GetPromptRequestParams;
    ///
    /// let prompt = client
    ///     .request::<GetPrompt>(GetPromptRequestParams::new("simple-prompt"))
    ///     .await?;
    ///
    /// // A method this crate does not know: an extension's, with params of its own.
    /// struct ListWidgets;
    /// impl Request for ListWidgets {
    ///     const METHOD: &'static str = "example/widgets/list";
    ///     type Params = serde_json::Map<String, serde_json::Value>;
    ///     type Result = serde_json::Value;
    /// }
    /// let widgets = client.request::<ListWidgets>(Default::default()).await?;
    /// # let _ = (widgets, prompt); Ok(()) }
    /// ```
    ///
    /// # Errors
    /// [`ErrorKind::RequestTimeout`](crate::client::ErrorKind::RequestTimeout); [`ErrorKind::JsonRpc`](crate::client::ErrorKind::JsonRpc) when the server refuses;
    /// [`ErrorKind::ProtocolViolation`](crate::client::ErrorKind::ProtocolViolation) when its result does not decode into `R::Result`;
    /// [`ErrorKind::BadParams`](crate::client::ErrorKind::BadParams) when `params` do not
    /// serialize to JSON (nothing is sent); any error of the session.
    pub async fn request<R: Request>(&self, params: R::Params) -> Result<R::Result, ClientError> {
        let params = serde_json::to_value(&params).map_err(|e| {
            ClientError::of(
                &self.shared.server,
                Kind::BadParams {
                    method: R::METHOD,
                    detail: e.to_string(),
                },
            )
        })?;
        let session = self.shared.session().await?;
        let limit = self.shared.options.request_timeout;
        super::mrtr::with_input::<R, _>(&session, limit, |retry| {
            send::<R>(&session, &params, retry)
        })
        .await
    }

    /// Sends the notification `N` with `params` (none when empty); starts the server if it is
    /// not running. A notification has no answer: once queued, it is sent.
    ///
    /// # Errors
    /// Any error of the session's start.
    pub async fn notify<N: Notification>(
        &self,
        params: Map<String, Value>,
    ) -> Result<(), ClientError> {
        let session = self.shared.session().await?;
        session.notify_with(N::METHOD, (!params.is_empty()).then_some(params));
        Ok(())
    }
}

/// Sends one round of a request `R` with the caller's `params`, as JSON.
fn send<R: Request>(
    session: &Arc<RpcSession>,
    params: &Value,
    retry: Option<&InputRetry>,
) -> Result<(super::rpc::AnswerReceiver<R::Result>, CallGuard), ClientError> {
    // What the transport may mirror and the span names: a prompt's or tool's name, a URI.
    let name = ["name", "uri"]
        .iter()
        .find_map(|key| params.get(*key)?.as_str());
    let head = RequestHead::new(R::METHOD)
        .name(name)
        .protocol_version(session.declared_version());
    let params = AnyParams {
        params,
        meta: session.meta(),
        retry,
    };
    session.request_answer::<R>(head, Some(&params))
}

/// The caller's params with the session's additions: the era's `_meta` entries (merged into
/// the caller's `_meta`, the session's winning), and a multi round-trip retry's answers. Params
/// that are no JSON object (`()` gives `null`: none) get nothing added when there is nothing
/// to add, and are written as they are otherwise; the server says what it makes of them.
struct AnyParams<'a> {
    params: &'a Value,
    meta: RequestMeta<'a>,
    retry: Option<&'a InputRetry>,
}

/// The keys the session writes itself.
const INPUT_RESPONSES: &str = "inputResponses";
const REQUEST_STATE: &str = "requestState";

impl Serialize for AnyParams<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let none = Map::new();
        let params = match self.params {
            Value::Object(params) => params,
            Value::Null => &none,
            other => return other.serialize(serializer),
        };
        let mut map = serializer.serialize_map(None)?;
        let ours = |key: &str| {
            (key == "_meta" && !self.meta.is_empty())
                || (self.retry.is_some() && matches!(key, INPUT_RESPONSES | REQUEST_STATE))
        };
        for (key, value) in params.iter().filter(|(k, _)| !ours(k)) {
            map.serialize_entry(key, value)?;
        }
        if !self.meta.is_empty() {
            match params.get("_meta").and_then(Value::as_object) {
                Some(theirs) => {
                    // Serialized once to read back the session's keys; a request's `_meta` is
                    // small and this entry is off the hot path.
                    let mut merged = theirs.clone();
                    if let Ok(Value::Object(mine)) = serde_json::to_value(self.meta) {
                        merged.extend(mine);
                    }
                    map.serialize_entry("_meta", &merged)?;
                }
                None => map.serialize_entry("_meta", &self.meta)?,
            }
        }
        if let Some(retry) = self.retry {
            map.serialize_entry(INPUT_RESPONSES, &retry.responses)?;
            if let Some(state) = &retry.state {
                map.serialize_entry(REQUEST_STATE, state)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(v: Value) -> Value {
        assert!(v.is_object());
        v
    }

    #[test]
    fn a_legacy_request_carries_the_callers_params_as_they_are() {
        let p = params(json!({"name": "x", "_meta": {"progressToken": 3}}));
        let any = AnyParams {
            params: &p,
            meta: RequestMeta::default(),
            retry: None,
        };
        assert_eq!(
            serde_json::to_value(&any).unwrap(),
            json!({"name": "x", "_meta": {"progressToken": 3}})
        );
    }

    #[test]
    fn a_retry_replaces_the_callers_answers_and_state() {
        let p = params(json!({"uri": "a://b", "requestState": "old", "inputResponses": {}}));
        let retry = InputRetry {
            responses: json!({"k": {"ok": true}}).as_object().cloned().unwrap(),
            state: Some("new".into()),
        };
        let any = AnyParams {
            params: &p,
            meta: RequestMeta::default(),
            retry: Some(&retry),
        };
        assert_eq!(
            serde_json::to_value(&any).unwrap(),
            json!({"uri": "a://b", "inputResponses": {"k": {"ok": true}}, "requestState": "new"})
        );
    }

    #[test]
    fn the_sessions_meta_is_merged_into_the_callers_and_wins() {
        let p = params(json!({"_meta": {"progressToken": 1, "mine": "kept"}}));
        let any = AnyParams {
            params: &p,
            meta: RequestMeta {
                progress_token: Some(9),
                modern: None,
            },
            retry: None,
        };
        assert_eq!(
            serde_json::to_value(&any).unwrap(),
            json!({"_meta": {"progressToken": 9, "mine": "kept"}})
        );
    }
}
