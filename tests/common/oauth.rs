//! `tests/servers/oauth_server.py` for the OAuth tests: started on a port it picks, with a token
//! directory of its own, its `/stats` and control endpoints (`/expire`, `/revoke-refresh`)
//! reached over plain HTTP/1.1, and sessions on it as the server `remote`.
//!
//! A module of `common` (it uses its sibling `peers`): `crate::common::oauth` in a test binary
//! that includes `common` (see `common/mod.rs`).
#![allow(dead_code)] // each test crate uses a different part of this module

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use kaged_mcp::config::Sources;
use kaged_mcp::oauth::FetchAuthorizer;
use kaged_mcp::{Session, SessionOptions};
use serde_json::Value;

use super::peers::{self, SsePeer};

/// The OAuth test server and a temporary directory: `tokens/` (created by the token store, so
/// its mode is the store's) and `server.log` (the server's `--log`).
pub(crate) struct OAuthPeer {
    pub(crate) peer: SsePeer,
    pub(crate) dir: tempfile::TempDir,
}

impl OAuthPeer {
    /// Starts the server with `extra` arguments; `None` (the test skips) when `python3` is
    /// missing and `CI` is not set, a panic when it is.
    pub(crate) fn start(extra: &[&str]) -> Option<OAuthPeer> {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("server.log");
        let mut all = vec!["--log", log.to_str().unwrap()];
        all.extend_from_slice(extra);
        let cmd = peers::require(peers::oauth_server(&all), "python3 (oauth_server.py)")?;
        let peer = SsePeer::start_reporting_port(&cmd).unwrap_or_else(|e| panic!("{e}"));
        Some(OAuthPeer { peer, dir })
    }

    /// `http://127.0.0.1:<port>/as`, the issuer of its authorization server.
    pub(crate) fn issuer(&self) -> String {
        format!("http://127.0.0.1:{}/as", self.peer.port())
    }

    /// Where token files go (created on the first save).
    pub(crate) fn tokens(&self) -> PathBuf {
        self.dir.path().join("tokens")
    }

    /// The server's request log, one JSON object per request.
    pub(crate) fn log(&self) -> Vec<Value> {
        peers::read_request_log(&self.dir.path().join("server.log"))
    }

    /// `project.yaml` declaring the server as `remote` with `auth: {type: oauth}` plus `auth`
    /// (lines indented by six spaces, such as `"      client_id: svc\n"`).
    pub(crate) fn project(&self, auth: &str) -> String {
        format!(
            "mcp:\n  remote:\n    transport: streamable-http\n    url: {}\n    auth:\n      type: oauth\n{auth}",
            self.peer.mcp_url()
        )
    }

    /// A session on the server with `auth` lines and `local` (local.toml) text, its token files
    /// in [`tokens`](Self::tokens), logging in with [`FetchAuthorizer`] when `login` is set
    /// (else as a daemon: no authorizer).
    pub(crate) async fn session(&self, auth: &str, local: &str, login: bool) -> Session {
        let config = Sources::new(self.project(auth))
            .local(local.to_owned())
            .load()
            .unwrap();
        let mut options = SessionOptions::new().oauth_token_dir(self.tokens());
        if login {
            options = options.oauth_authorizer(Arc::new(FetchAuthorizer));
        }
        Session::start_with(config, options).await.unwrap()
    }

    /// `GET /stats`.
    pub(crate) fn stats(&self) -> Value {
        let (status, body) = self.request("GET", "/stats");
        assert_eq!(status, 200, "{body}");
        serde_json::from_str(&body).unwrap()
    }

    /// `POST /expire`: every access token issued so far is expired.
    pub(crate) fn expire(&self) {
        assert_eq!(self.request("POST", "/expire").0, 204);
    }

    /// `POST /revoke-refresh`: every refresh token is dead.
    pub(crate) fn revoke_refresh(&self) {
        assert_eq!(self.request("POST", "/revoke-refresh").0, 204);
    }

    /// `POST /token-outage` (`true`: every refresh is answered 503 from now on) or
    /// `POST /token-restore` (`false`).
    pub(crate) fn token_outage(&self, on: bool) {
        let path = if on {
            "/token-outage"
        } else {
            "/token-restore"
        };
        assert_eq!(self.request("POST", path).0, 204);
    }

    /// One HTTP/1.1 request without a body on its own connection: the status and the body.
    fn request(&self, verb: &str, path: &str) -> (u16, String) {
        let mut tcp = TcpStream::connect(("127.0.0.1", self.peer.port())).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        write!(
            tcp,
            "{verb} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = String::new();
        tcp.read_to_string(&mut raw).unwrap();
        let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
        let status = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("no status line in {raw:?}"));
        (status, body.to_owned())
    }
}

/// The token files in `dir` (temporary files of a save, named `.…tmp`, left out).
pub(crate) fn token_files(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| !n.starts_with('.') && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    files
}

/// The one token file in `dir`, parsed, and its path.
pub(crate) fn token_file(dir: &Path) -> (PathBuf, Value) {
    let files = token_files(dir);
    assert_eq!(
        files.len(),
        1,
        "one token file expected in {}",
        dir.display()
    );
    let text = std::fs::read_to_string(&files[0]).unwrap();
    (files[0].clone(), serde_json::from_str(&text).unwrap())
}

/// `mode & 0o777` of `path`.
pub(crate) fn mode(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// What `whoami` answered: `{"client_id", "scopes", "token_generation"}`.
pub(crate) async fn whoami(session: &Session) -> Result<Value, kaged_mcp::Error> {
    let result = session.call("mcp.remote.whoami", None).await?;
    assert!(!result.is_error, "{}", result.joined_text());
    Ok(serde_json::from_str(&result.joined_text()).unwrap())
}
