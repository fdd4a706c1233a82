//! `oauth_documents`: what a hostile or broken authorization server or protected resource can
//! send, read the way the OAuth flow reads it: protected resource metadata and authorization
//! server metadata (discovery), dynamic client registration answers, token endpoint answers and
//! their error bodies. The readers are `kaged_mcp::oauth::documents`, exposed (`#[doc(hidden)]`)
//! for these checks only; each runs the flow's own code on a status and a body.
//!
//! Input: byte 0 picks the document (`% 4`: resource metadata, server metadata, registration,
//! token answer) and the mode (`/ 4 % 2`); byte 1 the status (200 mostly, else one of the
//! interesting ones), byte 2 the token answer's `Content-Type`; the rest is the body (raw
//! mode) or drives [`arbitrary`] (structured mode).
//!
//! Structured mode writes a JSON object by hand (so duplicate keys, numbers past `u64` and
//! `f64`, deep nesting, long strings and truncated bodies are all possible) from the fields the
//! document has, others, and values of the right type, the wrong type or none. Every value of a
//! secret field (`access_token`, `refresh_token`, `id_token`, `client_secret`,
//! `registration_access_token`) holds the marker [`MARKER`], which no other string of the
//! document holds.
//!
//! Checks:
//! - no panic, whatever the body;
//! - an error is a non-empty message;
//! - neither the error nor the summary of what was read (the readers' `Ok`, the `Debug` of the
//!   client or the metadata) contains the marker: a secret never reaches a message or a log.
//!   In raw mode the check applies when the body is JSON whose secret fields are the only
//!   strings holding the marker;
//! - a well-formed token answer (200, JSON, `access_token` and `token_type` strings, an
//!   `expires_in` within `u64`) is read, with its tokens' lengths; a well-formed registration
//!   (2xx, a non-empty `client_id`) is read.

use arbitrary::{Arbitrary, Unstructured};
use kaged_mcp::oauth::documents;
use serde_json::Value;

/// Held by every secret value of a structured document, and by nothing else in it.
pub const MARKER: &str = "kAgEdSeCrEt";

/// The fields whose values are secrets.
const SECRET_FIELDS: &[&str] = &[
    "access_token",
    "refresh_token",
    "id_token",
    "client_secret",
    "registration_access_token",
];

const SERVER_URL: &str = "https://mcp.example.com/mcp";
const RESOURCE_METADATA_URL: &str =
    "https://mcp.example.com/.well-known/oauth-protected-resource/mcp";
const ISSUER: &str = "https://auth.example.com";
const SERVER_METADATA_URL: &str = "https://auth.example.com/.well-known/oauth-authorization-server";
const REGISTRATION_URL: &str = "https://auth.example.com/register";
const TOKEN_URL: &str = "https://auth.example.com/token";

/// Which document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doc {
    /// Protected resource metadata (RFC 9728).
    Resource,
    /// Authorization server metadata (RFC 8414).
    Server,
    /// A dynamic client registration answer (RFC 7591).
    Registration,
    /// A token endpoint answer, or its error body (RFC 6749 §5).
    Token,
}

impl Doc {
    fn fields(self) -> &'static [&'static str] {
        match self {
            Doc::Resource => &[
                "resource",
                "authorization_servers",
                "scopes_supported",
                "bearer_methods_supported",
                "resource_name",
                "access_token",
            ],
            Doc::Server => &[
                "issuer",
                "authorization_endpoint",
                "token_endpoint",
                "registration_endpoint",
                "scopes_supported",
                "token_endpoint_auth_methods_supported",
                "code_challenge_methods_supported",
                "client_id_metadata_document_supported",
                "authorization_response_iss_parameter_supported",
                "client_secret",
            ],
            Doc::Registration => &[
                "client_id",
                "client_secret",
                "token_endpoint_auth_method",
                "client_secret_expires_at",
                "registration_access_token",
                "redirect_uris",
                "error",
                "error_description",
            ],
            Doc::Token => &[
                "access_token",
                "token_type",
                "expires_in",
                "refresh_token",
                "scope",
                "id_token",
                "error",
                "error_description",
                "error_uri",
            ],
        }
    }
}

