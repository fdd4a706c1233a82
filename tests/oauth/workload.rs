//! OAuth for workloads against `tests/servers/oauth_server.py`: the JWT-bearer grant of
//! workload identity (an assertion file read at each grant and rotated, a refused assertion
//! reported and never sent again, no other grant tried), enterprise-managed authorization
//! (SEP-990: an ID token exchanged at the IdP for an ID-JAG, then granted; an IdP refusal named)
//! and DPoP (proofs at the token endpoint
//! and on every MCP request, a nonce asked for by each server answered once, a nonce demanded
//! twice given up, the key kept 0600 beside the tokens and shown by `kaged-mcp auth status` as
//! its thumbprint).

use std::path::{Path, PathBuf};

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use oauth::{mode, token_file, whoami, OAuthPeer};
use serde_json::{json, Value};

use crate::common::oauth;

/// The counter at `path` of the server's stats.
fn stat(stats: &Value, path: &str) -> u64 {
    path.split('.')
        .fold(stats, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {path} in {stats}"))
}

/// An (unsigned: the test server reads, not verifies) identity token for `sub`, for the
/// authorization server `aud` (RFC 7523 section 3: an assertion names its audience).
pub(crate) fn workload_jwt_for(aud: Option<&str>, sub: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(
            json!({"iss": "https://k8s.test", "sub": sub, "exp": exp, "aud": aud}).to_string()
        ),
        URL_SAFE_NO_PAD.encode("not-checked")
    )
}

/// An identity token for `sub` whose `aud` is `server`'s authorization server.
fn workload_jwt(server: &OAuthPeer, sub: &str) -> String {
    workload_jwt_for(Some(&server.issuer()), sub)
}

/// Waits (at most 30 s) until `remote` failed a second start in a row: the supervisor's
/// restart after the first failure has run, so whatever it would have sent was sent.
async fn restarted_and_failed_again(session: &kaged_mcp::Session) {
    let wait = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        while session.status()[0].consecutive_failures < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
    });
    wait.await
        .unwrap_or_else(|_| panic!("never restarted: {:?}", session.status()[0]));
}

/// The `auth:` lines of a JWT-bearer server reading `file`, with DPoP when `dpop`.
fn auth_lines(file: &Path, dpop: bool) -> String {
    format!(
        "      grant: jwt_bearer\n      assertion_file: {}\n{}",
        file.display(),
        if dpop { "      dpop: true\n" } else { "" }
    )
}

/// The token requests of the server's log.
fn token_requests(server: &OAuthPeer) -> Vec<Value> {
    server
        .log()
        .into_iter()
        .filter(|e| e["path"] == "/as/token")
        .collect()
}

/// Where the workload's token file is mounted, in the server's directory.
fn assertion_path(server: &OAuthPeer) -> PathBuf {
    server.dir.path().join("workload-token")
}

#[tokio::test]
async fn the_assertion_file_is_read_at_each_grant_and_its_rotation_followed() {
    let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "w1", "--workload", "w2"])
    else {
        return;
    };
    let file = assertion_path(&server);
    std::fs::write(&file, workload_jwt(&server, "w1")).unwrap();
    let session = server.session(&auth_lines(&file, false), "", false).await;
    let me = whoami(&session).await.unwrap();
    assert_eq!(me["client_id"], "workload:w1", "{me}");

    // The platform rotates the file; the token expires; the next grant sends the new one.
    std::fs::write(&file, format!("{}\n", workload_jwt(&server, "w2"))).unwrap();
    server.expire();
    let me = whoami(&session).await.unwrap();
    assert_eq!(me["client_id"], "workload:w2", "{me}");

    let stats = server.stats();
    assert_eq!(stat(&stats, "token.jwt_bearer"), 2, "{stats}");
    assert_eq!(stat(&stats, "token_errors"), 0, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 0, "{stats}");
    let subs: Vec<Value> = token_requests(&server)
        .iter()
        .map(|e| e["sub"].clone())
        .collect();
    assert_eq!(subs, [json!("w1"), json!("w2")]);
    let (path, tokens) = token_file(&server.tokens());
    assert_eq!(mode(&path), 0o600);
    assert!(tokens["refresh_token"].is_null(), "{tokens}");
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(
        !text.contains(&workload_jwt(&server, "w2")[..40]),
        "no assertion in the token file"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn a_refused_assertion_is_reported_never_sent_again_and_no_other_grant_tried() {
    for error in ["invalid_grant", "invalid_scope", "unauthorized_client"] {
        let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "ok"]) else {
            return;
        };
        let file = assertion_path(&server);
        let refused = workload_jwt(&server, &format!("refuse:{error}"));
        std::fs::write(&file, &refused).unwrap();
        let session = server.session(&auth_lines(&file, false), "", false).await;
        let err = whoami(&session).await.unwrap_err().to_string();
        for part in ["`remote`", "/as/token", error] {
            assert!(err.contains(part), "{error}: {part} not in {err}");
        }
        assert!(!err.contains(&refused[..30]), "the assertion in {err}");
        // The supervisor restarts the server meanwhile: the same file is not sent again.
        restarted_and_failed_again(&session).await;
        let stats = server.stats();
        assert_eq!(stat(&stats, "token.jwt_bearer"), 1, "{error}: {stats}");
        for other in ["authorization_code", "client_credentials", "refresh_token"] {
            assert_eq!(stat(&stats, &format!("token.{other}")), 0, "{stats}");
        }
        assert_eq!(
            stat(&stats, "authorize") + stat(&stats, "register"),
            0,
            "{stats}"
        );

        // A rotated file is tried.
        std::fs::write(&file, workload_jwt(&server, "ok")).unwrap();
        let _ = session.enable("remote").await;
        let mut me = whoami(&session).await;
        for _ in 0..100 {
            if me.is_ok() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
            me = whoami(&session).await;
        }
        let me = me.unwrap();
        assert_eq!(me["client_id"], "workload:ok", "{me}");
        assert_eq!(stat(&server.stats(), "token.jwt_bearer"), 2);
        session.shutdown().await;
    }
}

