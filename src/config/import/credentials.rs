//! Credentials written inside the strings a file passes to a server: a password in a URL's
//! user info (`postgresql://user:pw@host/db`), a credential among a URL's query or fragment
//! parameters (`?api_key=…`, `#access_token=…`), the value of a credential header given as an
//! argument (`--header "Authorization: Bearer …"`, `-H`), of a flag named for a secret
//! (`--api-key …`, `--token=…`) and of an `-e NAME=VALUE` / `--env NAME=VALUE` whose name is a
//! secret's. Each is found as a byte range of its string, so that only the value is replaced.
//!
//! A value that is a `${…}` reference is not a credential here: the file holds no secret, and
//! the import names the reference instead.

use std::ops::Range;

use super::names::{is_credential_header, references};

/// One credential inside a string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Found {
    /// The bytes of the value in the string.
    pub(super) span: Range<usize>,
    /// What it is, for a note: `the password of a URL`, `query parameter api_key`.
    pub(super) what: String,
    /// The last part of its `secret_ref`: `password`, `api_key`, `authorization`.
    pub(super) leaf: String,
    /// For `-e NAME=VALUE` / `--env NAME=VALUE`: `NAME`, the variable the value is for.
    pub(super) env: Option<String>,
}

impl Found {
    fn new(span: Range<usize>, what: String, leaf: &str) -> Self {
        Self {
            span,
            what,
            leaf: leaf.to_owned(),
            env: None,
        }
    }
}

/// Words that make a parameter, flag or variable name a credential's, once the name is split
/// at `-`, `_`, `.` and lower-to-upper case changes (`api_key`, `apiKey`, `X-Amz-Signature`,
/// `GITHUB_PAT`).
const SECRET_WORDS: &[&str] = &[
    "key",
    "apikey",
    "token",
    "accesstoken",
    "authtoken",
    "secret",
    "password",
    "passwd",
    "pwd",
    "pass",
    "pat",
    "sig",
    "signature",
    "credential",
    "credentials",
    "auth",
    "jwt",
];

/// Last words that make such a name one of a setting about the secret, not the secret
/// (`--api-key-file`, `--token-env`, `key_id`, `auth_mode`, `token_type`).
const NOT_A_VALUE: &[&str] = &[
    "file", "path", "dir", "env", "var", "name", "id", "type", "url", "uri", "endpoint", "mode",
    "method", "header", "scheme", "host", "port", "format", "kind", "provider", "region", "length",
    "len", "size", "ttl", "timeout", "expiry", "expires", "scope", "scopes", "user", "username",
    "hint", "prefix", "command", "cmd", "helper", "store",
];

/// Whether `name` (a query parameter, a flag without its dashes, a variable) names a secret.
pub(super) fn is_secret_name(name: &str) -> bool {
    let words = words(name);
    let Some(last) = words.last() else {
        return false;
    };
    !NOT_A_VALUE.contains(&last.as_str())
        && words.iter().any(|w| SECRET_WORDS.contains(&w.as_str()))
}

/// `name` split at `-`, `_`, `.` and where a lower-case letter or digit meets an upper-case
/// one, in lower case.
fn words(name: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut word = String::new();
    let mut prev_lower = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.' | ' ') {
            out.push(std::mem::take(&mut word));
            prev_lower = false;
            continue;
        }
        if c.is_uppercase() && prev_lower {
            out.push(std::mem::take(&mut word));
        }
        prev_lower = c.is_lowercase() || c.is_ascii_digit();
        word.extend(c.to_lowercase());
    }
    out.push(word);
    out.retain(|w| !w.is_empty());
    out
}

