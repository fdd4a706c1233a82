//! The naming rules of an import: server keys from names, which `env` names are plain
//! settings, which headers carry credentials, the segments of a `secret_ref`, and the `${…}`
//! references in a value.

use crate::config::is_valid_server_key;

/// The `env` names whose values stay in `project.yaml`: settings no server reads a secret
/// from. Every other variable is taken as a secret (see the [module docs](super)).
const PLAIN_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "TZ",
    "TERM",
    "TMPDIR",
    "NODE_ENV",
    "NODE_OPTIONS",
    "LOG_LEVEL",
    "LOGLEVEL",
    "DEBUG",
    "RUST_LOG",
    "RUST_BACKTRACE",
    "PYTHONPATH",
    "PYTHONUNBUFFERED",
    "PYTHONIOENCODING",
    "NO_COLOR",
    "FORCE_COLOR",
    "PORT",
    "HOST",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "XDG_STATE_HOME",
];

/// Whether the `env` variable `name` stays a plain value in `project.yaml`: one of a short
/// list of settings (`PATH`, `NODE_ENV`, `LOG_LEVEL`, `DEBUG`, `PORT`, …) or a name ending in
/// `_LOG_LEVEL`. Every other variable is taken as a secret.
pub fn is_plain_env(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    PLAIN_ENV.contains(&upper.as_str()) || upper.ends_with("_LOG_LEVEL")
}

/// Words that make a header name a credential's (`X-API-Key`, `X-Auth-Token`, `Api-Key`,
/// `Private-Token`, `X-Client-Secret`, …).
const CREDENTIAL_WORDS: &[&str] = &[
    "auth",
    "key",
    "token",
    "secret",
    "password",
    "passwd",
    "credential",
    "session",
    "signature",
    "cookie",
];

/// Whether the header `name` carries a credential: `Authorization`, `Proxy-Authorization`,
/// `Cookie`, or a name with `auth`, `key`, `token`, `secret`, `password`, `credential`,
/// `session` or `signature` in it (any case).
pub fn is_credential_header(name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    CREDENTIAL_WORDS.iter().any(|w| lower.contains(w))
}

/// The server key a name becomes: lower case; every character outside `a-z`, `0-9`, `_`
/// and `-` as `-`, runs of them as one; `mcp-` in front of a name that does not start with a
/// letter or is shorter than 2; at most 32 characters, ending with a letter or digit. The
/// result always passes [`is_valid_server_key`].
pub fn server_key(name: &str) -> String {
    let mut key = String::new();
    for c in name.chars() {
        let c = c.to_ascii_lowercase();
        let c = if c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-' {
            c
        } else {
            '-'
        };
        if matches!(c, '-' | '_') && (key.is_empty() || key.ends_with(['-', '_'])) {
            continue;
        }
        key.push(c);
        if key.len() >= 64 {
            break;
        }
    }
    let trim = |k: &mut String| {
        while k.ends_with(['-', '_']) {
            k.pop();
        }
    };
    trim(&mut key);
    if key.is_empty() {
        return "mcp-server".to_owned();
    }
    if !key.starts_with(|c: char| c.is_ascii_lowercase()) || key.len() < 2 {
        key.insert_str(0, "mcp-");
    }
    key.truncate(32);
    trim(&mut key);
    if !is_valid_server_key(&key) {
        return "mcp-server".to_owned();
    }
    key
}

/// A `secret_ref` segment for `name`: `[A-Za-z0-9_-]`, other characters as `_`, at most 64
/// characters, never empty.
pub(super) fn secret_segment(name: &str) -> String {
    let s: String = name
        .chars()
        .take(64)
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() {
        "value".to_owned()
    } else {
        s
    }
}

/// The `${…}` references in `value`, each as its name (`GITHUB_TOKEN` for `${GITHUB_TOKEN}`,
/// `${env:GITHUB_TOKEN}` and `${GITHUB_TOKEN:-default}`; `input:pat` for `${input:pat}`), or
/// `${…}` for one whose name is not a plain identifier. An unclosed `${` counts as one.
pub(super) fn references(value: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            out.push("${…}".to_owned());
            break;
        };
        let inner = &after[..end];
        let name = inner.split(":-").next().unwrap_or(inner);
        let name = name.strip_prefix("env:").unwrap_or(name);
        let plain = |s: &str| {
            !s.is_empty()
                && s.len() <= 100
                && s.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
        };
        let ok = match name.strip_prefix("input:") {
            Some(id) => plain(id),
            None => plain(name),
        };
        out.push(if ok {
            name.to_owned()
        } else {
            "${…}".to_owned()
        });
        rest = &after[end + 1..];
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_become_valid_server_keys() {
        for (name, key) in [
            ("github", "github"),
            ("GitHub Server", "github-server"),
            ("@scope/pkg.name", "scope-pkg-name"),
            ("1password", "mcp-1password"),
            ("x", "mcp-x"),
            ("", "mcp-server"),
            ("---", "mcp-server"),
            ("a_", "mcp-a"),
            ("Ünïcode", "n-code"),
            ("my__server--", "my_server"),
        ] {
            assert_eq!(server_key(name), key, "{name:?}");
            assert!(is_valid_server_key(&server_key(name)));
        }
        let long = "a".repeat(50) + "-b";
        assert_eq!(server_key(&long).len(), 32);
    }

    #[test]
    fn only_settings_stay_plain_env_values() {
        assert!(is_plain_env("NODE_ENV"));
        assert!(is_plain_env("path"));
        assert!(is_plain_env("GITHUB_LOG_LEVEL"));
        assert!(!is_plain_env("GITHUB_TOKEN"));
        assert!(!is_plain_env("DATABASE_URL"));
    }

    #[test]
    fn credential_headers_are_found_by_their_words() {
        for h in [
            "Authorization",
            "X-API-Key",
            "api-key",
            "X-Auth-Token",
            "Private-Token",
            "Cookie",
        ] {
            assert!(is_credential_header(h), "{h}");
        }
        for h in ["X-Region", "Accept-Language", "User-Agent"] {
            assert!(!is_credential_header(h), "{h}");
        }
    }

    #[test]
    fn references_are_named_without_their_defaults() {
        assert_eq!(
            references("Bearer ${TOKEN} and ${env:OTHER} ${input:pat} ${X:-dflt}"),
            ["TOKEN", "OTHER", "input:pat", "X"]
        );
        assert_eq!(references("${a b} ${"), ["${…}", "${…}"]);
        assert!(references("plain $HOME").is_empty());
    }
}
