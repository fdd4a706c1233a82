//! The loopback redirect listener of a login (RFC 8252 §7.3): `http://127.0.0.1:<ephemeral
//! port>/callback`, one redirect awaited, its `state` and `iss` (RFC 9207) checked. Requests
//! are read with a bound (8 KiB of head, 10 s each); anything but `GET /callback` gets a 404
//! and the wait goes on.

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

    /// Waits for the redirect and returns its code, once its `state` matched `state` (a
    /// redirect with another `state`, or none, is answered and ignored) and its
    /// `iss` (RFC 9207) the authorization server's issuer `issuer` (`Some` when the issuer
    /// was published in its metadata): a present `iss` must equal it, byte for byte, and one
    /// is required when `iss_required` (the server says it sends it).
    pub(crate) async fn code(
        &self,
        state: &str,
        issuer: Option<&str>,
        iss_required: bool,
    ) -> Result<String, String> {
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
                iss,
            } = query;
            if got.as_deref() != Some(state) {
                // Answered ("does not belong to the login in progress") and ignored: any local
                // process can reach this port, and must not be able to end the login.
                tracing::warn!("a redirect whose state is not the login's was ignored (a stale or forged redirect); still waiting for the login's own");
                continue;
            }
            match (iss.as_deref(), issuer) {
                (Some(got), Some(expected)) if got != expected => {
                    return Err(format!(
                        "the redirect's iss `{got}` is not the authorization server's issuer \
                         `{expected}` (RFC 9207); refusing its code (a mix-up attack, or another \
                         server answered)"
                    ));
                }
                (None, _) if iss_required => {
                    return Err("the authorization server says it sends `iss` \
                                (authorization_response_iss_parameter_supported) but the \
                                redirect has none (RFC 9207); refusing its code"
                        .into());
                }
                _ => {}
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The code `code()` gives back for a redirect with `query`, expecting `issuer`.
    async fn redirect(query: &str, issuer: Option<&str>, required: bool) -> Result<String, String> {
        let callback = Callback::bind().await.unwrap();
        let port = callback.redirect_uri().port().unwrap();
        let request = format!("GET /callback?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
        let sender = tokio::spawn(async move {
            let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
            s.write_all(request.as_bytes()).await.unwrap();
            let mut answer = Vec::new();
            let _ = s.read_to_end(&mut answer).await;
        });
        let code = callback.code("st", issuer, required).await;
        sender.await.unwrap();
        code
    }

    #[tokio::test]
    async fn the_issuer_of_the_redirect_is_checked_as_rfc_9207_says() {
        let as_ = Some("https://as.example/tenant");
        // The same issuer, byte for byte.
        let ok = redirect(
            "code=c1&state=st&iss=https%3A%2F%2Fas.example%2Ftenant",
            as_,
            true,
        );
        assert_eq!(ok.await.unwrap(), "c1");
        // Another issuer, or the same one "normalized": refused.
        for iss in [
            "https%3A%2F%2Fevil.example",
            "https%3A%2F%2Fas.example%2Ftenant%2F",
        ] {
            let e = redirect(&format!("code=c1&state=st&iss={iss}"), as_, false)
                .await
                .unwrap_err();
            assert!(
                e.contains("RFC 9207") && e.contains("refusing its code"),
                "{e}"
            );
        }
        // Missing where the server says it sends one: refused; else accepted.
        let e = redirect("code=c1&state=st", as_, true).await.unwrap_err();
        assert!(
            e.contains("authorization_response_iss_parameter_supported"),
            "{e}"
        );
        assert_eq!(
            redirect("code=c1&state=st", as_, false).await.unwrap(),
            "c1"
        );
        // No published issuer (2025-03-26 default endpoints): nothing to compare with.
        let any = redirect("code=c1&state=st&iss=https%3A%2F%2Fx", None, false);
        assert_eq!(any.await.unwrap(), "c1");
    }

    /// A redirect that is not the login's (another `state`, or none, even one carrying an
    /// error) is answered and ignored: the login's own redirect, coming after, still logs in.
    #[tokio::test]
    async fn a_redirect_with_another_state_is_ignored_and_the_login_goes_on() {
        let callback = Callback::bind().await.unwrap();
        let port = callback.redirect_uri().port().unwrap();
        let sender = tokio::spawn(async move {
            let mut answers = Vec::new();
            for query in [
                "code=forged&state=other",
                "error=access_denied",
                "code=c2&state=st",
            ] {
                let mut s = TcpStream::connect(("127.0.0.1", port)).await.unwrap();
                let request = format!("GET /callback?{query} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n");
                s.write_all(request.as_bytes()).await.unwrap();
                let mut answer = Vec::new();
                let _ = s.read_to_end(&mut answer).await;
                answers.push(String::from_utf8_lossy(&answer).into_owned());
            }
            answers
        });
        assert_eq!(callback.code("st", None, false).await.unwrap(), "c2");
        let answers = sender.await.unwrap();
        assert!(
            answers[0].ends_with("does not belong to the login in progress."),
            "{answers:?}"
        );
        assert!(
            answers[1].ends_with("does not belong to the login in progress."),
            "{answers:?}"
        );
        assert!(
            answers[2].ends_with("You can close this tab."),
            "{answers:?}"
        );
    }
}
