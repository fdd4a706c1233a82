//! Text from a server made fit for an operator's line: [`clean`] (one line, bounded, escape
//! sequences, control and invisible characters shown escaped) and [`redact_tokens`] (anything shaped like
//! a credential replaced by `***`). Used for refusal bodies, a process's last stderr line and
//! progress messages alike.

/// `text` fit for one log line: every run of white space (line breaks included) one space,
/// trimmed, every other control, terminal escape and invisible or direction-changing code
/// point shown as [`crate::escape::visible`] shows it (`\u{1b}[31m`, `\u{202e}`: what a server
/// hid is seen, never acted on by the terminal), and at most `max` bytes, cut on a char
/// boundary and ended with `…` when cut.
pub fn clean(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 8));
    let mut space = false;
    for c in text.chars() {
        if out.len() > max {
            break;
        }
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if std::mem::take(&mut space) {
            out.push(' ');
        }
        if crate::escape::is_hidden(c) {
            out.push_str(&crate::escape::visible(c.encode_utf8(&mut [0; 4])));
        } else {
            out.push(c);
        }
    }
    if out.len() <= max {
        return out;
    }
    let ellipsis = '…';
    let mut cut = max.saturating_sub(ellipsis.len_utf8());
    while !out.is_char_boundary(cut) {
        cut -= 1;
    }
    out.truncate(cut);
    out.truncate(out.trim_end().len());
    out.push(ellipsis);
    out
}

/// `text` with every word shaped like a credential replaced by `***`: a run of at least 20
/// characters from the token alphabet (letters, digits, `-._~+/=`) holding both letters and
/// digits (API keys, JWTs, OAuth tokens: `sk-…`, `ntn_…`, `ghp_…`, `eyJ…`). A server that
/// echoes the token it refused, or prints its environment to stderr, so does not put it in
/// an error, a log or `status`. Identifiers of that shape (a UUID) are redacted too: the
/// price of never showing a secret.
pub fn redact_tokens(text: &str) -> String {
    const MIN: usize = 20;
    let is_token_char =
        |c: char| c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '_' | '~' | '+' | '/' | '=');
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find(is_token_char) {
        out.push_str(&rest[..start]);
        let word = &rest[start..];
        let end = word.find(|c: char| !is_token_char(c)).unwrap_or(word.len());
        let (run, after) = word.split_at(end);
        let letters = run.chars().any(|c| c.is_ascii_alphabetic());
        let digits = run.chars().any(|c| c.is_ascii_digit());
        if run.len() >= MIN && letters && digits {
            out.push_str("***");
        } else {
            out.push_str(run);
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

pub use crate::protocol::uri::redact_uri;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_redacted_and_words_kept() {
        assert_eq!(
            redact_tokens("invalid token sk-live-4f9a8b7c6d5e4f3a2b1c, try again"),
            "invalid token ***, try again"
        );
        assert_eq!(
            redact_tokens("Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl"),
            "Bearer ***"
        );
        // Long words without digits, short ids and URLs' parts stay.
        assert_eq!(
            redact_tokens("Access is only allowed at localhost:8601 (authentication_required)"),
            "Access is only allowed at localhost:8601 (authentication_required)"
        );
        assert_eq!(
            redact_tokens("request 12345 failed"),
            "request 12345 failed"
        );
        assert_eq!(redact_tokens(""), "");
        assert_eq!(redact_tokens("é ntn_0123456789abcdefghij é"), "é *** é");
    }

    #[test]
    fn clean_makes_one_bounded_line() {
        assert_eq!(
            clean("a\x1b[31mred\x1b[0m\nb\u{202e}c\r\n\td", 100),
            r"a\u{1b}[31mred\u{1b}[0m b\u{202e}c d"
        );
        assert!(!crate::escape::has_hidden(&clean(
            "\u{7}\u{9b}x\u{200b}",
            100
        )));
        assert_eq!(clean("exactly!", 7), "exac…");
    }
}
