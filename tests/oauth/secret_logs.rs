//! No OAuth secret in logs: a TRACE-level subscriber captures everything while a confidential
//! client logs in (code flow, client_secret_basic), calls, meets an expired token and refreshes,
//! while a client-credentials client gets its token, and while a wrong client secret and a
//! daemon without a token fail, and while a workload gets DPoP-bound tokens with the JWT-bearer
//! grant (its assertion and its DPoP key are secrets too). The access and refresh tokens (read from the token files) and
//! the client secrets must appear neither in the captured text, nor in the `Debug` of the
//! sessions and their status, nor in any error's `Display` or `Debug`.

use capture::Captured;
use kaged_mcp::config::Sources;
use oauth::{token_files, whoami, OAuthPeer};
use serde_json::Value;

use crate::common::capture;
use crate::common::oauth;

const APP_SECRET: &str = "cs-APPSECRET-41c9be";
const SVC_SECRET: &str = "cs-SVCSECRET-0a77d3";
const WRONG_SECRET: &str = "cs-WRONGSECRET-e2f518";

/// Every token of every token file in `dir`.
fn tokens_in(dir: &std::path::Path) -> Vec<String> {
    token_files(dir)
        .iter()
        .flat_map(|p| {
            let v: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
            ["access_token", "refresh_token", "client_secret"]
                .into_iter()
                .filter_map(move |k| v[k].as_str().map(str::to_owned))
        })
        .collect()
}

/// A workload identity token (unsigned: the test server reads, not verifies, it).
fn workload_assertion() -> String {
    use base64::engine::general_purpose::URL_SAFE_NO_PAD;
    use base64::Engine as _;
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256"}"#),
        URL_SAFE_NO_PAD.encode(r#"{"sub":"w1","iss":"https://k8s.test","nonce":"ASSERTION-7c1e"}"#),
        URL_SAFE_NO_PAD.encode("signature-of-the-workload-token")
    )
}

#[tokio::test]
async fn no_token_or_client_secret_appears_in_trace_level_logs() {
    let captured = Captured::install_trace();
    let app = format!("app:{APP_SECRET}:client_secret_basic");
    let svc = format!("svc:{SVC_SECRET}");
    let Some(server) = OAuthPeer::start(&[
        "--client",
        &app,
        "--client",
        &svc,
        "--client",
        "bad:cs-BADRIGHT-77aa10",
    ]) else {
        return;
    };
    let mut secrets: Vec<String> = vec![APP_SECRET.into(), SVC_SECRET.into(), WRONG_SECRET.into()];
    let mut printed: Vec<String> = Vec::new();

    // A confidential client: code flow, a call, an expired token refreshed, a call.
    let auth = "      client_id: app\n      secret_ref: oauth.app\n";
    let local = format!("[secrets.oauth]\napp = \"{APP_SECRET}\"\n");
    let config = Sources::new(server.project(auth))
        .local(local.clone())
        .load()
        .unwrap();
    tracing::info!(config = ?config, "config");
    printed.push(format!("{config:?}"));
    let session = server.session(auth, &local, true).await;
    assert_eq!(whoami(&session).await.unwrap()["client_id"], "app");
    secrets.extend(tokens_in(&server.tokens()));
    server.expire();
    assert_eq!(whoami(&session).await.unwrap()["token_generation"], 2);
    let stats = server.stats();
    assert_eq!(stats["token"]["refresh_token"], 1, "{stats}");
    assert_eq!(stats["token_errors"], 0, "{stats}");
    tracing::info!(session = ?session, status = ?session.status(), "after refresh");
    printed.push(format!("{session:?} {:?}", session.status()));
    session.shutdown().await;

    // Client credentials.
    let auth =
        "      client_id: svc\n      secret_ref: oauth.svc\n      grant: client_credentials\n";
    let local = format!("[secrets.oauth]\nsvc = \"{SVC_SECRET}\"\n");
    let session = server.session(auth, &local, false).await;
    assert_eq!(whoami(&session).await.unwrap()["client_id"], "svc");
    printed.push(format!("{session:?} {:?}", session.status()));
    session.shutdown().await;

    // A wrong client secret: the token endpoint refuses the client.
    let auth =
        "      client_id: bad\n      secret_ref: oauth.bad\n      grant: client_credentials\n";
    let local = format!("[secrets.oauth]\nbad = \"{WRONG_SECRET}\"\n");
    let session = server.session(auth, &local, false).await;
    let err = whoami(&session).await.unwrap_err();
    assert!(err.to_string().contains("invalid_client"), "{err}");
    tracing::warn!(error = %err, debug = ?err, status = ?session.status(), "refused as expected");
    printed.push(format!("{err} {err:?} {:?}", session.status()));
    session.shutdown().await;

    // A daemon with no token for a code-flow client.
    let other = OAuthPeer::start(&[]).unwrap();
    let session = other.session("", "", false).await;
    let err = whoami(&session).await.unwrap_err();
    printed.push(format!("{err} {err:?} {:?}", session.status()));
    session.shutdown().await;

    // A workload: the JWT-bearer grant from an assertion file, with DPoP and nonces.
    let workload =
        OAuthPeer::start(&["--jwt-bearer", "--workload", "w1", "--dpop", "--dpop-nonce"]).unwrap();
    let file = workload.dir.path().join("workload-token");
    let assertion = workload_assertion();
    std::fs::write(&file, &assertion).unwrap();
    // The assertion has no `aud`: the operator names its authorization server.
    let auth = format!(
        "      grant: jwt_bearer\n      assertion_file: {}\n      dpop: true\n      issuer: {}\n",
        file.display(),
        workload.issuer()
    );
    let session = workload.session(&auth, "", false).await;
    assert_eq!(whoami(&session).await.unwrap()["client_id"], "workload:w1");
    printed.push(format!("{session:?} {:?}", session.status()));
    session.shutdown().await;
    secrets.push(assertion);
    secrets.extend(tokens_in(&workload.tokens()));
    let key = token_files(&workload.tokens())[0].with_extension("dpop-key");
    let key = std::fs::read_to_string(key).unwrap();
    // The key's body, in pieces as long as a PEM line's third.
    secrets.extend(
        key.lines()
            .filter(|l| !l.starts_with("-----") && l.len() >= 20)
            .map(|l| l[..20].to_owned()),
    );

    // Every token issued, the old ones included.
    secrets.extend(tokens_in(&server.tokens()));
    secrets.sort();
    secrets.dedup();
    assert!(secrets.len() >= 8, "{} secrets collected", secrets.len());

    let text = captured.text();
    // The capture works: the OAuth requests and the stack's events are in it.
    assert!(text.contains("TRACE") || text.contains("DEBUG"), "{text}");
    assert!(text.contains("401"), "{text}");
    assert!(text.contains("path=/as/token"), "{text}");
    for secret in &secrets {
        assert!(
            !text.contains(secret.as_str()),
            "a secret leaked into the logs:\n{text}"
        );
        for p in &printed {
            assert!(!p.contains(secret.as_str()), "a secret was printed: {p}");
        }
    }
}
