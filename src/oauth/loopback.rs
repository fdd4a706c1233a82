//! The loopback redirect listener of a login (RFC 8252 §7.3): `http://127.0.0.1:<ephemeral
//! port>/callback`, one redirect awaited, its `state` checked. Requests are read with a bound
//! (8 KiB of head, 10 s each); anything but `GET /callback` gets a 404 and the wait goes on.

use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use url::Url;

use super::grant::{parse_redirect, RedirectParams};

/// The most bytes of a request head read.
const MAX_HEAD: usize = 8 * 1024;
/// How long one connection may take to send its request.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// A bound listener waiting for the authorization server's redirect.
#[derive(Debug)]
pub(crate) struct Callback {
    listener: TcpListener,
    redirect_uri: Url,
}

impl Callback {
    /// Binds `127.0.0.1` on a port the system picks.
    pub(crate) async fn bind() -> Result<Self, String> {
        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| format!("cannot listen on 127.0.0.1 for the redirect: {e}"))?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("the redirect listener: {e}"))?
            .port();
        let redirect_uri =
            Url::parse(&format!("http://127.0.0.1:{port}/callback")).map_err(|e| e.to_string())?;
        Ok(Self {
            listener,
            redirect_uri,
        })
    }

    /// The redirect URI to register and send.
    pub(crate) fn redirect_uri(&self) -> &Url {
        &self.redirect_uri
    }

    /// Waits for the redirect and returns its code, once its `state` matched `state`.
    pub(crate) async fn code(&self, state: &str) -> Result<String, String> {
        loop {
            let (stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| format!("the redirect listener: {e}"))?;
            let Some(query) = read_callback(stream, state).await else {
                continue;
            };
            let RedirectParams {
                code,
                state: got,
                error,
                error_description,
            } = query;
            if got.as_deref() != Some(state) {
                return Err("the redirect's state does not match the login's; refusing its code (a stale or forged redirect)".into());
            }
            if let Some(e) = error {
                return Err(format!(
                    "the authorization server refused: {e}{}",
                    error_description
                        .map(|d| format!(" ({d})"))
                        .unwrap_or_default()
                ));
            }
            return code.ok_or_else(|| "the redirect carried no code".to_owned());
        }
    }
}

/// Reads one request; answers it, and returns the query of a `GET /callback`.
async fn read_callback(mut stream: TcpStream, state: &str) -> Option<RedirectParams> {
    let mut head = Vec::with_capacity(1024);
    let read = async {
        let mut buf = [0_u8; 1024];
        while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
            let n = stream.read(&mut buf).await.ok()?;
            if n == 0 {
                break;
            }
            head.extend_from_slice(&buf[..n]);
        }
        Some(())
    };
    tokio::time::timeout(READ_TIMEOUT, read).await.ok()??;
    let line = head.split(|&b| b == b'\r' || b == b'\n').next()?;
    let line = std::str::from_utf8(line).ok()?;
    let mut parts = line.split(' ');
    let (method, target) = (parts.next()?, parts.next()?);
    let (path, query) = target.split_once('?').unwrap_or((target, ""));
    if method != "GET" || path != "/callback" {
        let _ = respond(&mut stream, "404 Not Found", "Not found.").await;
        return None;
    }
    let params = parse_redirect(query);
    let body = if params.state.as_deref() != Some(state) {
        "This redirect does not belong to the login in progress."
    } else if params.error.is_some() {
        "The authorization server refused the login; see the terminal."
    } else {
        "kaged-mcp is logged in. You can close this tab."
    };
    let _ = respond(&mut stream, "200 OK", body).await;
    Some(params)
}

async fn respond(stream: &mut TcpStream, status: &str, body: &str) -> std::io::Result<()> {
    let text = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(text.as_bytes()).await?;
    stream.shutdown().await
}