/// Strings a document's fields are likely to hold, so checks past the types are reached.
const WORDS: &[&str] = &[
    "https://mcp.example.com/mcp",
    "https://mcp.example.com",
    "https://mcp.example.com/",
    "https://auth.example.com",
    "https://auth.example.com/",
    "https://auth.example.com/token",
    "https://auth.example.com/authorize",
    "https://auth.example.com/register",
    "https://evil.example/mcp",
    "http://mcp.example.com/mcp",
    "ftp://auth.example.com/token",
    "https://user:pw@auth.example.com/token?x=1",
    "not a url",
    "",
    "Bearer",
    "bearer",
    "DPoP",
    "S256",
    "plain",
    "none",
    "client_secret_basic",
    "client_secret_post",
    "private_key_jwt",
    "invalid_grant",
    "invalid_client",
    "unauthorized_client",
    "files:read files:write",
    "openid offline_access",
    "a  b",
    " ",
];

const STATUSES: &[u16] = &[201, 204, 301, 400, 401, 403, 404, 429, 500, 503, 100, 999];

const CONTENT_TYPES: &[Option<&str>] = &[
    Some("application/json"),
    Some("application/json;charset=UTF-8"),
    Some("APPLICATION/JSON"),
    None,
    Some("text/html"),
    Some("application/x-www-form-urlencoded"),
    Some("application/jsonl"),
    Some(""),
];

/// Runs the checks of the [module docs](self) over `data`.
pub fn oauth_documents(data: &[u8]) {
    let [pick, status, ct, rest @ ..] = data else {
        return;
    };
    let doc = [Doc::Resource, Doc::Server, Doc::Registration, Doc::Token][usize::from(pick % 4)];
    let status = if status % 2 == 0 {
        200
    } else {
        STATUSES[usize::from(status / 2) % STATUSES.len()]
    };
    let content_type = CONTENT_TYPES[usize::from(*ct) % CONTENT_TYPES.len()];
    if (pick / 4) % 2 == 0 {
        let checked = secrets_only_in_secret_fields(rest);
        let outcome = read(doc, status, content_type, rest);
        check(doc, &outcome, checked, None);
    } else {
        let mut u = Unstructured::new(rest);
        let Ok(body) = Body::arbitrary(&mut u) else {
            return;
        };
        let (bytes, well_formed) = body.render(doc, &mut u);
        let outcome = read(doc, status, content_type, &bytes);
        let expect_ok = well_formed && status == 200 && json_content_type(content_type);
        check(doc, &outcome, true, expect_ok.then_some(&bytes[..]));
    }
}

/// What the reader of `doc` made of the answer: a summary (`None`: refused, try the next URL)
/// or an error.
pub fn read(
    doc: Doc,
    status: u16,
    content_type: Option<&str>,
    body: &[u8],
) -> Result<Option<String>, String> {
    match doc {
        Doc::Resource => {
            documents::resource_metadata(SERVER_URL, RESOURCE_METADATA_URL, status, body)
        }
        Doc::Server => documents::server_metadata(ISSUER, SERVER_METADATA_URL, status, body),
        Doc::Registration => documents::registration(REGISTRATION_URL, status, body).map(Some),
        Doc::Token => documents::token_response(TOKEN_URL, status, content_type, body).map(Some),
    }
}

fn json_content_type(ct: Option<&str>) -> bool {
    ct.is_none_or(|ct| ct.to_ascii_lowercase().starts_with("application/json"))
}

/// Checks one outcome. `secrets_checked`: the marker in the input was in secret fields only.
/// `well_formed`: the body of a well-formed token answer or registration, which must be read.
fn check(
    doc: Doc,
    outcome: &Result<Option<String>, String>,
    secrets_checked: bool,
    well_formed: Option<&[u8]>,
) {
    let text = match outcome {
        Ok(Some(summary)) => summary.clone(),
        Ok(None) => String::new(),
        Err(e) => {
            assert!(!e.trim().is_empty(), "an empty error ({doc:?})");
            e.clone()
        }
    };
    if secrets_checked {
        assert!(
            !text.contains(MARKER),
            "a secret of the answer reached a message ({doc:?}): {text}"
        );
        let debug = format!("{outcome:?}");
        assert!(!debug.contains(MARKER), "a secret in Debug: {debug}");
    }
    let Some(body) = well_formed else {
        return;
    };
    let json: Value = serde_json::from_slice(body).expect("a well-formed body is JSON");
    match doc {
        Doc::Token => {
            let Ok(Some(summary)) = outcome else {
                panic!(
                    "a well-formed token answer was refused: {outcome:?}\n{}",
                    String::from_utf8_lossy(body)
                );
            };
            let access = json["access_token"].as_str().expect("well-formed").len();
            assert!(
                summary.starts_with(&format!("access token of {access} bytes")),
                "{summary}"
            );
            let refresh = json.get("refresh_token").and_then(Value::as_str);
            assert!(
                summary.contains(&format!(
                    "refresh token of {:?} bytes",
                    refresh.map(str::len)
                )),
                "{summary}"
            );
        }
        Doc::Registration => {
            assert!(
                matches!(outcome, Ok(Some(_))),
                "a well-formed registration was refused: {outcome:?}\n{}",
                String::from_utf8_lossy(body)
            );
        }
        Doc::Resource | Doc::Server => {}
    }
}

