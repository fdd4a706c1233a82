//! `AuthLayer` over a `tower_test` mock of an HTTP client: the header arrives, replaces a
//! caller's header of the same name, is sensitive, and never shows in `Debug` or traces.
#![cfg(feature = "auth")]

mod common;

use common::Logs;
use http::header::AUTHORIZATION;
use http::{Request, Response};
use kaged_mcp_layers::auth::{AuthHeader, AuthLayer};
use tokio_test::{assert_pending, assert_ready_ok};
use tower::ServiceBuilder;
use tower_http::trace::{DefaultMakeSpan, DefaultOnRequest, TraceLayer};
use tower_test::mock;

const SECRET: &str = "sk-live-51HxQ";

#[tokio::test]
async fn bearer_header_arrives_sensitive() {
    let layer = AuthLayer::new(AuthHeader::bearer(SECRET).unwrap());
    let (mut svc, mut handle) = mock::spawn_layer::<Request<()>, Response<()>, _>(layer);

    assert_ready_ok!(svc.poll_ready());
    let response = svc.call(Request::new(()));
    let (req, send) = handle.next_request().await.expect("a request");
    let value = &req.headers()[AUTHORIZATION];
    assert_eq!(value, format!("Bearer {SECRET}").as_str());
    assert!(value.is_sensitive());
    assert!(!format!("{req:?}").contains(SECRET), "{req:?}");
    send.send_response(Response::new(()));
    response.await.unwrap();
}

#[tokio::test]
async fn custom_header_replaces_one_set_by_the_caller() {
    let layer = AuthLayer::new(AuthHeader::header("X-API-Key", SECRET).unwrap());
    let (mut svc, mut handle) = mock::spawn_layer::<Request<()>, Response<()>, _>(layer);

    let request = Request::builder()
        .header("x-api-key", "from-the-caller")
        .header("accept", "text/event-stream")
        .body(())
        .unwrap();
    assert_ready_ok!(svc.poll_ready());
    let response = svc.call(request);
    let (req, send) = handle.next_request().await.expect("a request");
    let values: Vec<_> = req.headers().get_all("x-api-key").iter().collect();
    assert_eq!(values, [SECRET]);
    assert!(values[0].is_sensitive());
    assert!(!req.headers()["accept"].is_sensitive());
    assert!(!req.headers().contains_key(AUTHORIZATION));
    send.send_response(Response::new(()));
    response.await.unwrap();
}

#[tokio::test]
async fn is_ready_only_when_the_client_is() {
    let layer = AuthLayer::new(AuthHeader::bearer(SECRET).unwrap());
    let (mut svc, mut handle) = mock::spawn_layer::<Request<()>, Response<()>, _>(layer);
    handle.allow(0);
    assert_pending!(svc.poll_ready());
    handle.allow(1);
    assert!(svc.is_woken());
    assert_ready_ok!(svc.poll_ready());
}

#[tokio::test(flavor = "current_thread")]
async fn traces_below_the_layer_show_the_header_name_but_not_the_secret() {
    let (logs, _guard) = Logs::capture();
    let (client, mut handle) = mock::pair::<Request<String>, Response<String>>();
    let mut svc = mock::Spawn::new(
        ServiceBuilder::new()
            .layer(AuthLayer::new(AuthHeader::bearer(SECRET).unwrap()))
            .layer(
                TraceLayer::new_for_http()
                    .make_span_with(DefaultMakeSpan::new().include_headers(true))
                    .on_request(DefaultOnRequest::new().level(tracing::Level::INFO)),
            )
            .service(client),
    );

    assert_ready_ok!(svc.poll_ready());
    let response = svc.call(Request::new(String::from("{}")));
    let (req, send) = handle.next_request().await.expect("a request");
    tracing::info!(headers = ?req.headers(), auth = ?AuthLayer::new(AuthHeader::bearer(SECRET).unwrap()), "seen by the client");
    send.send_response(Response::new(String::new()));
    response.await.unwrap();

    let text = logs.text();
    assert!(text.contains("authorization"), "{text}");
    assert!(text.contains("Sensitive"), "{text}");
    assert!(!text.contains(SECRET), "{text}");
    // The span from tower-http's Trace below the layer carries the headers.
    assert!(text.contains("request{"), "{text}");
}

#[tokio::test]
async fn the_builder_method_adds_the_same_layer() {
    use kaged_mcp_layers::ServiceBuilderExt;
    let (client, mut handle) = mock::pair::<Request<()>, Response<()>>();
    let mut svc = mock::Spawn::new(
        ServiceBuilder::new()
            .auth(AuthHeader::header("x-api-key", SECRET).unwrap())
            .service(client),
    );
    assert_ready_ok!(svc.poll_ready());
    let response = svc.call(Request::new(()));
    let (req, send) = handle.next_request().await.expect("a request");
    assert_eq!(req.headers()["x-api-key"], SECRET);
    assert!(req.headers()["x-api-key"].is_sensitive());
    send.send_response(Response::new(()));
    response.await.unwrap();
}
