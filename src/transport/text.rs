//! Text from a server made fit for an operator's line: [`clean`] (escape sequences, control
//! and invisible characters out, one line, bounded) and [`redact_tokens`] (anything shaped like
//! a credential replaced by `***`). Used for refusal bodies, a process's last stderr line and
//! progress messages alike.

/// `text` fit for one log line: terminal escape sequences and control and invisible
/// formatting characters removed, every run of white space (line breaks included) one space,
/// trimmed, and at most `max` bytes, cut on a char boundary and ended with `…` when cut.
pub fn clean(text: &str, max: usize) -> String {
    let mut out = String::with_capacity(text.len().min(max + 8));
    let mut chars = text.chars().peekable();
    let mut space = false;
    while let Some(c) = chars.next() {
        if out.len() > max {
            break;
        }
        if c == '\u{1b}' {
            skip_escape(&mut chars);
            continue;
        }
        if c.is_whitespace() {
            space = !out.is_empty();
            continue;
        }
        if c.is_control() || is_invisible(c) {
            continue;
        }
        if std::mem::take(&mut space) {
            out.push(' ');
        }
        out.push(c);
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

/// Skips the rest of an escape sequence after `ESC`: a CSI (`ESC [ … final`), an OSC
/// (`ESC ] … BEL` or `ESC ] … ESC \`), or the one character of any other.
fn skip_escape(chars: &mut std::iter::Peekable<std::str::Chars<'_>>) {
    match chars.next() {
        Some('[') => {
            for c in chars.by_ref() {
                if ('\u{40}'..='\u{7e}').contains(&c) {
                    break;
                }
            }
        }
        Some(']') => {
            while let Some(c) = chars.next() {
                if c == '\u{7}' {
                    break;
                }
                if c == '\u{1b}' {
                    if chars.peek() == Some(&'\\') {
                        chars.next();
                    }
                    break;
                }
            }
        }
        _ => {}
    }
}

/// Characters that change how a line reads without showing: bidirectional overrides and
/// isolates, zero-width characters, the byte order mark.
fn is_invisible(c: char) -> bool {
    matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
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
        assert_eq!(clean("a\x1b[31mred\x1b[0m\nb\u{202e}c", 100), "ared bc");
        assert_eq!(clean("exactly!", 7), "exac…");
    }
}
