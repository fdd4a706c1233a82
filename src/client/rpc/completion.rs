//! [`Completion`]: how a request of any kind but `tools/call` is completed from the raw text
//! of its `result`, decoded into the type its requester waits for.

use std::sync::Arc;

use serde::de::DeserializeOwned;
use tokio::sync::oneshot;

use crate::client::{ClientError, Kind};
use crate::telemetry::{Outcome, RequestTelemetry};

/// Completes a request of any kind but `tools/call`: given the raw text of its `result` (or
/// the error that ended it), a maker of the protocol-violation error for a result that does
/// not decode and the request's telemetry, it decodes the result, ends the telemetry with how
/// it went, then sends it to the waiting requester (the span closes before the caller wakes).
pub(crate) struct Completion(Box<CompleteFn>);

/// What a [`Completion`] runs: the result's text (or the error that ended the request), and the
/// maker of the error for a result that does not decode.
type CompleteFn = dyn FnOnce(Result<&str, ClientError>, &Violation<'_>, RequestTelemetry) + Send;

/// Makes the protocol-violation error of a result that does not decode.
pub(super) type Violation<'a> = dyn Fn(serde_json::Error) -> ClientError + 'a;

impl Completion {
    /// The completion of a request whose answer decodes into `R`, sent on `tx`.
    pub(super) fn new<R: DeserializeOwned + Send + 'static>(
        tx: oneshot::Sender<Result<R, ClientError>>,
    ) -> Self {
        Self(Box::new(move |raw, violation, telemetry| {
            let decoded = raw.is_ok();
            let result = raw.and_then(|raw| serde_json::from_str::<R>(raw).map_err(violation));
            telemetry.end(match &result {
                Ok(_) => Outcome::Answered,
                Err(_) if decoded => Outcome::Invalid,
                Err(e) => Outcome::Failed(e),
            });
            let _ = tx.send(result);
        }))
    }

    /// Decodes `raw` (a result's text) and sends it.
    pub(crate) fn complete(
        self,
        raw: &str,
        violation: &Violation<'_>,
        telemetry: RequestTelemetry,
    ) {
        (self.0)(Ok(raw), violation, telemetry);
    }

    /// Ends the request with `err`.
    pub(crate) fn fail(self, err: ClientError, telemetry: RequestTelemetry) {
        (self.0)(Err(err), &|e| unreachable_violation(e), telemetry);
    }
}

/// Never called: a failed request has no result to decode.
fn unreachable_violation(e: serde_json::Error) -> ClientError {
    ClientError::new(
        Arc::from(""),
        None,
        Kind::ProtocolViolation {
            detail: e.to_string(),
        },
    )
}

impl std::fmt::Debug for Completion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Completion")
    }
}