#[tokio::test]
async fn dpop_proves_every_request_and_answers_each_servers_nonce_once() {
    let Some(server) =
        OAuthPeer::start(&["--jwt-bearer", "--workload", "w1", "--dpop", "--dpop-nonce"])
    else {
        return;
    };
    let file = assertion_path(&server);
    std::fs::write(&file, workload_jwt(&server, "w1")).unwrap();
    let session = server.session(&auth_lines(&file, true), "", false).await;
    let me = whoami(&session).await.unwrap();
    assert_eq!(me["client_id"], "workload:w1", "{me}");
    let stats = server.stats();
    assert_eq!(stat(&stats, "dpop_bad"), 0, "{stats}");
    assert_eq!(stat(&stats, "dpop_nonce_as"), 1, "{stats}");
    assert_eq!(stat(&stats, "dpop_nonce_rs"), 1, "{stats}");
    assert_eq!(
        stat(&stats, "token.jwt_bearer"),
        2,
        "the nonce retry: {stats}"
    );

    // Each MCP request that got through carried a proof of the same key, with ath.
    let log = server.log();
    let proven: Vec<&Value> = log
        .iter()
        .filter(|e| e["path"] == "/mcp" && e["verb"] == "POST" && e["status"] != 401)
        .collect();
    assert!(proven.len() >= 3, "{log:?}");
    let jkt = &proven[0]["dpop"]["jkt"];
    for e in &proven {
        assert_eq!(&e["dpop"]["jkt"], jkt, "{e}");
        assert_eq!(e["dpop"]["ath"], true, "{e}");
        assert!(e["dpop"]["nonce"].is_string(), "{e}");
    }
    let tokens_sent: Vec<&Value> = log.iter().filter(|e| e["path"] == "/as/token").collect();
    assert!(tokens_sent[0]["dpop"]["nonce"].is_null(), "{tokens_sent:?}");
    assert!(
        tokens_sent[1]["dpop"]["nonce"].is_string(),
        "{tokens_sent:?}"
    );

    // The key sits beside the token file, 0600; the token is DPoP-bound.
    let (path, tokens) = token_file(&server.tokens());
    assert_eq!(tokens["token_type"], "dpop", "{tokens}");
    let key = path.with_extension("dpop-key");
    assert_eq!(mode(&key), 0o600, "{}", key.display());
    assert!(std::fs::read_to_string(&key)
        .unwrap()
        .starts_with("-----BEGIN PRIVATE KEY-----"));

    // A server that asks for a new nonce again after the retry gets its refusal back.
    let before = server.log().len();
    let err = session
        .call("mcp.remote.nonce_again", None)
        .await
        .unwrap_err()
        .to_string();
    assert!(err.contains("401"), "{err}");
    let tries = server.log()[before..]
        .iter()
        .filter(|e| e["tool"] == "nonce_again")
        .count();
    assert_eq!(tries, 2, "one send and exactly one retry with the nonce");
    session.shutdown().await;
}

