//! OAuth end to end against `tests/servers/oauth_server.py` (an authorization server and the MCP
//! server it protects): a login through the library with dynamic registration, the token file
//! and its modes, refresh on expiry (one refresh for many concurrent calls), a dead refresh
//! token and no token at all in daemon mode (`Error::LoginRequired`, no browser), step-up on
//! 403 `insufficient_scope` (bounded), the client credentials grant, a token file with wrong
//! permissions, and `kaged-mcp auth login|status|logout`. Each test reads the server's
//! `/stats`.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use futures::future::join_all;
use kaged_mcp::oauth::MAX_AUTHORIZATIONS;
use kaged_mcp::Error;
use oauth::{mode, token_file, token_files, whoami, OAuthPeer};
use serde_json::Value;

use crate::common::cli::{self, OutputBounded};
use crate::common::oauth;

/// The stats counter at `path` (`"authorize"`, `"token.refresh_token"`).
fn stat(stats: &Value, path: &str) -> u64 {
    path.split('.')
        .fold(stats, |v, k| &v[k])
        .as_u64()
        .unwrap_or_else(|| panic!("no counter {path} in {stats}"))
}

#[tokio::test]
async fn a_login_registers_authorizes_and_stores_the_tokens_0600_in_a_0700_dir() {
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let session = server.session("", "", true).await;
    let me = whoami(&session).await.unwrap();
    assert_eq!(me["token_generation"], 1, "{me}");
    assert!(
        me["client_id"].as_str().unwrap().starts_with("dcr-"),
        "{me}"
    );
    // The challenge asked mcp:read; offline_access added as the server offers it.
    assert_eq!(
        me["scopes"],
        serde_json::json!(["mcp:read", "offline_access"])
    );
    assert_eq!(session.status()[0].state, "ready", "{:?}", session.status());

    let (path, tokens) = token_file(&server.tokens());
    let name = path.file_name().unwrap().to_str().unwrap();
    // `<server>-<16 hex>.json`.
    let hash = name
        .strip_prefix("remote-")
        .and_then(|n| n.strip_suffix(".json"))
        .unwrap_or_else(|| panic!("token file name {name}"));
    assert!(
        hash.len() == 16 && hash.bytes().all(|b| b.is_ascii_hexdigit()),
        "{name}"
    );
    assert_eq!(mode(&path), 0o600, "{}", path.display());
    assert_eq!(mode(&server.tokens()), 0o700);
    assert!(tokens["access_token"].is_string() && tokens["refresh_token"].is_string());
    assert_eq!(tokens["client_id"], me["client_id"]);

    let stats = server.stats();
    assert_eq!(stat(&stats, "register"), 1, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 1, "{stats}");
    assert_eq!(stat(&stats, "token.authorization_code"), 1, "{stats}");
    assert_eq!(stat(&stats, "token.refresh_token"), 0, "{stats}");
    assert_eq!(stat(&stats, "token_errors"), 0, "{stats}");
    session.shutdown().await;
}

#[tokio::test]
async fn an_expired_access_token_is_refreshed_and_the_file_rewritten() {
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let session = server.session("", "", true).await;
    assert_eq!(whoami(&session).await.unwrap()["token_generation"], 1);
    let (path, before) = token_file(&server.tokens());

    server.expire();
    let me = whoami(&session).await.unwrap();
    assert_eq!(me["token_generation"], 2, "{me}");

    let stats = server.stats();
    assert_eq!(stat(&stats, "token.refresh_token"), 1, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 1, "{stats}");
    assert_eq!(
        stat(&stats, "mcp_401"),
        2,
        "the probe-less first send and the expired one: {stats}"
    );
    let (path_after, after) = token_file(&server.tokens());
    assert_eq!(path_after, path);
    assert_eq!(mode(&path), 0o600);
    assert_ne!(after["access_token"], before["access_token"]);
    // The refresh token rotated with it.
    assert_ne!(after["refresh_token"], before["refresh_token"]);
    session.shutdown().await;
}

