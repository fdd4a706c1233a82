//! A protected server that tries to send its clients' secrets where they do not belong
//! (issue 48, point 5), against `tests/servers/oauth_server.py` told to misdirect: resource
//! metadata naming a plain-http authorization server, authorization server metadata with
//! plain-http endpoints, a workload's assertion or an ID-JAG steered to an authorization server
//! the operator never named, and a 2025-03-26 server claiming another issuer. Each is refused
//! before the request is made: the error names the server, the document, the key and the URL,
//! and the test server's `/stats` and request log show that nothing reached it.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use kaged_mcp::Session;
use oauth::{whoami, OAuthPeer};
use serde_json::{json, Value};

use crate::common::oauth;

/// The counter at `path` of the server's stats.
fn stat(stats: &Value, path: &str) -> u64 {
    path.split('.')
        .fold(stats, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {path} in {stats}"))
}

/// Why a call to `whoami` failed, with the server's last error (the message a session shows).
async fn failure(session: &Session) -> String {
    let err = match whoami(session).await {
        Ok(me) => panic!("the call succeeded: {me}"),
        Err(e) => e.to_string(),
    };
    let status = session.status();
    format!(
        "{err} | {}",
        status[0].last_error.as_deref().unwrap_or_default()
    )
}

/// Asserts that `text` holds each of `parts`.
fn assert_names(text: &str, parts: &[&str]) {
    for part in parts {
        assert!(text.contains(part), "{part} not in {text}");
    }
}

/// An (unsigned: the test server reads, not verifies) identity token for `sub`, with the `aud`
/// claim `aud` when given.
fn identity_token(aud: Option<&str>, sub: &str) -> String {
    let exp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 600;
    let mut claims = json!({"iss": "https://k8s.test", "sub": sub, "exp": exp});
    if let Some(aud) = aud {
        claims["aud"] = json!(aud);
    }
    format!(
        "{}.{}.{}",
        URL_SAFE_NO_PAD.encode(r#"{"alg":"RS256","typ":"JWT"}"#),
        URL_SAFE_NO_PAD.encode(claims.to_string()),
        URL_SAFE_NO_PAD.encode("not-checked")
    )
}

/// The requests of the server's log to `path`.
fn requests_to(server: &OAuthPeer, path: &str) -> Vec<Value> {
    server
        .log()
        .into_iter()
        .filter(|e| e["path"] == path)
        .collect()
}

/// The client credentials of the pre-registered client `svc` (`--client svc:s3cret`).
const CLIENT: &str =
    "      client_id: svc\n      secret_ref: oauth.svc\n      grant: client_credentials\n";
const CLIENT_SECRET: &str = "[secrets.oauth]\nsvc = \"s3cret\"\n";

/// What says that an endpoint was refused for its scheme or host.
const INSECURE: &str = "neither https nor http to a loopback address";

#[tokio::test]
async fn discovered_endpoints_neither_https_nor_loopback_are_refused_before_a_request() {
    // (the server's misdirection, the key the error names, the URL it names)
    let cases: [(&[&str], &str, &str); 6] = [
        (
            &["--authorization-server", "http://10.255.255.1/as"],
            "protected resource metadata at http://127.0.0.1:",
            "http://10.255.255.1/as",
        ),
        (
            &[
                "--metadata",
                "token_endpoint=http://example.invalid/as/token",
            ],
            "`token_endpoint`",
            "http://example.invalid/as/token",
        ),
        (
            &[
                "--metadata",
                "token_endpoint=http://127.0.0.1.evil.example/as/token",
            ],
            "`token_endpoint`",
            "http://127.0.0.1.evil.example/as/token",
        ),
        (
            &[
                "--metadata",
                "token_endpoint=http://localhost.evil/as/token",
            ],
            "`token_endpoint`",
            "http://localhost.evil/as/token",
        ),
        (
            &[
                "--metadata",
                "registration_endpoint=http://10.0.0.1/register",
            ],
            "`registration_endpoint`",
            "http://10.0.0.1/register",
        ),
        (
            &[
                "--metadata",
                "authorization_endpoint=http://example.invalid/authorize",
            ],
            "`authorization_endpoint`",
            "http://example.invalid/authorize",
        ),
    ];
    for (args, key, url) in cases {
        let mut all = vec!["--client", "svc:s3cret"];
        all.extend_from_slice(args);
        let Some(server) = OAuthPeer::start(&all) else {
            return;
        };
        let session = server.session(CLIENT, CLIENT_SECRET, false).await;
        let err = failure(&session).await;
        assert_names(&err, &["server `remote`", key, url, INSECURE]);
        if args[0] == "--authorization-server" {
            assert_names(&err, &["`authorization_servers`"]);
        }
        assert!(!err.contains("s3cret"), "{err}");
        let stats = server.stats();
        assert_eq!(
            stat(&stats, "token.client_credentials"),
            0,
            "{args:?}: {stats}"
        );
        if args[0] == "--authorization-server" {
            assert_eq!(stat(&stats, "asm"), 0, "{args:?}: {stats}");
        }
        session.shutdown().await;
    }
}

#[tokio::test]
async fn a_login_is_refused_when_the_metadata_sends_it_to_plain_http() {
    let Some(server) = OAuthPeer::start(&[
        "--metadata",
        "authorization_endpoint=http://example.invalid/as/authorize",
    ]) else {
        return;
    };
    let session = server.session("", "", true).await;
    let err = failure(&session).await;
    assert_names(
        &err,
        &[
            "server `remote`",
            "`authorization_endpoint`",
            "http://example.invalid/as/authorize",
            INSECURE,
        ],
    );
    let stats = server.stats();
    assert_eq!(stat(&stats, "register"), 0, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 0, "{stats}");
    session.shutdown().await;
}

/// The `auth:` lines of a JWT-bearer server reading `file`, with `auth.issuer` when given.
fn workload_lines(file: &std::path::Path, issuer: Option<&str>) -> String {
    format!(
        "      grant: jwt_bearer\n      assertion_file: {}\n{}",
        file.display(),
        issuer
            .map(|i| format!("      issuer: {i}\n"))
            .unwrap_or_default()
    )
}

#[tokio::test]
async fn a_workload_assertion_goes_only_to_the_authorization_server_its_aud_names() {
    // The server names its own authorization server, which would grant anything sent to it.
    for aud in [Some("https://sts.operator.test"), None] {
        let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "w1"]) else {
            return;
        };
        let file = server.dir.path().join("workload-token");
        std::fs::write(&file, identity_token(aud, "w1")).unwrap();
        let session = server
            .session(&workload_lines(&file, None), "", false)
            .await;
        let err = failure(&session).await;
        let whom = match aud {
            Some(a) => format!("is for `{a}` (its `aud`), not for"),
            None => "has no `aud` naming".to_owned(),
        };
        assert_names(
            &err,
            &[
                "server `remote`",
                &file.display().to_string(),
                &format!("{whom} the authorization server `{}`", server.issuer()),
                "it is not sent there",
                "auth.issuer",
            ],
        );
        let stats = server.stats();
        assert_eq!(stat(&stats, "token.jwt_bearer"), 0, "{aud:?}: {stats}");
        assert!(requests_to(&server, "/as/token").is_empty(), "{aud:?}");
        session.shutdown().await;
    }
}