/// The credentials of the first URL in `s` (`scheme://` anywhere in it, so `--db=postgres://…`
/// and `DATABASE_URL=postgres://…` count): the password of its user info, and the values of
/// its query and fragment parameters that [name a secret](is_secret_name).
pub(super) fn in_url(s: &str) -> Vec<Found> {
    let Some(sep) = s.find("://") else {
        return Vec::new();
    };
    let scheme_start = s[..sep]
        .rfind(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.')))
        .map_or(0, |i| i + 1);
    if scheme_start == sep {
        return Vec::new();
    }
    let authority = sep + 3;
    let authority_end = s[authority..]
        .find(['/', '?', '#'])
        .map_or(s.len(), |i| authority + i);
    let mut out = Vec::new();
    if let Some(user) = user_info(s) {
        if let Some(colon) = s[user.clone()].find(':') {
            let password = user.start + colon + 1..user.end;
            if !password.is_empty() && references(&s[password.clone()]).is_empty() {
                out.push(Found::new(
                    password,
                    "the password of a URL".to_owned(),
                    "password",
                ));
            }
        }
    }
    let fragment = s[authority_end..].find('#').map(|i| authority_end + i);
    let query = s[authority_end..fragment.unwrap_or(s.len())]
        .find('?')
        .map(|i| authority_end + i);
    if let Some(q) = query {
        params(
            s,
            q + 1..fragment.unwrap_or(s.len()),
            "query",
            &['&'],
            &mut out,
        );
    }
    if let Some(f) = fragment {
        // A fragment may hold a route before its parameters: `#/cb?access_token=…`.
        params(s, f + 1..s.len(), "fragment", &['&', '?', ';'], &mut out);
    }
    out
}

/// The bytes of the user info (`user:password`, before the `@`) of the first URL in `s`.
pub(super) fn user_info(s: &str) -> Option<Range<usize>> {
    let authority = s.find("://")? + 3;
    let end = s[authority..]
        .find(['/', '?', '#'])
        .map_or(s.len(), |i| authority + i);
    let at = s[authority..end].rfind('@')?;
    Some(authority..authority + at)
}

/// The secret `name=value` parameters of `s[range]`, split at `seps`.
fn params(s: &str, range: Range<usize>, kind: &str, seps: &[char], out: &mut Vec<Found>) {
    let mut at = range.start;
    for part in s[range].split(seps) {
        if let Some((k, v)) = part.split_once('=') {
            let name = percent_decoded(k);
            if !v.is_empty() && references(v).is_empty() && is_secret_name(&name) {
                let start = at + k.len() + 1;
                out.push(Found::new(
                    start..start + v.len(),
                    format!("{kind} parameter `{}`", bounded(&name)),
                    &name,
                ));
            }
        }
        at += part.len() + 1;
    }
}

/// `s` with its `%XX` escapes decoded (an invalid one, or bytes that are not UTF-8, kept).
pub(super) fn percent_decoded(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (bytes[i], bytes.get(i + 1), bytes.get(i + 2)) {
            (b'%', Some(&h), Some(&l)) if hex(h).is_some() && hex(l).is_some() => {
                out.push((hex(h).unwrap_or(0) * 16 + hex(l).unwrap_or(0)) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

/// The credentials among `args` (a command's arguments, without the program), each with the
/// index of its argument: the value after a credential `--header`/`-H`, after a flag that
/// names a secret, of an `-e`/`--env NAME=VALUE` whose `NAME` names one, and those of a URL.
pub(super) fn in_args(args: &[String]) -> Vec<(usize, Found)> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let arg = args[i].as_str();
        // `--flag value`: the flag and the index of the argument holding its value.
        let (flag, value_at, value_start) = match arg.split_once('=') {
            Some((f, _)) if f.starts_with('-') => (f, i, f.len() + 1),
            _ if arg.starts_with('-') && i + 1 < args.len() => (arg, i + 1, 0),
            _ => ("", i, 0),
        };
        let value = &args[value_at][value_start..];
        let found = match flag {
            "" => None,
            "-e" | "--env" => env_arg(value),
            "-H" | "--header" => header_arg(value),
            f if f.starts_with("--") || f.len() > 2 => secret_flag(f, value),
            _ => None,
        };
        match found {
            Some(mut f) => {
                f.span = f.span.start + value_start..f.span.end + value_start;
                out.push((value_at, f));
                i = value_at + 1;
            }
            None => {
                out.extend(in_url(arg).into_iter().map(|f| (i, f)));
                i += 1;
            }
        }
    }
    out
}

/// `NAME=VALUE` of `-e`/`--env`, when `NAME` names a secret or `VALUE` is a URL with one.
fn env_arg(value: &str) -> Option<Found> {
    let (name, v) = value.split_once('=')?;
    let identifier = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    let secret = is_secret_name(name) || !in_url(v).is_empty();
    if !identifier || v.is_empty() || !references(v).is_empty() || !secret {
        return None;
    }
    Some(Found {
        span: name.len() + 1..value.len(),
        what: format!("the value of `{name}`"),
        leaf: name.to_owned(),
        env: Some(name.to_owned()),
    })
}

/// `Name: value` of `--header`/`-H`, when `Name` is a credential header.
fn header_arg(value: &str) -> Option<Found> {
    let colon = value.find(':')?;
    let name = value[..colon].trim();
    let rest = &value[colon + 1..];
    let v = rest.trim();
    if v.is_empty() || !references(v).is_empty() || !is_credential_header(name) {
        return None;
    }
    let start = colon + 1 + (rest.len() - rest.trim_start().len());
    Some(Found::new(
        start..start + v.len(),
        format!("the value of header `{}`", bounded(name)),
        &name.to_ascii_lowercase(),
    ))
}

/// The value of a flag that names a secret (`--api-key`, `--token`), unless it is a reference
/// or looks like another flag.
fn secret_flag(flag: &str, value: &str) -> Option<Found> {
    let name = flag.trim_start_matches('-');
    if value.is_empty() || value.starts_with("--") || !references(value).is_empty() {
        return None;
    }
    is_secret_name(name).then(|| {
        Found::new(
            0..value.len(),
            format!("the value of `{}`", bounded(flag)),
            name,
        )
    })
}

/// The most of a file's string a message shows, in characters.
const SHOWN_CHARS: usize = 200;

/// `s` for a message: at most [`SHOWN_CHARS`] characters (then `…`), escaped
/// ([`crate::escape::visible_cut`]).
pub(super) fn bounded(s: &str) -> String {
    crate::escape::visible_cut(s, SHOWN_CHARS)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values<'a>(s: &'a str, found: &[Found]) -> Vec<&'a str> {
        found.iter().map(|f| &s[f.span.clone()]).collect()
    }

    #[test]
    fn secret_names_are_told_by_their_words() {
        for n in [
            "api_key",
            "apiKey",
            "APIKEY",
            "key",
            "token",
            "access_token",
            "client_secret",
            "X-Amz-Signature",
            "sig",
            "password",
            "GITHUB_PAT",
            "api-token",
            "id_token",
            "auth",
        ] {
            assert!(is_secret_name(n), "{n}");
        }
        for n in [
            "api-key-file",
            "token-env",
            "key_id",
            "auth_mode",
            "token_type",
            "monkey",
            "page",
            "tools",
            "region",
            "keyword",
            "passthrough",
            "",
        ] {
            assert!(!is_secret_name(n), "{n}");
        }
    }

    #[test]
    fn a_url_gives_its_password_and_secret_parameters() {
        let s = "postgresql://user:pw%40x@db.example:5432/app?sslmode=require&api_token=t1#access_token=t2&state=s";
        assert_eq!(values(s, &in_url(s)), ["pw%40x", "t1", "t2"]);
        let s = "--db=redis://:hunter2@h/0";
        assert_eq!(values(s, &in_url(s)), ["hunter2"]);
        let s = "https://a.example/cb#/route?id_token=j.w.t";
        assert_eq!(values(s, &in_url(s)), ["j.w.t"]);
        for plain in [
            "https://a.example/mcp?page=2",
            "ssh://git@github.com/x",
            "postgresql://user@h/db",
            "https://u:${PW}@h/",
            "no url here",
            "://x",
        ] {
            assert!(in_url(plain).is_empty(), "{plain}");
        }
    }

    #[test]
    fn arguments_give_headers_flags_env_and_urls() {
        let args: Vec<String> = [
            "-y",
            "mcp-remote",
            "https://h/sse",
            "--header",
            "Authorization: Bearer tok1",
            "-H",
            "X-Region: eu",
            "--api-key",
            "k2",
            "--token=t3",
            "--api-key-file",
            "/etc/k",
            "-e",
            "GITHUB_TOKEN=g4",
            "-e",
            "LOG_LEVEL=debug",
            "--env=DB=postgres://u:p5@h/d",
            "--header=X-Api-Key:k6",
            "--token",
            "${TOKEN}",
            "postgresql://u:p7@h/db",
        ]
        .iter()
        .map(|s| (*s).to_owned())
        .collect();
        let found = in_args(&args);
        let got: Vec<(usize, &str, Option<&str>)> = found
            .iter()
            .map(|(i, f)| (*i, &args[*i][f.span.clone()], f.env.as_deref()))
            .collect();
        assert_eq!(
            got,
            [
                (4, "Bearer tok1", None),
                (8, "k2", None),
                (9, "t3", None),
                (13, "g4", Some("GITHUB_TOKEN")),
                (16, "postgres://u:p5@h/d", Some("DB")),
                (17, "k6", None),
                (20, "p7", None),
            ]
        );
    }
}
