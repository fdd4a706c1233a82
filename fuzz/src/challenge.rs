//! `www_authenticate`: the `Bearer` challenge of `WWW-Authenticate` headers
//! (`kaged_mcp_layers::auth::BearerChallenge`, which the OAuth token source reads on a 401 or
//! 403 for `resource_metadata`, `scope` and `error`).
//!
//! Input: byte 0 picks the mode.
//! - Even: **raw**. The rest, split at `\n`, is the header lines (a line that cannot be a header
//!   value is left out). Checks: no panic; no value of the challenge
//!   [`BearerChallenge::find`] reads has more characters than the longest line has bytes; the
//!   challenge found, written back with [`render`] (every value quoted), reads back
//!   the same.
//! - Odd: **model**. The rest drives [`arbitrary`]: header lines of challenges (`Bearer` in any
//!   case, `Basic`, `DPoP`, other schemes, `token68` credentials), each with parameters (the
//!   four a client reads, in any case, and others) whose values are any text, written as a
//!   token when they are one or as a quoted string (`"` and `\` escaped, other characters
//!   escaped or not), with optional spaces around `=` and several list separators; characters
//!   a header cannot carry (controls other than tab) are left out of values. Checks: what
//!   `find` reads equals the model: the first `Bearer` (or `DPoP`, read the same way)
//!   challenge over the lines in order, each
//!   parameter's first value, exactly.

use arbitrary::{Arbitrary, Unstructured};
use http::header::{HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use kaged_mcp_layers::auth::BearerChallenge;

/// Runs the checks of the [module docs](self) over `data`.
pub fn www_authenticate(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode % 2 == 0 {
        raw(rest);
    } else if let Ok(header) = Header::arbitrary_take_rest(Unstructured::new(rest)) {
        model(&header);
    }
}

fn raw(data: &[u8]) {
    let mut headers = HeaderMap::new();
    let mut longest = 0;
    for line in data.split(|b| *b == b'\n') {
        if let Ok(v) = HeaderValue::from_bytes(line) {
            longest = longest.max(line.len());
            headers.append(WWW_AUTHENTICATE, v);
        }
    }
    let found = BearerChallenge::find(&headers);
    if let Some(c) = &found {
        // Each byte of a header reads as at most one character (U+FFFD for a byte that is
        // not UTF-8).
        for v in values(c) {
            assert!(
                v.chars().count() <= longest,
                "a value longer than its header: {c:?}"
            );
        }
        check_reads_back(c);
    }
}

/// The challenge written back (every parameter quoted) reads back the same.
fn check_reads_back(c: &BearerChallenge) {
    let text = render(c);
    let Ok(value) = HeaderValue::from_str(&text) else {
        panic!("a challenge read from a header cannot be written back: {text:?}");
    };
    let mut headers = HeaderMap::new();
    headers.append(WWW_AUTHENTICATE, value);
    assert_eq!(
        BearerChallenge::find(&headers).as_ref(),
        Some(c),
        "written back as {text:?}"
    );
}

fn values(c: &BearerChallenge) -> impl Iterator<Item = &String> {
    [
        &c.error,
        &c.error_description,
        &c.scope,
        &c.resource_metadata,
    ]
    .into_iter()
    .flatten()
}

/// `Bearer` and the challenge's parameters, every value a quoted string.
pub fn render(c: &BearerChallenge) -> String {
    let mut out = String::from("Bearer");
    let mut sep = " ";
    for (name, value) in [
        ("error", &c.error),
        ("error_description", &c.error_description),
        ("scope", &c.scope),
        ("resource_metadata", &c.resource_metadata),
    ] {
        if let Some(v) = value {
            out.push_str(sep);
            out.push_str(name);
            out.push('=');
            out.push_str(&quoted(v, &[]));
            sep = ", ";
        }
    }
    out
}

/// `value` as a quoted string: `"` and `\` escaped, and every character whose index is in
/// `escape` too (a quoted-pair may escape any character).
fn quoted(value: &str, escape: &[bool]) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for (i, ch) in value.chars().enumerate() {
        if ch == '"' || ch == '\\' || escape.get(i).copied().unwrap_or(false) {
            out.push('\\');
        }
        out.push(ch);
    }
    out.push('"');
    out
}

/// An RFC 9110 `tchar`.
fn is_tchar(c: char) -> bool {
    c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c)
}

/// A character a quoted string in a header may carry: tab, space, visible ASCII, and
/// anything not ASCII (obs-text, as UTF-8).
fn header_char(c: char) -> bool {
    c == '\t' || c == ' ' || c.is_ascii_graphic() || !c.is_ascii()
}

/// A token made of the `tchar`s of `raw` (`fallback` when none is left).
fn token(raw: &str, fallback: &str) -> String {
    let t: String = raw.chars().filter(|c| is_tchar(*c)).take(24).collect();
    if t.is_empty() {
        fallback.to_owned()
    } else {
        t
    }
}

/// The header lines: see the [module docs](self).
#[derive(Debug, Arbitrary)]
pub struct Header {
    lines: Vec<Line>,
}

#[derive(Debug, Arbitrary)]
struct Line {
    challenges: Vec<Challenge>,
    /// Between challenges and between parameters.
    sep: Sep,
    leading_space: bool,
}

#[derive(Debug, Clone, Copy, Arbitrary)]
enum Sep {
    CommaSpace,
    Comma,
    SpaceComma,
    Commas,
}

