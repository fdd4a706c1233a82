//! Multi round-trip requests (2026-07-28): answering a `tools/call`, `resources/read` or
//! `prompts/get` that came back `resultType: "input_required"`.
//!
//! Each input request (`{"method", "params"}` under a key the server chose) is what a legacy
//! server would have sent as a request of its own, so it goes through the same server-request
//! stack ([`super::server_requests`]) as one, under its key as the id:
//! - `sampling/createMessage` is refused by `RejectSampling` (ADR-0043 §6), counted and logged;
//!   MRTR has no error answer for one input, so the refusal ends the call with
//!   [`ErrorKind::InputRefused`](crate::client::ErrorKind::InputRefused) and the call is not retried (a server must not assume a
//!   client fulfils its input requests);
//! - `elicitation/create` goes to the elicitation handler when one is plugged in; without one
//!   it is declined (`{"action": "decline"}`), and the call goes on: the server decides what a
//!   declined elicitation means;
//! - anything else (`roots/list`, an unknown method) goes to the embedder's server-request
//!   handler; when it refuses (the default handler refuses every method but `ping`), the call
//!   ends with [`ErrorKind::InputRefused`](crate::client::ErrorKind::InputRefused).
//!
//! The answers and the server's `requestState` (echoed unchanged) go on a retry of the call
//! with a new request id ([`ResponseFuture`](super::ResponseFuture)), at most
//! [`MAX_INPUT_ROUNDS`] times; the call's timeout bounds the whole exchange. A
//! `resources/read` or `prompts/get` goes the same way through `with_input`, each round
//! bounded by the request timeout.

use std::sync::Arc;

use serde_json::{Map, Value};
use tower::ServiceExt;

use super::error::{ClientError, RequestRef};
use super::rpc::{CallGuard, InputRetry, Receiver, RpcSession};
use super::server_requests::to_jsonrpc_error;
use crate::client::Kind;
use crate::protocol::answer::Answer;
use crate::protocol::method::{CreateElicitation, Request, ServerRequestKind as _};
use crate::protocol::{InputRequired, RequestId, ServerRequest};

/// The most `input_required` answers one call may get before it is given up.
pub const MAX_INPUT_ROUNDS: u32 = 8;

/// Sends a request `R` with `send` (given the answers of the last round, if any) until it is
/// answered with a result: each `input_required` answer is resolved ([`resolve`]) and the
/// request sent again with a new id, at most [`MAX_INPUT_ROUNDS`] times; each round is bounded
/// by `limit`.
pub(crate) async fn with_input<R, F>(
    session: &Arc<RpcSession>,
    limit: std::time::Duration,
    mut send: F,
) -> Result<R::Result, ClientError>
where
    R: Request,
    F: FnMut(Option<&InputRetry>) -> Result<(Receiver<Answer<R::Result>>, CallGuard), ClientError>,
{
    let method = R::METHOD;
    let mut retry = None;
    let mut rounds = 0;
    loop {
        let (rx, guard) = send(retry.as_ref())?;
        let request = guard.request();
        let asked = match guard.answer_within(rx, limit).await? {
            Answer::Complete(result) => return Ok(result),
            Answer::InputRequired(asked) => asked,
        };
        if rounds == MAX_INPUT_ROUNDS {
            return Err(ClientError::new(
                Arc::clone(&session.server),
                Some(request),
                Kind::InputRounds { rounds },
            ));
        }
        rounds += 1;
        tracing::debug!(
            server = &*session.server,
            method,
            inputs = asked.input_requests.len(),
            "input_required: answering the server's input requests"
        );
        // The answers (an elicitation handler, the embedder's) are bounded like a round.
        let resolved =
            tokio::time::timeout(limit, resolve(Arc::clone(session), request.clone(), asked));
        retry = Some(match resolved.await {
            Ok(answers) => answers?,
            Err(_) => {
                return Err(ClientError::new(
                    Arc::clone(&session.server),
                    Some(request),
                    Kind::RequestTimeout { after: limit },
                ))
            }
        });
    }
}

/// Answers the input requests of `asked` (the answer to `request`), one after the other, in
/// the order of their keys.
pub(crate) async fn resolve(
    session: Arc<RpcSession>,
    request: RequestRef,
    asked: InputRequired,
) -> Result<InputRetry, ClientError> {
    let mut responses = Map::new();
    for (key, input) in asked.input_requests {
        let method = input
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        if method.is_empty() {
            return Err(session.protocol_violation(
                Some(request),
                format!("input request `{key}` has no method"),
            ));
        }
        let answer = if method == CreateElicitation::METHOD && !session.has_elicitation() {
            tracing::info!(
                server = &*session.server,
                input = %key,
                "elicitation declined: no elicitation handler is plugged in"
            );
            serde_json::json!({ "action": "decline" })
        } else {
            let asked = ServerRequest {
                id: RequestId::from(key.as_str()),
                method: method.clone(),
                params: input.get("params").cloned(),
            };
            match session.server_requests().oneshot(asked).await {
                Ok(answer) => answer,
                Err(e) => {
                    return Err(ClientError::new(
                        Arc::clone(&session.server),
                        Some(request),
                        Kind::InputRefused {
                            input: key.into(),
                            method: method.into(),
                            detail: to_jsonrpc_error(&e).message.into(),
                        },
                    ))
                }
            }
        };
        responses.insert(key, answer);
    }
    Ok(InputRetry {
        responses,
        state: asked.request_state,
    })
}