#[test]
fn auth_status_shows_the_grant_and_the_dpop_keys_thumbprint_never_the_key() {
    let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "w1", "--dpop"]) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let state = work.path().join("state");
    let config = work.path().join("config.toml");
    let tokens = server.tokens();
    std::fs::write(
        &config,
        format!("[mcp]\noauth_token_dir = {:?}\n", tokens.to_str().unwrap()),
    )
    .unwrap();
    let file = assertion_path(&server);
    std::fs::write(&file, workload_jwt(&server, "w1")).unwrap();
    std::fs::write(
        project.join("project.yaml"),
        server.project(&auth_lines(&file, true)),
    )
    .unwrap();
    let (p, c) = (project.to_str().unwrap(), config.to_str().unwrap());
    let with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--project", p, "--config", c]);
        super::e2e::kaged(&all, &state)
    };
    let out = with(&["check", "-v"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let want = format!(
        "grant jwt_bearer, no client id, assertion_file {} (present), DPoP",
        file.display()
    );
    assert!(out.stdout.contains(&want), "{want} not in {out:?}");
    let out = with(&["auth", "login", "remote"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let out = with(&["auth", "status", "--json"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let rows: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows[0]["grant"], "jwt_bearer", "{rows}");
    assert_eq!(rows[0]["dpop_bound"], true, "{rows}");
    let jkt = rows[0]["dpop_jkt"].as_str().unwrap().to_owned();
    assert_eq!(jkt.len(), 43, "{rows}");
    let text = with(&["auth", "status"]);
    assert!(
        text.stdout
            .contains(&format!("grant jwt_bearer, DPoP key {jkt}")),
        "{text:?}"
    );
    let (path, _) = token_file(&tokens);
    let key = std::fs::read_to_string(path.with_extension("dpop-key")).unwrap();
    let body: String = key.lines().filter(|l| !l.starts_with("-----")).collect();
    for o in [&out, &text] {
        assert!(!o.stdout.contains(&body[..24]) && !o.stderr.contains(&body[..24]));
    }
    // A call from another process uses the stored token and key.
    let out = with(&["call", "mcp.remote.whoami"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(stat(&server.stats(), "dpop_bad"), 0);
    let out = with(&["auth", "logout", "remote"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!path.with_extension("dpop-key").exists());
}

/// The `auth:` lines of an enterprise-managed server (SEP-990) whose ID token is in `file`.
fn enterprise_lines(server: &OAuthPeer, file: &Path) -> String {
    format!(
        "      grant: jwt_bearer\n      identity_provider:\n        token_endpoint: {}/idp/token\n        id_token_file: {}\n        client_id: kaged-at-idp\n",
        server.peer.mcp_url().trim_end_matches("/mcp"),
        file.display()
    )
}

#[tokio::test]
async fn an_enterprise_id_token_is_exchanged_for_an_id_jag_then_granted() {
    let Some(server) = OAuthPeer::start(&["--idp", "--workload", "alice"]) else {
        return;
    };
    let file = server.dir.path().join("id-token");
    std::fs::write(&file, workload_jwt(&server, "alice")).unwrap();
    let session = server
        .session(&enterprise_lines(&server, &file), "", false)
        .await;
    let me = whoami(&session).await.unwrap();
    assert_eq!(me["client_id"], "workload:alice", "{me}");
    let stats = server.stats();
    assert_eq!(stat(&stats, "idp_exchange"), 1, "{stats}");
    assert_eq!(stat(&stats, "token.jwt_bearer"), 1, "{stats}");
    assert_eq!(stat(&stats, "token_errors"), 0, "{stats}");
    session.shutdown().await;
}

#[tokio::test]
async fn an_id_token_the_idp_refuses_is_reported_naming_the_idp_and_not_sent_again() {
    let Some(server) = OAuthPeer::start(&["--idp", "--workload", "alice"]) else {
        return;
    };
    let file = server.dir.path().join("id-token");
    std::fs::write(&file, workload_jwt(&server, "refuse:invalid_grant")).unwrap();
    let session = server
        .session(&enterprise_lines(&server, &file), "", false)
        .await;
    let err = whoami(&session).await.unwrap_err().to_string();
    for part in ["`remote`", "/idp/token", "invalid_grant", "token exchange"] {
        assert!(err.contains(part), "{part} not in {err}");
    }
    restarted_and_failed_again(&session).await;
    let stats = server.stats();
    assert_eq!(stat(&stats, "idp_exchange"), 1, "{stats}");
    assert_eq!(stat(&stats, "token.jwt_bearer"), 0, "{stats}");
    session.shutdown().await;
}

/// A DPoP key file that is not a usable key (here: a PEM whose body is no PKCS#8 key) is never
/// replaced behind the operator's back (tokens are bound to it): the server fails naming the
/// file and what to do, without any of the file's bytes; no proof of another key reaches
/// either server. Removed, a new key is made and the next start works.
#[tokio::test]
async fn an_unusable_dpop_key_file_fails_naming_the_file_and_is_not_replaced() {
    let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "w1", "--dpop"]) else {
        return;
    };
    let file = assertion_path(&server);
    std::fs::write(&file, workload_jwt(&server, "w1")).unwrap();
    let session = server.session(&auth_lines(&file, true), "", false).await;
    whoami(&session).await.unwrap();
    session.shutdown().await;
    let (path, _) = token_file(&server.tokens());
    let key = path.with_extension("dpop-key");
    let garbage =
        "-----BEGIN PRIVATE KEY-----\nR0FSQkFHRS1LRVktQllURVM=\n-----END PRIVATE KEY-----\n";
    std::fs::write(&key, garbage).unwrap();
    server.expire();
    let before = server.log().len();

    let session = server.session(&auth_lines(&file, true), "", false).await;
    let err = whoami(&session).await.unwrap_err().to_string();
    assert!(
        err.contains(&format!("the DPoP key file {} is unusable", key.display()))
            && err.contains("remove it to make a new key")
            && err.contains("`remote`"),
        "{err}"
    );
    assert!(!err.contains("R0FSQkFHRS1LRVktQllURVM"), "{err}");
    assert_eq!(
        std::fs::read_to_string(&key).unwrap(),
        garbage,
        "kept as it was"
    );
    let proofs: Vec<Value> = server.log()[before..]
        .iter()
        .filter(|e| !e["dpop"].is_null())
        .cloned()
        .collect();
    assert!(proofs.is_empty(), "{proofs:?}");
    session.shutdown().await;

    std::fs::remove_file(&key).unwrap();
    let session = server.session(&auth_lines(&file, true), "", false).await;
    assert_eq!(whoami(&session).await.unwrap()["client_id"], "workload:w1");
    assert!(std::fs::read_to_string(&key)
        .unwrap()
        .starts_with("-----BEGIN PRIVATE KEY-----"));
    assert_ne!(std::fs::read_to_string(&key).unwrap(), garbage);
    session.shutdown().await;
}

/// An identity provider that cannot be reached (nothing listens at its token endpoint): the
/// start fails naming the server, the IdP's endpoint and that it could not be reached, never
/// the ID token; no grant is tried at the authorization server without an ID-JAG.
#[tokio::test]
async fn an_unreachable_identity_provider_is_named_and_no_grant_is_tried() {
    let Some(server) = OAuthPeer::start(&["--idp", "--workload", "alice"]) else {
        return;
    };
    let file = server.dir.path().join("id-token");
    let id_token = workload_jwt(&server, "alice");
    std::fs::write(&file, &id_token).unwrap();
    let idp = format!(
        "http://127.0.0.1:{}/idp/token",
        crate::common::peers::free_port()
    );
    let lines = format!(
        "      grant: jwt_bearer\n      identity_provider:\n        token_endpoint: {idp}\n        id_token_file: {}\n        client_id: kaged-at-idp\n",
        file.display()
    );
    let session = server.session(&lines, "", false).await;
    let err = whoami(&session).await.unwrap_err().to_string();
    assert!(
        err.contains("server `remote`")
            && err.contains(&format!("the token exchange at the IdP {idp}: POST {idp}"))
            && err.contains("Connection refused"),
        "{err}"
    );
    assert!(!err.contains(&id_token[..30]), "the ID token in {err}");
    let stats = server.stats();
    assert_eq!(stat(&stats, "idp_exchange"), 0, "{stats}");
    assert_eq!(stat(&stats, "token.jwt_bearer"), 0, "{stats}");
    assert_ne!(session.status()[0].state, "ready");
    session.shutdown().await;
}

/// A DPoP-bound token kept from a run with `dpop: true` is never sent as a Bearer token when
/// the server's `dpop` is turned off (a downgrade that would hand a proof-less bound token to
/// whatever answers, and that the resource server must refuse anyway): the next start asks
/// for a new token instead, and says why the authorization server refused it.
#[tokio::test]
async fn a_dpop_bound_token_is_never_sent_as_bearer() {
    let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "w1", "--dpop"]) else {
        return;
    };
    let file = assertion_path(&server);
    std::fs::write(&file, workload_jwt(&server, "w1")).unwrap();
    let session = server.session(&auth_lines(&file, true), "", false).await;
    whoami(&session).await.unwrap();
    session.shutdown().await;
    let (_, tokens) = token_file(&server.tokens());
    assert_eq!(tokens["token_type"], "dpop", "{tokens}");
    let before = server.log().len();

    let session = server.session(&auth_lines(&file, false), "", false).await;
    let err = whoami(&session).await.unwrap_err().to_string();
    assert!(
        err.contains("server `remote`") && err.contains("invalid_dpop_proof"),
        "{err}"
    );
    let later = server.log()[before..].to_vec();
    assert!(
        later.iter().all(|e| e["auth_scheme"] != "Bearer"),
        "a bound token sent as Bearer: {later:#?}"
    );
    session.shutdown().await;
}
