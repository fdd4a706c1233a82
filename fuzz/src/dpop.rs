//! `dpop_jwt`: the JWT and DPoP parsing of OAuth for workloads
//! (`kaged_mcp::oauth::workload` and `kaged_mcp::oauth::dpop`, exposed `#[doc(hidden)]` for
//! these checks): the assertion file's JWT shape, `DPoP-Nonce` values, the `htu` of a URI, the
//! token endpoint's answer to a JWT-bearer grant, and proofs read back.
//!
//! Input: byte 0 picks the mode (`% 4`):
//! - 0, **jwt**: the rest as text through [`inspect_jwt`]: no panic; `Ok` only for three
//!   dot-separated segments; the error's message is the same for every input with that fault
//!   (so it never quotes the input).
//! - 1, **nonce**: the rest through [`nonce_of`] (a value kept is the input, 1 to 1024 visible
//!   ASCII bytes, no `"` or `\`) and, as text, through [`htu`] (no `?` or `#` left, URL or
//!   not).
//! - 2, **token answer**: [`arbitrary`] writes a token endpoint answer (status, JSON fields of
//!   the right type, the wrong type or none); every token value holds [`MARKER`], which nothing
//!   else holds. Checks: no panic, and the marker never reaches an error message.
//! - 3, **proof**: [`arbitrary`] picks `htm`, a URI, a nonce and an `ath`; the proof made for
//!   them reads back through [`inspect_jwt`] with `typ` `dpop+jwt`, `alg` `ES256` and the nonce.

use arbitrary::{Arbitrary, Unstructured};
use kaged_mcp::oauth::dpop::{htu, nonce_of, proof_with_new_key};
use kaged_mcp::oauth::workload::{inspect_jwt, read_token_answer, JwtShapeError};
use serde_json::{json, Map, Value};

/// Held by every token value of a structured answer, and by nothing else in it.
pub const MARKER: &str = "kAgEdToKeN";

/// Runs the checks of the [module docs](self) over `data`.
pub fn dpop_jwt(data: &[u8]) {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    match mode % 4 {
        0 => jwt(rest),
        1 => nonce(rest),
        2 => {
            if let Ok(a) = Answer::arbitrary_take_rest(Unstructured::new(rest)) {
                token_answer(&a);
            }
        }
        _ => {
            if let Ok(p) = Proof::arbitrary_take_rest(Unstructured::new(rest)) {
                proof(&p);
            }
        }
    }
}

fn jwt(data: &[u8]) {
    let text = String::from_utf8_lossy(data);
    match inspect_jwt(&text) {
        Ok(_) => assert_eq!(text.trim().split('.').count(), 3, "{text:?}"),
        Err(e) => {
            // The message is the same for every input with that fault, so it quotes none.
            // (Not `!msg.contains(input)`: an input may be a piece of a message, F9.)
            let same_fault = match e {
                JwtShapeError::Empty => "",
                JwtShapeError::Segments => "a",
                JwtShapeError::Base64 => "!.!.!",
                JwtShapeError::Json => "e30.W10.e30",
                JwtShapeError::Exp => "e30.eyJleHAiOiJ4In0.e30",
                // `#[non_exhaustive]`: a fault added later needs its sample here.
                other => panic!("no sample input for {other:?}: add one"),
            };
            let other = inspect_jwt(same_fault).expect_err("a bad JWT");
            assert_eq!(other, e, "{same_fault:?}");
            assert_eq!(e.to_string(), other.to_string(), "{text:?}");
        }
    }
}

fn nonce(data: &[u8]) {
    if let Some(n) = nonce_of(data) {
        assert_eq!(n.as_bytes(), data);
        assert!((1..=1024).contains(&n.len()));
    }
    let text = String::from_utf8_lossy(data);
    let out = htu(&text);
    assert!(
        !out.contains('?') && !out.contains('#'),
        "{text:?} -> {out:?}"
    );
}

/// A token endpoint answer.
#[derive(Debug, Arbitrary)]
pub struct Answer {
    status: u16,
    fields: Vec<(Field, Kind)>,
    /// The body cut at this many bytes, when set.
    cut: Option<u16>,
}

#[derive(Debug, Arbitrary)]
enum Field {
    AccessToken,
    RefreshToken,
    TokenType,
    ExpiresIn,
    Scope,
    Error,
    ErrorDescription,
    Other(String),
}

#[derive(Debug, Arbitrary)]
enum Kind {
    Text(String),
    Number(i64),
    Float(f64),
    Bool(bool),
    Null,
    List(Vec<String>),
}

fn token_answer(a: &Answer) {
    let mut body = Map::new();
    for (field, kind) in &a.fields {
        let (name, secret) = match field {
            Field::AccessToken => ("access_token".to_owned(), true),
            Field::RefreshToken => ("refresh_token".to_owned(), true),
            Field::TokenType => ("token_type".to_owned(), false),
            Field::ExpiresIn => ("expires_in".to_owned(), false),
            Field::Scope => ("scope".to_owned(), false),
            Field::Error => ("error".to_owned(), false),
            Field::ErrorDescription => ("error_description".to_owned(), false),
            Field::Other(n) => (n.replace(MARKER, ""), false),
        };
        let clean = |s: &str| s.replace(MARKER, "");
        let value = match kind {
            Kind::Text(s) if secret => Value::String(format!("{MARKER}{}", clean(s))),
            Kind::Text(s) => Value::String(clean(s)),
            Kind::Number(n) => json!(n),
            Kind::Float(f) => json!(f),
            Kind::Bool(b) => json!(b),
            Kind::Null => Value::Null,
            Kind::List(l) => json!(l.iter().map(|s| clean(s)).collect::<Vec<_>>()),
        };
        body.insert(name, value);
    }
    let mut bytes = Value::Object(body).to_string().into_bytes();
    if let Some(cut) = a.cut {
        bytes.truncate(usize::from(cut));
    }
    let status = 100 + a.status % 500;
    if let Err(msg) = read_token_answer(status, &bytes) {
        assert!(!msg.is_empty());
        assert!(!msg.contains(MARKER), "a token in the error: {msg}");
    }
}

/// What a proof is made for.
#[derive(Debug, Arbitrary)]
pub struct Proof {
    htm: String,
    uri: String,
    nonce: Option<String>,
    ath: Option<String>,
}

fn proof(p: &Proof) {
    let Some(jws) = proof_with_new_key(&p.htm, &p.uri, p.nonce.as_deref(), p.ath.as_deref()) else {
        return;
    };
    let claims = inspect_jwt(&jws).expect("a proof reads back");
    assert_eq!(claims.typ.as_deref(), Some("dpop+jwt"));
    assert_eq!(claims.alg.as_deref(), Some("ES256"));
    assert_eq!(claims.nonce, p.nonce);
}
