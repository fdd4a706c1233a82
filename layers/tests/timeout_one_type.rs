//! `kaged_mcp_layers::timeout` has one timeout and one error type: a plain timeout (a request
//! without a progress handle) fails with this module's `Elapsed`, found with `is::<Elapsed>()`.

use std::time::Duration;

use kaged_mcp_layers::timeout::{
    Elapsed, ElapsedKind, ProgressAware, ProgressHandle, ProgressTimeoutLayer,
};
use tower::{service_fn, BoxError, ServiceBuilder, ServiceExt};

struct Plain;

impl ProgressAware for Plain {
    fn progress(&self) -> Option<&ProgressHandle> {
        None
    }
}

#[tokio::test(start_paused = true)]
async fn a_plain_timeout_is_this_modules_elapsed() {
    let slow = service_fn(|_: Plain| async {
        tokio::time::sleep(Duration::from_secs(10)).await;
        Ok::<_, BoxError>(())
    });
    let svc = ServiceBuilder::new()
        .layer(ProgressTimeoutLayer::new(
            Duration::from_millis(500),
            Duration::from_secs(60),
        ))
        .service(slow);
    let err = svc.oneshot(Plain).await.unwrap_err();
    assert!(err.is::<Elapsed>(), "{err}");
    assert_eq!(
        err.downcast_ref::<Elapsed>().unwrap().kind(),
        ElapsedKind::Idle
    );
}