#[tokio::test]
async fn with_auth_issuer_no_other_authorization_server_is_asked_anything() {
    let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "w1"]) else {
        return;
    };
    let file = server.dir.path().join("workload-token");
    // Even an assertion for the server's own authorization server is not sent there.
    std::fs::write(&file, identity_token(Some(&server.issuer()), "w1")).unwrap();
    let operator = "https://as.operator.test";
    let session = server
        .session(&workload_lines(&file, Some(operator)), "", false)
        .await;
    let err = failure(&session).await;
    assert_names(
        &err,
        &[
            "server `remote`",
            "protected resource metadata",
            &server.issuer(),
            &format!("not `{operator}/` that `auth.issuer` names"),
        ],
    );
    let stats = server.stats();
    assert_eq!(stat(&stats, "asm"), 0, "not even its metadata: {stats}");
    assert_eq!(stat(&stats, "token.jwt_bearer"), 0, "{stats}");
    session.shutdown().await;

    // The one named gets it, whatever the assertion's `aud` says.
    let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "w1"]) else {
        return;
    };
    let file = server.dir.path().join("workload-token");
    std::fs::write(&file, identity_token(None, "w1")).unwrap();
    let session = server
        .session(&workload_lines(&file, Some(&server.issuer())), "", false)
        .await;
    let me = whoami(&session).await.unwrap();
    assert_eq!(me["client_id"], "workload:w1", "{me}");
    assert_eq!(stat(&server.stats(), "token.jwt_bearer"), 1);
    session.shutdown().await;
}

