//! What a server said when it refused a request, in words fit for one log line.
//!
//! A refusal's message names the status, the URL and the server's own words ([`Said`]): the
//! `error` and `error_description` of its `WWW-Authenticate` challenge when it gave them, else
//! the start of a `text/*` or JSON body (a JSON body's JSON-RPC `error.message`, or an
//! OAuth-style `error_description`, `error`, `message` or problem `detail`, else its text; an
//! HTML page's `<title>`). At most [`MAX_READ`] bytes of the body are read, within
//! [`READ_TIME`], so a refusal with an endless or stalled body cannot hang; the words are cut
//! at [`MAX_WORDS`] bytes on a char boundary (ending in `…`) and lose every control character
//! and terminal escape sequence, so a server cannot start a new log line or colour the
//! operator's terminal. The words are the server's; a word shaped like a token is redacted
//! ([`redact_tokens`](crate::transport::redact_tokens)), so a server that echoes the credential
//! it refused does not put it in an error.
//!
//! Whether the server said the refusal is about credentials ([`Said::is_challenge`], a
//! `WWW-Authenticate` header) is told apart from a plain `403` (a Host check, an IP
//! allow-list), which is no reason to check a secret.

use std::fmt;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::header::{self, HeaderMap};
use http_body_util::BodyExt;
use hyper::body::Body as _;
use kaged_mcp_layers::auth::BearerChallenge;
use serde_json::Value;

use super::client::Body;

/// The most bytes of a refusal's body read for its words.
pub(crate) const MAX_READ: usize = 4 * 1024;
/// How long reading those bytes may take.
pub(crate) const READ_TIME: Duration = Duration::from_millis(500);
/// The most bytes of the server's words in a message (the `…` included).
pub(crate) const MAX_WORDS: usize = 200;
/// The most bytes of a challenge's `error` code (a token such as `invalid_token`).
const MAX_CODE: usize = 40;
/// The most bytes of a `Retry-After` value (an HTTP date is 29).
const MAX_RETRY_AFTER: usize = 40;

/// What a server said in a refusal: see the [module docs](self).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Said {
    /// The answer carried a `WWW-Authenticate` challenge.
    challenge: bool,
    /// An error code: the challenge's `error`, or a JSON body's OAuth `error`.
    code: Option<String>,
    /// The challenge's `error_description`, else the body's words.
    words: Option<String>,
    /// The `Retry-After` header (seconds or an HTTP date), as the server wrote it.
    retry_after: Option<String>,
}

impl Said {
    /// What the answer's headers say: its `WWW-Authenticate` challenge, if any.
    pub(crate) fn from_headers(headers: &HeaderMap) -> Self {
        let challenge = headers.contains_key(header::WWW_AUTHENTICATE);
        let bearer = BearerChallenge::find(headers).unwrap_or_default();
        Self {
            challenge,
            code: bearer
                .error
                .map(|e| clean(&e, MAX_CODE))
                .filter(|e| !e.is_empty()),
            words: bearer
                .error_description
                .map(|d| clean(&d, MAX_WORDS))
                .filter(|d| !d.is_empty()),
            retry_after: headers
                .get(header::RETRY_AFTER)
                .and_then(|v| v.to_str().ok())
                .map(|v| clean(v, MAX_RETRY_AFTER))
                .filter(|v| !v.is_empty()),
        }
    }

    /// Adds the words of the body's `start` (of the type `content_type`), unless the
    /// challenge said it all.
    pub(crate) fn add_body(&mut self, content_type: Option<&str>, start: &[u8]) {
        if self.words.is_some() {
            return;
        }
        if let Some(said) = body_words(content_type, start) {
            self.code = self.code.take().or(said.code);
            self.words = said.words;
        }
    }

    /// The server answered with a `WWW-Authenticate` challenge: it said the refusal is about
    /// credentials.
    pub(crate) fn is_challenge(&self) -> bool {
        self.challenge
    }
}

/// `: invalid_token: "The token expired at 10:00"`, `: "words"`, `: invalid_token`, or
/// nothing, then ` (Retry-After: 7)` when the server said when to come back: what follows
/// `403 Forbidden at <url>` in a message.
impl fmt::Display for Said {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(code) = &self.code {
            write!(f, ": {code}")?;
        }
        if let Some(words) = &self.words {
            write!(f, ": \"{words}\"")?;
        }
        if let Some(retry_after) = &self.retry_after {
            write!(f, " (Retry-After: {retry_after})")?;
        }
        Ok(())
    }
}