/// Whether `body` is JSON whose strings (keys included) hold the marker only as values of
/// secret fields.
fn secrets_only_in_secret_fields(body: &[u8]) -> bool {
    fn clean(v: &Value, secret: bool) -> bool {
        match v {
            Value::String(s) => secret || !s.contains(MARKER),
            Value::Array(a) => a.iter().all(|v| clean(v, false)),
            Value::Object(m) => m
                .iter()
                .all(|(k, v)| !k.contains(MARKER) && clean(v, SECRET_FIELDS.contains(&k.as_str()))),
            Value::Number(n) => !n.to_string().contains(MARKER),
            Value::Bool(_) | Value::Null => true,
        }
    }
    serde_json::from_slice::<Value>(body).is_ok_and(|v| clean(&v, false))
}

/// A structured document: see the [module docs](self).
#[derive(Debug, Arbitrary)]
pub struct Body {
    fields: Vec<(Key, Val)>,
    /// Cut the text after this many bytes (a body that ends early), if set.
    cut: Option<u16>,
    /// Write the well-formed fields of the document first.
    well_formed: bool,
}

#[derive(Debug, Arbitrary)]
enum Key {
    /// One of the document's fields (index into [`Doc::fields`]).
    Known(u8),
    Other(String),
}

#[derive(Debug, Arbitrary)]
enum Val {
    Word(u8),
    Text(String),
    /// A text of `n` copies of one character: a huge value.
    Long(u16, char),
    Unsigned(u64),
    Signed(i64),
    Float(f64),
    /// A number no Rust integer holds, or past `f64`.
    HugeNumber(u8),
    Bool(bool),
    Null,
    Array(Vec<Val>),
    Object(Vec<(Key, Val)>),
    /// `n` copies of a value: a huge array.
    Many(u16, Box<Val>),
}

const HUGE_NUMBERS: &[&str] = &[
    "18446744073709551615",
    "18446744073709551616",
    "-9223372036854775809",
    "1e400",
    "-1e400",
    "1e-400",
    "123456789012345678901234567890",
    "0.5",
    "-1",
    "0",
    "4294967296",
];

/// Keeps `MARKER` out of a string that is not a secret.
fn scrub(s: &str) -> String {
    s.replace(MARKER, "kaged-secret")
}

impl Body {
    /// The body's bytes, and whether it is a well-formed document (nothing cut, no duplicate
    /// or wrongly typed well-formed field).
    fn render(&self, doc: Doc, u: &mut Unstructured<'_>) -> (Vec<u8>, bool) {
        let mut out = String::from("{");
        let mut first = true;
        let mut well_formed = self.well_formed;
        let mut written: Vec<String> = Vec::new();
        if self.well_formed {
            let secret = |i: u32| format!("\"{MARKER}-{i}\"");
            let basics: Vec<(&str, String)> = match doc {
                Doc::Token => vec![
                    ("access_token", secret(0)),
                    ("token_type", "\"Bearer\"".into()),
                    ("expires_in", "3600".into()),
                    ("refresh_token", secret(1)),
                ],
                Doc::Registration => vec![
                    ("client_id", "\"client-1\"".into()),
                    ("client_secret", secret(2)),
                ],
                Doc::Resource => vec![
                    ("resource", format!("\"{SERVER_URL}\"")),
                    ("authorization_servers", format!("[\"{ISSUER}\"]")),
                ],
                Doc::Server => vec![
                    ("issuer", format!("\"{ISSUER}\"")),
                    ("token_endpoint", format!("\"{TOKEN_URL}\"")),
                ],
            };
            for (k, v) in basics {
                if !first {
                    out.push(',');
                }
                first = false;
                out.push_str(&format!("\"{k}\":{v}"));
                written.push(k.to_owned());
            }
        }
        for (key, val) in &self.fields {
            let name = key.text(doc);
            // A field written twice, or a well-formed field of the wrong type, is no longer
            // well formed; other fields may be anything.
            if written.contains(&name) || typed_field(doc, &name) {
                well_formed = false;
            }
            written.push(name.clone());
            if !first {
                out.push(',');
            }
            first = false;
            out.push_str(&json_string(&name));
            out.push(':');
            if SECRET_FIELDS.contains(&name.as_str()) && matches!(val, Val::Word(_) | Val::Text(_))
            {
                // A secret: the marker, and maybe more of it.
                let n: u32 = u.arbitrary().unwrap_or(0);
                out.push_str(&format!("\"{MARKER}-{n}\""));
            } else {
                val.render(doc, &mut out, 0);
            }
        }
        out.push('}');
        let mut bytes = out.into_bytes();
        // A number past `f64` anywhere, say, makes the whole text no JSON.
        well_formed &= serde_json::from_slice::<Value>(&bytes).is_ok();
        if let Some(cut) = self.cut {
            let cut = usize::from(cut);
            if cut < bytes.len() {
                bytes.truncate(cut);
                well_formed = false;
            }
        }
        (bytes, well_formed)
    }
}

