//! The `Bearer` challenge of a `WWW-Authenticate` header (RFC 6750 §3, RFC 9728 §5.1): what a
//! server says when it refuses a request, and where its protected resource metadata lives.
//!
//! A `DPoP` challenge (RFC 9449 section 7.1) has the same parameters and is read the same way:
//! the first challenge of either scheme is taken.
//!
//! A header may hold several challenges (`Basic realm="x", Bearer scope="a b"`) and a response
//! several headers; [`BearerChallenge::find`] takes the first `Bearer` one (a token right after a
//! scheme, with no comma between, is that scheme's `token68` credential, RFC 9110 §11.3, even
//! one that spells `Bearer`). Parameters are
//! `name=token` or `name="quoted string"` (backslash escapes), names case-insensitive; a
//! parameter that appears twice keeps its first value. A header value is read as UTF-8, since a
//! quoted string may carry text that is not ASCII (RFC 9110 `obs-text`: an `error_description`
//! in French, a `Basic realm="Zürich"` before the `Bearer` challenge); a byte that is not UTF-8
//! reads as U+FFFD. Nothing here ever fails: what cannot be read is skipped.

use http::header::{HeaderMap, WWW_AUTHENTICATE};

/// The parameters of a `Bearer` challenge that matter to a client.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct BearerChallenge {
    /// `error`: `invalid_token`, `insufficient_scope`, `invalid_request`.
    pub error: Option<String>,
    /// `error_description`, for messages.
    pub error_description: Option<String>,
    /// `scope`: the space-separated scopes the resource asks for.
    pub scope: Option<String>,
    /// `resource_metadata`: the URL of the protected resource metadata (RFC 9728).
    pub resource_metadata: Option<String>,
}

impl BearerChallenge {
    /// The first `Bearer` (or `DPoP`) challenge among the `WWW-Authenticate` headers of `headers`.
    pub fn find(headers: &HeaderMap) -> Option<Self> {
        headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .find_map(|v| Self::parse(&String::from_utf8_lossy(v.as_bytes())))
    }

    /// The first `Bearer` challenge of one header value.
    pub fn parse(value: &str) -> Option<Self> {
        let mut scanner = Scanner { rest: value };
        let mut current: Option<String> = None;
        let mut found: Option<Self> = None;
        // Right after a scheme: a token there (no comma between) is its token68 credential.
        let mut after_scheme = false;
        loop {
            let comma = scanner.skip_separators();
            let Some(token) = scanner.token() else {
                // Not a token: skip one character (a stray quote, `=`) and go on.
                if !scanner.bump() {
                    break;
                }
                continue;
            };
            scanner.skip_spaces();
            if scanner.eat('=') {
                scanner.skip_spaces();
                let value = scanner.value();
                if is_ours(current.as_deref()) {
                    let challenge = found.get_or_insert_with(Self::default);
                    challenge.set(&token.to_ascii_lowercase(), value);
                }
                after_scheme = false;
                continue;
            }
            if std::mem::take(&mut after_scheme) && !comma {
                continue; // the scheme's token68
            }
            // Any other token not followed by `=` starts a new challenge.
            after_scheme = true;
            if is_ours(current.as_deref()) && found.is_some() {
                break;
            }
            current = Some(token.to_ascii_lowercase());
            if is_ours(current.as_deref()) {
                found.get_or_insert_with(Self::default);
            } else if found.is_some() {
                break;
            }
        }
        found
    }

    /// Whether the server refused for lack of scope (`error="insufficient_scope"`).
    pub fn insufficient_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    fn set(&mut self, name: &str, value: String) {
        let slot = match name {
            "error" => &mut self.error,
            "error_description" => &mut self.error_description,
            "scope" => &mut self.scope,
            "resource_metadata" => &mut self.resource_metadata,
            _ => return,
        };
        if slot.is_none() {
            *slot = Some(value);
        }
    }
}

/// A `Bearer` or a `DPoP` challenge (RFC 9449 section 7.1: the same parameters, and the
/// `use_dpop_nonce` error).
fn is_ours(scheme: Option<&str>) -> bool {
    matches!(scheme, Some("bearer" | "dpop"))
}

struct Scanner<'a> {
    rest: &'a str,
}

impl<'a> Scanner<'a> {
    fn skip_spaces(&mut self) {
        self.rest = self.rest.trim_start_matches([' ', '\t']);
    }