/// Reads the start of a refusal's body: at most [`MAX_READ`] bytes (give or take the last
/// frame), within [`READ_TIME`]. What is left stays in `body`.
pub(crate) async fn read_start(body: &mut Body) -> Bytes {
    if body.is_end_stream() {
        return Bytes::new();
    }
    let mut start = BytesMut::new();
    let read = async {
        while start.len() < MAX_READ {
            match body.frame().await {
                Some(Ok(frame)) => {
                    if let Ok(data) = frame.into_data() {
                        start.extend_from_slice(&data);
                    }
                }
                Some(Err(_)) | None => break,
            }
        }
    };
    let _ = tokio::time::timeout(READ_TIME, read).await;
    start.freeze()
}

/// The words of a body's `start` of the type `content_type`: see the [module docs](self).
/// `None` for a body of another type (an image, a binary) or with nothing to say.
fn body_words(content_type: Option<&str>, start: &[u8]) -> Option<Said> {
    let start = &start[..start.len().min(MAX_READ)];
    let mime = content_type
        .map(|c| {
            c.split(';')
                .next()
                .unwrap_or("")
                .trim()
                .to_ascii_lowercase()
        })
        .unwrap_or_default();
    let text = String::from_utf8_lossy(start);
    let (code, words) = if mime == "application/json" || mime.ends_with("+json") {
        json_words(start).unwrap_or((None, text.into_owned()))
    } else if mime == "text/html" {
        (None, html_words(&text))
    } else if mime.starts_with("text/") || (mime.is_empty() && std::str::from_utf8(start).is_ok()) {
        (None, text.into_owned())
    } else {
        return None;
    };
    let code = code.map(|c| clean(&c, MAX_CODE)).filter(|c| !c.is_empty());
    let words = Some(clean(&words, MAX_WORDS)).filter(|w| !w.is_empty());
    (code.is_some() || words.is_some()).then_some(Said {
        challenge: false,
        code,
        words,
        retry_after: None,
    })
}

/// The error code and words of a JSON body, if it parses: a JSON-RPC `error.message`, or an
/// OAuth-style `error_description` (with its `error`), `error`, `message` or `detail`; else
/// the whole text.
fn json_words(start: &[u8]) -> Option<(Option<String>, String)> {
    let value: Value = serde_json::from_slice(start).ok()?;
    let text = |v: &Value| v.as_str().map(str::to_owned);
    let error = value.get("error");
    if let Some(message) = error.and_then(|e| e.get("message")).and_then(text) {
        return Some((None, message));
    }
    if let Some(description) = value.get("error_description").and_then(text) {
        return Some((error.and_then(text), description));
    }
    for field in ["error", "message", "detail"] {
        if let Some(words) = value.get(field).and_then(text) {
            return Some((None, words));
        }
    }
    Some((None, value.to_string()))
}

/// An HTML page's `<title>`, else its text without tags.
fn html_words(html: &str) -> String {
    let lower = html.to_ascii_lowercase();
    if let Some(open) = lower.find("<title") {
        if let Some(start) = lower[open..].find('>').map(|i| open + i + 1) {
            let end = lower[start..]
                .find("</title")
                .map_or(html.len(), |i| start + i);
            return html[start..end].to_owned();
        }
    }
    let mut text = String::with_capacity(html.len());
    let mut in_tag = false;
    for c in html.chars() {
        match c {
            '<' => in_tag = true,
            '>' if in_tag => {
                in_tag = false;
                text.push(' ');
            }
            _ if !in_tag => text.push(c),
            _ => {}
        }
    }
    text
}