/// Whether `name` is a field the well-formed part of `doc` gives a type to (writing it again
/// may break the document).
fn typed_field(doc: Doc, name: &str) -> bool {
    match doc {
        Doc::Token => matches!(
            name,
            "access_token" | "token_type" | "expires_in" | "refresh_token" | "scope"
        ),
        Doc::Registration => matches!(
            name,
            "client_id" | "client_secret" | "token_endpoint_auth_method"
        ),
        Doc::Resource | Doc::Server => true,
    }
}

impl Key {
    fn text(&self, doc: Doc) -> String {
        match self {
            Key::Known(i) => doc.fields()[usize::from(*i) % doc.fields().len()].to_owned(),
            Key::Other(s) => {
                let s = scrub(s);
                // An unknown key that names a secret field would hold a secret.
                if SECRET_FIELDS.contains(&s.as_str()) {
                    format!("{s}_")
                } else {
                    s
                }
            }
        }
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string encodes")
}

impl Val {
    fn render(&self, doc: Doc, out: &mut String, depth: usize) {
        // The client reads at most 1 MiB of an answer (src/oauth/http.rs, before these
        // readers); 16 KiB is as long for every check here, and keeps the target fast.
        if out.len() > 16 << 10 {
            out.push('0');
            return;
        }
        match self {
            Val::Word(i) => out.push_str(&json_string(WORDS[usize::from(*i) % WORDS.len()])),
            Val::Text(s) => out.push_str(&json_string(&scrub(s))),
            Val::Long(n, c) => {
                let c = if c.is_control() { 'x' } else { *c };
                let s: String = std::iter::repeat_n(c, usize::from(*n % 8192)).collect();
                out.push_str(&json_string(&scrub(&s)));
            }
            Val::Unsigned(n) => out.push_str(&n.to_string()),
            Val::Signed(n) => out.push_str(&n.to_string()),
            Val::Float(f) if f.is_finite() => out.push_str(&format!("{f:?}")),
            Val::Float(_) => out.push_str("1e309"),
            Val::HugeNumber(i) => out.push_str(HUGE_NUMBERS[usize::from(*i) % HUGE_NUMBERS.len()]),
            Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Val::Null => out.push_str("null"),
            Val::Array(items) if depth < 8 => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    v.render(doc, out, depth + 1);
                }
                out.push(']');
            }
            Val::Object(fields) if depth < 8 => {
                out.push('{');
                for (i, (k, v)) in fields.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    let name = k.text(doc);
                    out.push_str(&json_string(&name));
                    out.push(':');
                    if SECRET_FIELDS.contains(&name.as_str()) {
                        out.push_str(&format!("\"{MARKER}\""));
                    } else {
                        v.render(doc, out, depth + 1);
                    }
                }
                out.push('}');
            }
            Val::Many(n, v) if depth < 8 => {
                out.push('[');
                for i in 0..usize::from(*n % 512) {
                    if i > 0 {
                        out.push(',');
                    }
                    v.render(doc, out, depth + 1);
                }
                out.push(']');
            }
            Val::Array(_) | Val::Object(_) | Val::Many(..) => out.push_str("[[[[[[[[[[]]]]]]]]]]"),
        }
    }
}