#[tokio::test]
async fn a_2025_03_26_server_claiming_another_issuer_gets_no_assertion() {
    let operator = "https://as.operator.test";
    for pinned in [None, Some(operator)] {
        let issuer = format!("issuer={operator}");
        let Some(server) = OAuthPeer::start(&[
            "--legacy",
            "--metadata",
            &issuer,
            "--jwt-bearer",
            "--workload",
            "w1",
        ]) else {
            return;
        };
        let file = server.dir.path().join("workload-token");
        std::fs::write(&file, identity_token(Some(operator), "w1")).unwrap();
        let session = server
            .session(&workload_lines(&file, pinned), "", false)
            .await;
        let err = failure(&session).await;
        assert_names(
            &err,
            &[
                "server `remote`",
                &format!("issuer `{operator}`"),
                "is not the origin it",
            ],
        );
        let stats = server.stats();
        assert_eq!(stat(&stats, "token.jwt_bearer"), 0, "{pinned:?}: {stats}");
        session.shutdown().await;
    }
}

#[tokio::test]
async fn an_id_jag_for_another_authorization_server_is_not_sent_to_the_discovered_one() {
    // The operator's IdP issues ID-JAGs for its own authorization server only, whatever the
    // audience asked; the MCP server names an authorization server of its own.
    let Some(idp) = OAuthPeer::start(&["--idp", "--idp-any-audience", "--workload", "alice"])
    else {
        return;
    };
    let Some(server) = OAuthPeer::start(&["--jwt-bearer", "--workload", "alice"]) else {
        return;
    };
    let file = server.dir.path().join("id-token");
    std::fs::write(&file, identity_token(None, "alice")).unwrap();
    let idp_endpoint = idp.issuer().replace("/as", "/idp/token");
    let lines = format!(
        "      grant: jwt_bearer\n      identity_provider:\n        token_endpoint: {idp_endpoint}\n        id_token_file: {}\n        client_id: kaged-at-idp\n",
        file.display()
    );
    let session = server.session(&lines, "", false).await;
    let err = failure(&session).await;
    assert_names(
        &err,
        &[
            "server `remote`",
            "the ID-JAG the IdP",
            &format!("is for `{}` (its `aud`)", idp.issuer()),
            &format!("not for the authorization server `{}`", server.issuer()),
        ],
    );
    assert!(stat(&idp.stats(), "idp_exchange") >= 1);
    assert_eq!(stat(&server.stats(), "token.jwt_bearer"), 0);
    assert!(requests_to(&server, "/as/token").is_empty());
    session.shutdown().await;

    // With `auth.issuer` naming another one, the IdP is not even asked.
    let Some(idp) = OAuthPeer::start(&["--idp", "--idp-any-audience", "--workload", "alice"])
    else {
        return;
    };
    let lines = format!(
        "      grant: jwt_bearer\n      issuer: {}\n      identity_provider:\n        token_endpoint: {}\n        id_token_file: {}\n        client_id: kaged-at-idp\n",
        idp.issuer(),
        idp.issuer().replace("/as", "/idp/token"),
        file.display()
    );
    let session = server.session(&lines, "", false).await;
    let err = failure(&session).await;
    assert_names(&err, &["server `remote`", "that `auth.issuer` names"]);
    assert_eq!(stat(&idp.stats(), "idp_exchange"), 0);
    assert_eq!(stat(&server.stats(), "token.jwt_bearer"), 0);
    session.shutdown().await;
}