impl Sep {
    fn as_str(self) -> &'static str {
        match self {
            Sep::CommaSpace => ", ",
            Sep::Comma => ",",
            Sep::SpaceComma => " , ",
            Sep::Commas => ", ,\t,",
        }
    }
}

#[derive(Debug, Arbitrary)]
struct Challenge {
    scheme: Scheme,
    params: Vec<Param>,
    /// For a scheme other than `Bearer` and `DPoP`: a token68 credential instead of parameters.
    token68: Option<(String, u8)>,
}

#[derive(Debug, Arbitrary)]
enum Scheme {
    /// `Bearer`, each letter upper case where its bit is set.
    Bearer(u8),
    Basic,
    Dpop,
    Other(String),
}

#[derive(Debug, Arbitrary)]
struct Param {
    name: Name,
    /// Which letters of the name are upper case.
    case: u32,
    value: String,
    /// Written as a token when it is one.
    as_token: bool,
    /// Which characters are escaped in a quoted string besides `"` and `\`.
    escape: Vec<bool>,
    space_before_eq: bool,
    space_after_eq: bool,
}

#[derive(Debug, Arbitrary)]
enum Name {
    Error,
    ErrorDescription,
    Scope,
    ResourceMetadata,
    Realm,
    Other(String),
}

impl Name {
    fn text(&self) -> String {
        match self {
            Name::Error => "error".into(),
            Name::ErrorDescription => "error_description".into(),
            Name::Scope => "scope".into(),
            Name::ResourceMetadata => "resource_metadata".into(),
            Name::Realm => "realm".into(),
            Name::Other(raw) => token(raw, "x"),
        }
    }
}

fn with_case(name: &str, case: u32) -> String {
    name.chars()
        .enumerate()
        .map(|(i, c)| {
            if i < 32 && case & (1 << i) != 0 {
                c.to_ascii_uppercase()
            } else {
                c
            }
        })
        .collect()
}

/// One line as text, and the `Bearer` challenge it holds first, if any.
fn render_line(line: &Line) -> (String, Option<BearerChallenge>) {
    let sep = line.sep.as_str();
    let mut text = String::new();
    if line.leading_space {
        text.push(' ');
    }
    let mut found: Option<BearerChallenge> = None;
    for (i, ch) in line.challenges.iter().enumerate() {
        if i > 0 {
            text.push_str(sep);
        }
        let bearer = match &ch.scheme {
            Scheme::Bearer(case) => {
                text.push_str(&with_case("bearer", u32::from(*case)));
                true
            }
            Scheme::Basic => {
                text.push_str("Basic");
                false
            }
            // Read as a `Bearer` one (RFC 9449 section 7.1: the same parameters).
            Scheme::Dpop => {
                text.push_str("DPoP");
                true
            }
            Scheme::Other(raw) => {
                let mut t = token(raw, "Other");
                if t.eq_ignore_ascii_case("bearer") || t.eq_ignore_ascii_case("dpop") {
                    t.push('x');
                }
                text.push_str(&t);
                false
            }
        };
        if let (false, Some((raw, pad))) = (bearer, &ch.token68) {
            let t68: String = raw
                .chars()
                .filter(|c| c.is_ascii_alphanumeric() || "-._~+/".contains(*c))
                .take(40)
                .collect();
            if !t68.is_empty() {
                text.push(' ');
                text.push_str(&t68);
                text.push_str(&"=".repeat(usize::from(pad % 3)));
                continue;
            }
        }
        let first = bearer && found.is_none();
        if first {
            found = Some(BearerChallenge::default());
        }
        for (j, p) in ch.params.iter().enumerate() {
            text.push_str(if j == 0 { " " } else { sep });
            let name = p.name.text();
            text.push_str(&with_case(&name, p.case));
            if p.space_before_eq {
                text.push(' ');
            }
            text.push('=');
            if p.space_after_eq {
                text.push(' ');
            }
            let value: String = p.value.chars().filter(|c| header_char(*c)).collect();
            if p.as_token && !value.is_empty() && value.chars().all(is_tchar) {
                text.push_str(&value);
            } else {
                text.push_str(&quoted(&value, &p.escape));
            }
            if first {
                let c = found.as_mut().expect("set above");
                let slot = match name.to_ascii_lowercase().as_str() {
                    "error" => &mut c.error,
                    "error_description" => &mut c.error_description,
                    "scope" => &mut c.scope,
                    "resource_metadata" => &mut c.resource_metadata,
                    _ => continue,
                };
                if slot.is_none() {
                    *slot = Some(value);
                }
            }
        }
    }
    (text, found)
}

/// The header lines as text and the challenge a client must read from them.
pub fn render_header(header: &Header) -> (Vec<String>, Option<BearerChallenge>) {
    let mut lines = Vec::new();
    let mut want = None;
    for line in &header.lines {
        let (text, found) = render_line(line);
        if want.is_none() {
            want = found;
        }
        lines.push(text);
    }
    (lines, want)
}

fn model(header: &Header) {
    let (lines, want) = render_header(header);
    let mut headers = HeaderMap::new();
    for line in &lines {
        let v = HeaderValue::from_str(line)
            .unwrap_or_else(|e| panic!("the harness wrote a bad header {line:?}: {e}"));
        headers.append(WWW_AUTHENTICATE, v);
    }
    let got = BearerChallenge::find(&headers);
    assert_eq!(got, want, "WWW-Authenticate lines: {lines:#?}");
    if let Some(c) = &got {
        check_reads_back(c);
    }
}
