//! A refresh that fails for another reason than a dead refresh token (the token endpoint
//! answers `503 temporarily_unavailable`, or cannot be reached), met in the middle of a call.
//! (A token endpoint that never answers, and one whose answer is too long: the unit tests of
//! `src/oauth/http.rs`.)

use std::time::{Duration, Instant};

use kaged_mcp::client::ClientError;
use kaged_mcp::Error;
use serde_json::Value;

use crate::common::capture::Captured;
use crate::common::oauth::{token_file, whoami, OAuthPeer};

fn refreshes(stats: &Value) -> u64 {
    stats["token"]["refresh_token"].as_u64().unwrap()
}

/// The call whose token expired is refused (401), the refresh it starts is answered 503: the
/// call fails at once, not delivered and not retried (one refresh request), naming the token
/// endpoint and what it said; the refresh token is kept (not forgotten as a dead one: no
/// login is asked for, by an authorizer or of a daemon), the server stays ready, and once the
/// endpoint is back the next call refreshes with it and goes through.
#[tokio::test]
async fn a_refresh_answered_503_fails_the_call_and_keeps_the_refresh_token() {
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let endpoint = format!(
        "the token endpoint http://127.0.0.1:{}/as/token",
        server.peer.port()
    );
    // With an authorizer (it logs in first), then as a daemon (no authorizer) on its tokens.
    for login in [true, false] {
        let session = server.session("", "", login).await;
        let generation = whoami(&session).await.unwrap()["token_generation"].clone();
        let (_, before) = token_file(&server.tokens());
        server.expire();
        server.token_outage(true);
        let asked = refreshes(&server.stats());

        let err = whoami(&session).await.unwrap_err();
        assert!(
            !matches!(err, Error::LoginRequired { .. }),
            "{login}: {err:?}"
        );
        let text = err.to_string();
        assert!(
            text.contains("(not delivered)")
                && text.contains(&format!("OAuth refresh: {endpoint} refused"))
                && text.contains("temporarily_unavailable (the token service is down)"),
            "{login}: {text}"
        );
        let Some(failure) = ClientError::find(&err).and_then(ClientError::send_failure) else {
            panic!("{login}: {err:?}");
        };
        assert!(
            failure.not_delivered() && !failure.is_retryable(),
            "{failure:?}"
        );
        let stats = server.stats();
        assert_eq!(refreshes(&stats), asked + 1, "{login}: {stats}");
        assert_eq!(stats["authorize"], 1, "{login}: {stats}");
        let (_, during) = token_file(&server.tokens());
        assert_eq!(during["refresh_token"], before["refresh_token"], "{login}");
        let st = &session.status()[0];
        assert_eq!(
            (st.state.as_str(), st.restarts),
            ("ready", 0),
            "{login}: {st:?}"
        );

        server.token_outage(false);
        let me = whoami(&session).await.unwrap();
        assert_eq!(
            me["token_generation"],
            generation.as_u64().unwrap() + 1,
            "{login}: {me}"
        );
        session.shutdown().await;
    }
}

/// The token endpoint the stored tokens name cannot be reached (nothing listens on its port
/// any more): the call whose token expired fails at once (well within the 10 s connect
/// timeout), not delivered and not retried, naming the token endpoint and why; the refresh
/// token is kept, in the file and in the source (a second call tries it again instead of asking
/// for a login); no token appears in the error or in the logs of the test (TRACE, captured on
/// its thread, where the session's tasks run).
#[tokio::test]
async fn an_unreachable_token_endpoint_fails_the_call_at_once_and_keeps_the_refresh_token() {
    let (captured, _guard) = Captured::install_local();
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let endpoint = format!("http://127.0.0.1:{closed}/as/token");
    let mut secrets = Vec::new();
    // With an authorizer, then as a daemon.
    for login in [true, false] {
        // A login stores tokens naming the token endpoint; then the endpoint moves away.
        let _ = std::fs::remove_dir_all(server.tokens());
        let first = server.session("", "", true).await;
        whoami(&first).await.unwrap();
        first.shutdown().await;
        let (path, mut stored) = token_file(&server.tokens());
        stored["token_endpoint"] = endpoint.clone().into();
        std::fs::write(&path, stored.to_string()).unwrap();
        secrets.extend(
            ["access_token", "refresh_token"].map(|k| stored[k].as_str().unwrap().to_owned()),
        );

        let session = server.session("", "", login).await;
        whoami(&session).await.unwrap();
        server.expire();
        let asked = server.stats();
        for attempt in 0..2 {
            let started = Instant::now();
            let err = whoami(&session).await.unwrap_err();
            let took = started.elapsed();
            assert!(took < Duration::from_secs(5), "{login} {attempt}: {took:?}");
            assert!(
                !matches!(err, Error::LoginRequired { .. }),
                "{login} {attempt}: {err:?}"
            );
            let text = err.to_string();
            assert!(
                text.contains("(not delivered)")
                    && text.contains(&format!("OAuth refresh: the token endpoint {endpoint}: "))
                    && text.contains("Connection refused"),
                "{login} {attempt}: {text}"
            );
            let Some(failure) = ClientError::find(&err).and_then(ClientError::send_failure) else {
                panic!("{login} {attempt}: {err:?}");
            };
            assert!(
                failure.not_delivered() && !failure.is_retryable(),
                "{failure:?}"
            );
            let printed = format!("{err} {err:?}");
            for s in &secrets {
                assert!(
                    !printed.contains(s.as_str()),
                    "a token was printed: {printed}"
                );
            }
        }
        // Nothing reached the authorization server: no refresh, no new login.
        let stats = server.stats();
        assert_eq!(stats["token"], asked["token"], "{login}: {stats}");
        assert_eq!(stats["authorize"], asked["authorize"], "{login}: {stats}");
        let (_, during) = token_file(&server.tokens());
        assert_eq!(during["refresh_token"], stored["refresh_token"], "{login}");
        let st = &session.status()[0];
        assert_eq!(
            (st.state.as_str(), st.restarts),
            ("ready", 0),
            "{login}: {st:?}"
        );
        session.shutdown().await;
    }
    let text = captured.text();
    // The capture saw the failed refreshes.
    let failed = format!("OAuth refresh: the token endpoint {endpoint}: ");
    assert!(text.contains(&failed), "{text}");
    for s in &secrets {
        assert!(
            !text.contains(s.as_str()),
            "a token leaked into the logs:\n{text}"
        );
    }
}