/// `text` fit for one log line ([`crate::transport::text::clean`]), with anything shaped like
/// a token redacted ([`crate::transport::text::redact_tokens`]): a server or a proxy may echo
/// the credential it refused.
pub(crate) fn clean(text: &str, max: usize) -> String {
    crate::transport::text::redact_tokens(&crate::transport::text::clean(text, max))
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    fn said(content_type: &str, body: &str) -> String {
        let mut said = Said::default();
        said.add_body(Some(content_type), body.as_bytes());
        said.to_string()
    }

    #[test]
    fn short_text_is_kept_whole() {
        assert_eq!(
            said("text/plain", "Access is only allowed at localhost:8601"),
            ": \"Access is only allowed at localhost:8601\""
        );
    }

    #[test]
    fn cuts_text_at_char_boundary() {
        // 199 bytes of ASCII then a 2-byte char: the cut falls inside it.
        let text = format!("{}é and more", "a".repeat(196));
        let cut = clean(&text, MAX_WORDS);
        assert!(cut.len() <= MAX_WORDS, "{}", cut.len());
        assert!(cut.ends_with('…'), "{cut}");
        assert_eq!(cut, format!("{}…", "a".repeat(196)));
        let long = "é".repeat(1000);
        let cut = clean(&long, MAX_WORDS);
        assert!(cut.len() <= MAX_WORDS && cut.ends_with('…'), "{cut}");
        assert_eq!(clean("exactly", 7), "exactly");
        // The `…` counts: 4 bytes of text and 3 of it.
        assert_eq!(clean("exactly!", 7), "exac…");
    }

    #[test]
    fn control_characters_and_escapes_are_shown_never_acted_on() {
        let noisy = "\u{1b}[31mred\u{1b}[0m\r\nFAKE LOG LINE\u{0}\u{7}\ttab \u{1b}]0;title\u{7}\
                     after\u{202e}rev\u{85}nel";
        let clean = clean(noisy, MAX_WORDS);
        assert_eq!(
            clean,
            r"\u{1b}[31mred\u{1b}[0m FAKE LOG LINE\0\u{7} tab \u{1b}]0;title\u{7}after\u{202e}rev nel"
        );
        assert!(!crate::escape::has_hidden(&clean), "{clean:?}");
        assert_eq!(super::clean("  \n\t ", MAX_WORDS), "");
    }

    #[test]
    fn a_json_rpc_error_body_gives_its_message() {
        let body =
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}}"#;
        assert_eq!(said("application/json", body), ": \"Session not found\"");
    }

    #[test]
    fn an_oauth_error_body_gives_its_code_and_description() {
        let body = r#"{"error":"invalid_client","error_description":"Unknown client\nid"}"#;
        assert_eq!(
            said("application/json; charset=utf-8", body),
            ": invalid_client: \"Unknown client id\""
        );
        assert_eq!(
            said("application/json", r#"{"error":"access_denied"}"#),
            ": \"access_denied\""
        );
        assert_eq!(
            said(
                "application/problem+json",
                r#"{"title":"x","detail":"quota spent"}"#
            ),
            ": \"quota spent\""
        );
        // A JSON body with none of those, or cut so it does not parse, is its text.
        assert_eq!(
            said("application/json", r#"{"ok":false}"#),
            ": \"{\"ok\":false}\""
        );
        assert_eq!(
            said("application/json", r#"{"error": "cut"#),
            ": \"{\"error\": \"cut\""
        );
    }

    #[test]
    fn html_gives_its_title_and_other_types_nothing() {
        assert_eq!(
            said(
                "text/html",
                "<html><head><title>403 Forbidden</title></head><body>x</body>"
            ),
            ": \"403 Forbidden\""
        );
        assert_eq!(said("text/html", "<p>Go <b>away</b></p>"), ": \"Go away\"");
        assert_eq!(said("image/png", "PNG"), "");
        assert_eq!(said("text/plain", ""), "");
    }

    #[test]
    fn the_challenge_speaks_before_the_body() {
        let mut headers = HeaderMap::new();
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(
                r#"Bearer realm="mcp", error="invalid_token", error_description="The token expired at 10:00""#,
            ),
        );
        let mut said = Said::from_headers(&headers);
        said.add_body(Some("text/plain"), b"unauthorized");
        assert!(said.is_challenge());
        assert_eq!(
            said.to_string(),
            ": invalid_token: \"The token expired at 10:00\""
        );
        // A challenge without an error: the body's words.
        headers.insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static(r#"Bearer realm="mcp""#),
        );
        let mut said = Said::from_headers(&headers);
        said.add_body(Some("text/plain"), b"unauthorized");
        assert!(said.is_challenge());
        assert_eq!(said.to_string(), ": \"unauthorized\"");
        assert!(!Said::from_headers(&HeaderMap::new()).is_challenge());
    }

    /// `Retry-After` follows the words, cut to a bound: a server cannot fill the line with it.
    #[test]
    fn retry_after_follows_the_words_bounded() {
        let mut headers = HeaderMap::new();
        headers.insert(header::RETRY_AFTER, HeaderValue::from_static("7"));
        let mut said = Said::from_headers(&headers);
        said.add_body(Some("text/plain"), b"slow down");
        assert_eq!(said.to_string(), ": \"slow down\" (Retry-After: 7)");
        let long = "9".repeat(500);
        headers.insert(header::RETRY_AFTER, HeaderValue::from_str(&long).unwrap());
        let shown = Said::from_headers(&headers).to_string();
        assert!(shown.len() < 60, "{shown}");
        assert!(shown.starts_with(" (Retry-After: 999"), "{shown}");
    }

    #[tokio::test(start_paused = true)]
    async fn an_endless_body_is_read_only_so_far() {
        let endless = futures::stream::repeat_with(|| {
            Ok::<_, tower::BoxError>(hyper::body::Frame::data(Bytes::from_static(&[b'x'; 1000])))
        });
        let mut body = http_body_util::StreamBody::new(endless).boxed_unsync();
        let start = read_start(&mut body).await;
        assert!(
            start.len() >= MAX_READ && start.len() < MAX_READ + 1000,
            "{}",
            start.len()
        );
        // A body that stalls: the time limit ends the read.
        let stalled =
            futures::stream::pending::<Result<hyper::body::Frame<Bytes>, tower::BoxError>>();
        let mut body = http_body_util::StreamBody::new(stalled).boxed_unsync();
        assert!(read_start(&mut body).await.is_empty());
    }
}
