//! What a session start says when the server refuses it (issue 22): the URL, the status and the
//! server's own words, "auth" only when the server spoke of credentials, one bounded line
//! without control characters, the endpoint's path questioned by a 404 to the handshake, and a
//! connection failure as a short line over the error chain kept as its detail. Against
//! `tests/servers/http_fault_server.py` (`host_check`, `auth`, `forbidden_noisy`, `ok` at the
//! wrong path) and a closed port.

use kaged_mcp::client::{ClientOptions, McpClient};
use kaged_mcp::config::Sources;
use kaged_mcp::transport::streamable_http::{StreamableHttpConfig, StreamableHttpTransport};
use kaged_mcp::Session;
use peers::SsePeer;

use crate::common::peers;

const SECRET: &str = "tok-8f3a-very-secret";
const AUTH: &str = "    auth: { type: bearer, secret_ref: api_keys.remote }\n";

fn start(mode: &str) -> SsePeer {
    SsePeer::start_reporting_port(&peers::http_fault_server(mode, &["--secret", SECRET]))
        .unwrap_or_else(|e| panic!("{mode}: {e}"))
}

/// The last error of server `remote` at `url`, with `auth` text and `secret` in local.toml,
/// once the session started.
async fn start_error(url: &str, auth: &str, secret: &str) -> String {
    let project =
        format!("mcp:\n  remote:\n    transport: streamable-http\n    url: {url}\n{auth}");
    let local = format!("[secrets.api_keys]\nremote = \"{secret}\"\n");
    let config = Sources::new(project).local(local).load().unwrap();
    let session = Session::start(config).await.unwrap();
    let status = &session.status()[0];
    let err = status
        .last_error
        .clone()
        .unwrap_or_else(|| panic!("no error: {status:?}"));
    session.shutdown().await;
    err
}

#[tokio::test]
async fn a_plain_403_names_the_url_and_the_servers_words_and_not_auth() {
    let peer = start("host_check");
    let url = peer.mcp_url();
    let err = start_error(&url, AUTH, SECRET).await;
    assert!(
        err.contains(&format!(
            "the server refused the POST: 403 Forbidden at {url}: \
             \"Access is only allowed at localhost:8601\""
        )),
        "{err}"
    );
    let lower = err.to_lowercase();
    assert!(
        !lower.contains("auth") && !err.contains("api_keys.remote") && !err.contains(SECRET),
        "{err}"
    );
}

#[tokio::test]
async fn a_401_with_an_expired_token_gives_the_challenge_and_the_auth_hint() {
    let peer = start("auth");
    let url = peer.mcp_url();
    let err = start_error(&url, AUTH, "not-the-secret").await;
    assert!(
        err.contains(&format!(
            "authentication refused: the POST was answered 401 Unauthorized at {url}: \
             invalid_token: \"The token expired at 10:00\"; check the server's `auth` and its \
             secret `api_keys.remote` in local.toml"
        )),
        "{err}"
    );
    assert!(
        !err.contains("not-the-secret") && !err.contains(SECRET),
        "{err}"
    );
}

#[tokio::test]
async fn a_401_without_credentials_gives_the_body_and_the_auth_hint() {
    let peer = start("auth");
    let url = peer.mcp_url();
    let err = start_error(&url, "", "unused").await;
    assert!(
        err.contains(&format!(
            "authentication refused: the POST was answered 401 Unauthorized at {url}: \
             \"unauthorized\"; check the server's `auth` and its secret in local.toml (the \
             server has no `auth` block)"
        )),
        "{err}"
    );
}

#[tokio::test]
async fn a_noisy_refusal_is_one_bounded_line_without_control_characters() {
    let peer = start("forbidden_noisy");
    let err = start_error(&peer.mcp_url(), "", "unused").await;
    // Every control, escape and override is shown, never acted on (issue 48: what a server
    // hid is seen): no raw one is left, and each is there escaped.
    assert!(!err.chars().any(char::is_control), "{err:?}");
    assert!(!kaged_mcp::escape::has_hidden(&err), "{err:?}");
    assert!(
        err.contains("403 Forbidden")
            && err.contains(
                r#": "\u{1b}[31mred\u{1b}[0m \u{1b}]0;owned\u{7} FAKE LOG LINE\0\u{7} \u{202e}esrever"#
            ),
        "{err:?}"
    );
    // The words are cut at 200 bytes; the rest of the line is ours (server, request, URL).
    let words = err.split_once(": \"").unwrap().1;
    assert!(words.len() <= 201 && words.ends_with("…\""), "{words:?}");
    assert!(err.len() < 400, "{} bytes: {err:?}", err.len());
}

#[tokio::test]
async fn a_closed_port_says_cannot_connect_and_keeps_the_chain_as_detail() {
    let url = format!("http://127.0.0.1:{}/mcp", peers::free_port());
    let transport =
        StreamableHttpTransport::new(StreamableHttpConfig::new(url.parse().unwrap())).unwrap();
    let client = McpClient::new("down", transport, ClientOptions::default());
    let err = client.start().await.unwrap_err();
    let Some(failure) = err.send_failure() else {
        panic!("{err:?}");
    };
    assert_eq!(
        failure.message(),
        format!("cannot connect to {url}: connection refused")
    );
    let detail = failure.detail().unwrap_or_else(|| panic!("{failure:?}"));
    assert!(
        detail.contains("tcp connect error") && detail.contains("Connection refused"),
        "{detail}"
    );
    assert_eq!(
        failure.to_string(),
        format!("{}: {detail}", failure.message())
    );
    assert!(
        failure.not_delivered() && failure.is_retryable(),
        "{failure:?}"
    );
}

#[tokio::test]
async fn a_404_to_the_handshake_questions_the_endpoint_path() {
    let peer = start("ok");
    let root = format!("http://127.0.0.1:{}/", peer.port());
    let err = start_error(&root, "", "unused").await;
    assert!(
        err.contains(&format!(
            "the server refused the POST: 404 Not Found at {root}: \"not found\"; is the MCP \
             endpoint path right? (it is often …/mcp)"
        )),
        "{err}"
    );
    // A path that already ends in /mcp is questioned without the suggestion.
    let nested = format!("http://127.0.0.1:{}/api/mcp", peer.port());
    let err = start_error(&nested, "", "unused").await;
    assert!(
        err.contains(&format!(
            "404 Not Found at {nested}: \"not found\"; is the MCP endpoint path right?"
        )) && !err.contains("it is often"),
        "{err}"
    );
}