    /// Skips spaces and commas; whether there was a comma.
    fn skip_separators(&mut self) -> bool {
        let skipped = self.rest.len();
        let rest = self.rest.trim_start_matches([' ', '\t', ',']);
        let comma = self.rest[..skipped - rest.len()].contains(',');
        self.rest = rest;
        comma
    }

    fn bump(&mut self) -> bool {
        let mut chars = self.rest.chars();
        if chars.next().is_none() {
            return false;
        }
        self.rest = chars.as_str();
        true
    }

    fn eat(&mut self, c: char) -> bool {
        match self.rest.strip_prefix(c) {
            Some(rest) => {
                self.rest = rest;
                true
            }
            None => false,
        }
    }

    /// An RFC 7230 token.
    fn token(&mut self) -> Option<&'a str> {
        let end = self
            .rest
            .find(|c: char| !is_tchar(c))
            .unwrap_or(self.rest.len());
        if end == 0 {
            return None;
        }
        let (token, rest) = self.rest.split_at(end);
        self.rest = rest;
        Some(token)
    }

    /// A parameter value: a quoted string (unescaped) or a token (up to `,` or space).
    fn value(&mut self) -> String {
        if self.eat('"') {
            let mut out = String::new();
            let mut chars = self.rest.char_indices();
            while let Some((i, c)) = chars.next() {
                match c {
                    '"' => {
                        self.rest = &self.rest[i + 1..];
                        return out;
                    }
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            out.push(escaped);
                        }
                    }
                    c => out.push(c),
                }
            }
            // Unterminated: take the rest.
            self.rest = "";
            return out;
        }
        let end = self.rest.find([',', ' ', '\t']).unwrap_or(self.rest.len());
        let (value, rest) = self.rest.split_at(end);
        self.rest = rest;
        value.to_owned()
    }
}

fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~/".contains(c)
}

#[cfg(test)]
mod tests {
    use super::*;
    use http::HeaderValue;

    #[test]
    fn reads_the_parameters_of_a_bearer_challenge() {
        let c = BearerChallenge::parse(
            r#"Bearer resource_metadata="https://r.example/.well-known/oauth-protected-resource/mcp", scope="files:read files:write""#,
        )
        .unwrap();
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://r.example/.well-known/oauth-protected-resource/mcp")
        );
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert!(!c.insufficient_scope());
    }

    #[test]
    fn finds_bearer_among_other_schemes_and_stops_at_the_next() {
        let c = BearerChallenge::parse(
            r#"Basic realm="x", Bearer error=insufficient_scope, scope="a b", error_description="need \"b\"", DPoP algs="ES256", scope="z""#,
        )
        .unwrap();
        assert!(c.insufficient_scope());
        assert_eq!(c.scope.as_deref(), Some("a b"));
        assert_eq!(c.error_description.as_deref(), Some("need \"b\""));
    }

    #[test]
    fn a_dpop_challenge_is_read_as_a_bearer_one() {
        let c = BearerChallenge::parse(
            r#"DPoP error="use_dpop_nonce", resource_metadata="https://r.test/prm", algs="ES256""#,
        )
        .unwrap();
        assert_eq!(c.error.as_deref(), Some("use_dpop_nonce"));
        assert_eq!(c.resource_metadata.as_deref(), Some("https://r.test/prm"));
    }

    #[test]
    fn names_are_case_insensitive_and_a_bare_bearer_has_no_parameters() {
        let c = BearerChallenge::parse(r#"bearer Scope="s""#).unwrap();
        assert_eq!(c.scope.as_deref(), Some("s"));
        assert_eq!(
            BearerChallenge::parse("Bearer"),
            Some(BearerChallenge::default())
        );
        assert_eq!(BearerChallenge::parse(r#"Basic realm="x""#), None);
        assert_eq!(BearerChallenge::parse(""), None);
    }

    #[test]
    fn never_fails_on_junk() {
        for junk in [
            "\"",
            "Bearer scope=\"unterminated",
            "=,=,,\"\"",
            "Bearer ==x",
            "Bearer é=1",
        ] {
            let _ = BearerChallenge::parse(junk);
        }
        let c = BearerChallenge::parse("Bearer scope=\"unterminated").unwrap();
        assert_eq!(c.scope.as_deref(), Some("unterminated"));
    }

    #[test]
    fn find_looks_through_every_header() {
        let mut headers = HeaderMap::new();
        headers.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Basic realm=\"a\""),
        );
        headers.append(
            WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer error=\"invalid_token\""),
        );
        let c = BearerChallenge::find(&headers).unwrap();
        assert_eq!(c.error.as_deref(), Some("invalid_token"));
    }
}