#[tokio::test]
async fn sixteen_calls_meeting_an_expired_token_share_one_refresh() {
    let Some(server) = OAuthPeer::start(&["--refresh-delay-ms", "500"]) else {
        return;
    };
    let session = server.session("", "", true).await;
    assert_eq!(whoami(&session).await.unwrap()["token_generation"], 1);
    server.expire();

    let results = join_all((0..16).map(|_| whoami(&session))).await;
    for r in &results {
        let me = r.as_ref().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(me["token_generation"], 2, "{me}");
    }
    let stats = server.stats();
    assert_eq!(stat(&stats, "token.refresh_token"), 1, "{stats}");
    assert_eq!(stat(&stats, "token_errors"), 0, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 1, "{stats}");
    session.shutdown().await;
}

#[tokio::test]
async fn a_dead_refresh_token_in_daemon_mode_asks_for_a_login_at_once() {
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let login = server.session("", "", true).await;
    whoami(&login).await.unwrap();
    login.shutdown().await;
    server.revoke_refresh();
    server.expire();

    // A daemon: no authorizer.
    let daemon = server.session("", "", false).await;
    let err = whoami(&daemon).await.unwrap_err();
    assert!(
        matches!(&err, Error::LoginRequired { server } if server == "remote"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("`kaged-mcp auth login remote`"),
        "{err}"
    );
    assert_eq!(daemon.status()[0].state, "failed", "{:?}", daemon.status());
    let stats = server.stats();
    // The refresh was tried once and refused; no authorization was started.
    assert_eq!(stat(&stats, "token.refresh_token"), 1, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 1, "{stats}");
    // The dead tokens were forgotten.
    assert_eq!(
        token_files(&server.tokens()),
        Vec::<std::path::PathBuf>::new()
    );
    daemon.shutdown().await;
}

#[tokio::test]
async fn no_token_in_daemon_mode_fails_without_contacting_the_server() {
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let session = server.session("", "", false).await;
    let err = whoami(&session).await.unwrap_err();
    assert!(
        matches!(&err, Error::LoginRequired { server } if server == "remote"),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("`kaged-mcp auth login remote`"),
        "{err}"
    );
    let status = session.status();
    assert_eq!(status[0].state, "failed", "{status:?}");
    let last = status[0].last_error.as_deref().unwrap_or_default();
    assert!(last.contains("kaged-mcp auth login remote"), "{last}");
    let stats = server.stats();
    assert_eq!(stat(&stats, "mcp_401"), 0, "{stats}");
    assert_eq!(stat(&stats, "mcp_ok"), 0, "{stats}");
    assert_eq!(stat(&stats, "register"), 0, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 0, "{stats}");
    assert!(token_files(&server.tokens()).is_empty());
    session.shutdown().await;
}

#[tokio::test]
async fn a_login_made_meanwhile_is_read_by_a_daemon_that_needed_one() {
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let daemon = server.session("", "", false).await;
    let err = whoami(&daemon).await.unwrap_err();
    assert!(matches!(&err, Error::LoginRequired { .. }), "{err:?}");
    // The operator logs in (another process would do the same to the same token directory).
    let login = server.session("", "", true).await;
    whoami(&login).await.unwrap();
    login.shutdown().await;
    // The daemon's server is enabled again and uses the stored login.
    daemon.enable("remote").await.unwrap();
    let me = whoami(&daemon).await.unwrap();
    assert_eq!(me["token_generation"], 1, "{me}");
    assert_eq!(stat(&server.stats(), "authorize"), 1);
    daemon.shutdown().await;
}

#[tokio::test]
async fn insufficient_scope_reauthorizes_once_with_the_union_of_scopes() {
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let session = server.session("", "", true).await;
    assert_eq!(
        whoami(&session).await.unwrap()["scopes"],
        serde_json::json!(["mcp:read", "offline_access"])
    );
    let admin = session.call("mcp.remote.admin", None).await.unwrap();
    assert!(!admin.is_error);
    assert_eq!(admin.joined_text(), "admin ok");
    let me = whoami(&session).await.unwrap();
    let mut scopes: Vec<&str> = me["scopes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap())
        .collect();
    scopes.sort_unstable();
    assert_eq!(scopes, ["mcp:admin", "mcp:read", "offline_access"], "{me}");

    let stats = server.stats();
    assert_eq!(stat(&stats, "authorize"), 2, "{stats}");
    assert_eq!(stat(&stats, "mcp_403"), 1, "{stats}");
    // The client registered at the first login is reused.
    assert_eq!(stat(&stats, "register"), 1, "{stats}");
    let (_, tokens) = token_file(&server.tokens());
    assert!(
        tokens["scopes"]
            .as_array()
            .unwrap()
            .iter()
            .any(|s| s == "mcp:admin"),
        "{tokens}"
    );
    session.shutdown().await;
}

#[tokio::test]
async fn a_server_that_always_answers_insufficient_scope_is_given_up() {
    let Some(server) = OAuthPeer::start(&["--always-403"]) else {
        return;
    };
    let session = server.session("", "", true).await;
    whoami(&session).await.unwrap();
    for _ in 0..3 {
        let outcome = tokio::time::timeout(
            std::time::Duration::from_secs(30),
            session.call("mcp.remote.admin", None),
        )
        .await
        .expect("the call ends: no authorization loop");
        let err = outcome.expect_err("the admin tool never succeeds");
        let text = err.to_string();
        assert!(text.contains("403"), "{text}");
    }
    let stats = server.stats();
    let authorize = stat(&stats, "authorize");
    assert!(
        authorize <= u64::from(MAX_AUTHORIZATIONS),
        "{authorize} authorizations: {stats}"
    );
    assert_eq!(authorize, 2, "the login, then one step-up: {stats}");
    // The session still works for what the token allows.
    assert_eq!(session.status()[0].state, "ready", "{:?}", session.status());
    whoami(&session).await.unwrap();
    session.shutdown().await;
}

#[tokio::test]
async fn client_credentials_need_no_browser() {
    let Some(server) = OAuthPeer::start(&["--client", "svc:s3cret"]) else {
        return;
    };
    let auth =
        "      client_id: svc\n      secret_ref: oauth.svc\n      grant: client_credentials\n";
    let local = "[secrets.oauth]\nsvc = \"s3cret\"\n";
    let session = server.session(auth, local, false).await;
    let me = whoami(&session).await.unwrap();
    assert_eq!(me["client_id"], "svc", "{me}");
    assert_eq!(me["token_generation"], 1, "{me}");
    let stats = server.stats();
    assert_eq!(stat(&stats, "token.client_credentials"), 1, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 0, "{stats}");
    assert_eq!(stat(&stats, "register"), 0, "{stats}");
    assert_eq!(stat(&stats, "token_errors"), 0, "{stats}");
    let (path, tokens) = token_file(&server.tokens());
    assert_eq!(mode(&path), 0o600);
    assert!(tokens["refresh_token"].is_null(), "{tokens}");
    // A pre-registered client's secret stays in local.toml, not in the token file.
    assert!(tokens["client_secret"].is_null(), "{tokens}");
    session.shutdown().await;
}

#[tokio::test]
async fn client_credentials_are_granted_again_at_every_expiry() {
    let Some(server) = OAuthPeer::start(&["--client", "svc:s3cret"]) else {
        return;
    };
    let auth =
        "      client_id: svc\n      secret_ref: oauth.svc\n      grant: client_credentials\n";
    let local = "[secrets.oauth]\nsvc = \"s3cret\"\n";
    let session = server.session(auth, local, false).await;
    whoami(&session).await.unwrap();
    // A daemon lives longer than its tokens: more expiries than a step-up chain may have.
    let expiries = MAX_AUTHORIZATIONS + 1;
    for n in 1..=expiries {
        server.expire();
        let me = whoami(&session)
            .await
            .unwrap_or_else(|e| panic!("after expiry {n}: {e}"));
        assert_eq!(me["token_generation"], u64::from(n) + 1, "{me}");
    }
    let stats = server.stats();
    assert_eq!(
        stat(&stats, "token.client_credentials"),
        u64::from(expiries) + 1,
        "{stats}"
    );
    assert_eq!(stat(&stats, "token_errors"), 0, "{stats}");
    session.shutdown().await;
}

#[tokio::test]
async fn a_token_file_readable_by_others_is_refused_and_named() {
    let Some(server) = OAuthPeer::start(&[]) else {
        return;
    };
    let login = server.session("", "", true).await;
    whoami(&login).await.unwrap();
    login.shutdown().await;
    let (path, _) = token_file(&server.tokens());
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
    let before = server.stats();

    let session = server.session("", "", false).await;
    let err = whoami(&session).await.unwrap_err();
    // The handshake failed on the token file, so the server is not ready and says why.
    assert!(
        matches!(&err, Error::ServerNotReady { server, .. } if server == "remote"),
        "{err:?}"
    );
    let text = err.to_string();
    assert!(
        text.contains(&format!("{}: mode 0644", path.display())),
        "{text}"
    );
    // One failed start, which the operator can fix (chmod): restarting, as the log says.
    let status = session.status();
    assert_eq!(status[0].state, "restarting", "{status:?}");
    assert_eq!(status[0].consecutive_failures, 1, "{status:?}");
    let last = status[0].last_error.as_deref().unwrap_or_default();
    assert!(last.contains("0644"), "{last}");
    // Refused, not used: no MCP request reached the server with it.
    let after = server.stats();
    assert_eq!(stat(&after, "mcp_ok"), stat(&before, "mcp_ok"), "{after}");
    assert_eq!(stat(&after, "mcp_401"), stat(&before, "mcp_401"), "{after}");
    // Left as it was.
    assert_eq!(mode(&path), 0o644);
    session.shutdown().await;
}

// --- the command line --------------------------------------------------------------------------

/// `kaged-mcp <args>` with `XDG_STATE_HOME` inside `state`.
pub(super) fn kaged(args: &[&str], state: &Path) -> cli::Out {
    let out = cli::kaged()
        .args(args)
        .env("XDG_STATE_HOME", state)
        .output_bounded();
    cli::Out {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

#[test]
fn the_auth_commands_log_in_show_and_forget_without_printing_a_secret() {
    const SECRET: &str = "cs-CLI-SECRET-5d0e91";
    let Some(server) = OAuthPeer::start(&["--client", &format!("svc:{SECRET}")]) else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let project = work.path().join("project");
    std::fs::create_dir(&project).unwrap();
    let state = work.path().join("state");
    let config = work.path().join("config.toml");
    std::fs::write(
        &config,
        format!(
            "[mcp]\noauth_token_dir = {:?}\n",
            server.tokens().to_str().unwrap()
        ),
    )
    .unwrap();
    std::fs::write(
        project.join("local.toml"),
        format!("[secrets.oauth]\nsvc = \"{SECRET}\"\n"),
    )
    .unwrap();
    let p = project.to_str().unwrap();
    let c = config.to_str().unwrap();
    let with = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--project", p, "--config", c]);
        kaged(&all, &state)
    };

    // An authorization-code server without a token: the call asks for a login, exit 2.
    std::fs::write(project.join("project.yaml"), server.project("")).unwrap();
    let out = with(&["call", "mcp.remote.whoami"]);
    assert_eq!(out.code, Some(2), "{out:?}");
    // The hint is a command that works when pasted: it carries the project and the
    // config.toml used (issue 49 point 9).
    assert!(
        out.stderr.contains(&format!(
            "kaged-mcp auth login --project {p} --config {c} remote"
        )),
        "{out:?}"
    );

    // A client-credentials server at the authorization server the operator names: login
    // needs no browser.
    let auth = format!(
        "      client_id: svc\n      secret_ref: oauth.svc\n      grant: client_credentials\n      issuer: {}\n",
        server.issuer()
    );
    std::fs::write(project.join("project.yaml"), server.project(&auth)).unwrap();
    let out = with(&["check", "-v"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout.contains(&format!(
            "auth: oauth, secret_ref oauth.svc (set), grant client_credentials, client_id svc, issuer {}",
            server.issuer()
        )),
        "{out:?}"
    );
    assert!(!out.stdout.contains(SECRET) && !out.stderr.contains(SECRET));

    let out = with(&["auth", "status", "--json"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    let rows: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(
        rows,
        serde_json::json!([{"server": "remote", "logged_in": false, "grant": "client_credentials"}])
    );

    let out = with(&["auth", "login", "remote"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("logged in to `remote`"), "{out:?}");
    let stats = server.stats();
    assert_eq!(stat(&stats, "token.client_credentials"), 1, "{stats}");
    assert_eq!(stat(&stats, "authorize"), 0, "{stats}");
    let (path, tokens) = token_file(&server.tokens());
    let access = tokens["access_token"].as_str().unwrap().to_owned();

    let out = with(&["auth", "status"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        out.stdout
            .contains("remote: logged in (client svc), scopes [mcp:read], expires in"),
        "{out:?}"
    );
    let json = with(&["auth", "status", "--json"]);
    let rows: Value = serde_json::from_str(&json.stdout).unwrap();
    assert_eq!(rows[0]["logged_in"], true, "{rows}");
    assert_eq!(rows[0]["scopes"], serde_json::json!(["mcp:read"]), "{rows}");
    assert!(rows[0]["expires_at"].as_u64().is_some(), "{rows}");
    assert_eq!(rows[0]["token_file"], path.to_str().unwrap(), "{rows}");
    for o in [&out, &json] {
        for secret in [access.as_str(), SECRET] {
            assert!(
                !o.stdout.contains(secret) && !o.stderr.contains(secret),
                "a secret in {o:?}"
            );
        }
    }

    // The stored token serves a call.
    let out = with(&["call", "mcp.remote.whoami"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(out.stdout.contains("\"client_id\": \"svc\""), "{out:?}");

    let out = with(&["auth", "logout", "remote"]);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(!path.exists());
    let out = with(&["auth", "status", "--json"]);
    let rows: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(rows[0]["logged_in"], false, "{rows}");
    let out = with(&["auth", "status"]);
    assert!(
        out.stdout.contains(&format!(
            "remote: not logged in (run `kaged-mcp auth login --project {p} --config {c} remote`)"
        )),
        "{out:?}"
    );
    // Nothing of the login went to the state directory: the token directory is the configured
    // one. What the state directory may hold is the era memory (issue 41): one file per server
    // under `kaged-mcp/eras`, each the word `legacy`, never a token or a secret.
    let mut stack = vec![state.clone()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            assert!(
                path.starts_with(state.join("kaged-mcp").join("eras")),
                "{}",
                path.display()
            );
            let text = std::fs::read_to_string(&path).unwrap();
            assert_eq!(text.trim(), "legacy", "{}", path.display());
        }
    }
}

/// PKCE support is known only from the authorization server's metadata: one that publishes no
/// `code_challenge_methods_supported` (or lists no S256) is refused before any registration or
/// authorization, the server is marked failed naming why.
#[tokio::test]
async fn an_authorization_server_without_pkce_s256_is_refused_before_the_login() {
    for (methods, want) in [
        ("", "publishes no code_challenge_methods_supported"),
        (
            "plain",
            "does not support PKCE with S256 (its code_challenge_methods_supported: plain)",
        ),
    ] {
        let Some(server) = OAuthPeer::start(&["--pkce-methods", methods]) else {
            return;
        };
        let session = server.session("", "", true).await;
        let st = &session.status()[0];
        assert_eq!(st.state, "restarting", "{methods:?}: {st:?}");
        assert_eq!(st.consecutive_failures, 1, "{methods:?}: {st:?}");
        let error = st.last_error.as_deref().unwrap_or_default();
        assert!(error.contains(want), "{methods:?}: {error}");
        let stats = server.stats();
        assert_eq!(stat(&stats, "authorize"), 0, "{stats}");
        assert_eq!(stat(&stats, "register"), 0, "{stats}");
        session.shutdown().await;
    }
}
