//! A refresh that fails for another reason than a dead refresh token (the token endpoint
//! answers `503 temporarily_unavailable`), met in the middle of a call.

use kaged_mcp::client::ClientError;
use kaged_mcp::Error;
use serde_json::Value;

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
