//! `Validate` over a `tower_test` mock: a request that fails its own check never reaches the
//! mock, one that passes reaches it (as changed by its check), its response is checked only
//! when the request asked for it, the policy reaches every check, and readiness is the inner
//! service's.

use kaged_mcp_layers::validate::{CheckResponse, ValidateLayer, Validated};
use tokio_test::{assert_pending, assert_ready_ok};
use tower::BoxError;
use tower_test::{assert_request_eq, mock};

#[derive(Debug, Clone, PartialEq)]
struct Call {
    n: i64,
    check_answer: bool,
}

/// What the layer hands every check: the least `n` allowed.
#[derive(Debug, Clone)]
struct Floor(i64);

struct AtLeast(usize);

impl CheckResponse<String> for AtLeast {
    fn check(&self, answer: &String) -> Result<(), BoxError> {
        if answer.len() < self.0 {
            return Err(format!("an answer of {} bytes, under {}", answer.len(), self.0).into());
        }
        Ok(())
    }
}

impl Validated<String, Floor> for Call {
    type Check = AtLeast;

    fn validate(&mut self, floor: &Floor) -> Result<Option<AtLeast>, BoxError> {
        if self.n < floor.0 {
            return Err(format!("n = {} is under {}", self.n, floor.0).into());
        }
        // A check may normalise the request in place.
        self.n = self.n.min(100);
        Ok(self.check_answer.then_some(AtLeast(2)))
    }
}

fn call(n: i64, check_answer: bool) -> Call {
    Call { n, check_answer }
}

#[tokio::test]
async fn a_request_that_fails_its_check_never_reaches_the_service() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, String, _>(ValidateLayer::new(Floor(0)));
    assert_ready_ok!(svc.poll_ready());
    let err = svc.call(call(-1, true)).await.unwrap_err();
    assert_eq!(err.to_string(), "n = -1 is under 0");
    // Nothing was sent: the next request is the first the mock sees.
    assert_ready_ok!(svc.poll_ready());
    let answer = svc.call(call(500, false));
    assert_request_eq!(handle, call(100, false)).send_response(String::from("x"));
    assert_eq!(
        answer.await.unwrap(),
        "x",
        "unchecked: a short answer passes"
    );
}

#[tokio::test]
async fn a_response_is_checked_only_when_the_request_asked() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, String, _>(ValidateLayer::new(Floor(0)));
    assert_ready_ok!(svc.poll_ready());
    let short = svc.call(call(1, true));
    assert_request_eq!(handle, call(1, true)).send_response(String::from("x"));
    assert_eq!(
        short.await.unwrap_err().to_string(),
        "an answer of 1 bytes, under 2"
    );
    assert_ready_ok!(svc.poll_ready());
    let long = svc.call(call(2, true));
    assert_request_eq!(handle, call(2, true)).send_response(String::from("xy"));
    assert_eq!(long.await.unwrap(), "xy");
}

#[tokio::test]
async fn the_inner_error_passes_and_readiness_is_the_inner_services() {
    let (mut svc, mut handle) = mock::spawn_layer::<Call, String, _>(ValidateLayer::new(Floor(5)));
    handle.allow(0);
    assert_pending!(svc.poll_ready());
    handle.allow(1);
    assert_ready_ok!(svc.poll_ready());
    let failed = svc.call(call(7, true));
    assert_request_eq!(handle, call(7, true)).send_error("the server went away");
    assert_eq!(
        failed.await.unwrap_err().to_string(),
        "the server went away"
    );
}
