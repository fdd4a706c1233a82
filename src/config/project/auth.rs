//! A server's `auth:` block (ADR-0043 §4): tiers 1 and 2 (`bearer`, `header`) with the
//! `secret_ref` that names the secret in `local.toml`, and tier 3 (`oauth`, issue 15) with its
//! optional client settings. Every key is checked; an OAuth block on a stdio server is refused
//! by the server walker (it has no HTTP request to authorize).

use http::HeaderName;
use url::Url;

use crate::config::secret::SecretRef;
use crate::config::yaml::{Node, Value};

use super::walk::Walk;
use super::{AuthConfig, AuthKind, ClientAuthMethod, OAuthConfig, OAuthGrant};

/// The keys of a static (`bearer`, `header`) `auth:` block.
pub const STATIC_KEYS: &[&str] = &["type", "header_name", "secret_ref"];
/// The keys of an `oauth` `auth:` block.
pub const OAUTH_KEYS: &[&str] = &[
    "type",
    "client_id",
    "secret_ref",
    "token_endpoint_auth_method",
    "client_metadata_url",
    "scopes",
    "grant",
    "private_key_ref",
];

/// Reads `auth:` of the server `server`.
pub(super) fn auth(w: &mut Walk<'_>, server: &str, node: &Node, path: &str) -> Option<AuthConfig> {
    let entries = w.map(node, path)?;
    let kind = match node.get("type") {
        None => {
            w.err(
                node,
                &format!("{path}.type"),
                "missing; `type` is `bearer`, `header` or `oauth`",
            );
            None
        }
        Some(t) => match &t.value {
            Value::Str(s) if s == "bearer" => Some(AuthKind::Bearer),
            Value::Str(s) if s == "header" => Some(AuthKind::Header),
            Value::Str(s) if s == "oauth" => Some(AuthKind::OAuth),
            Value::Str(s) => {
                w.err(
                    t,
                    &format!("{path}.type"),
                    format!(
                        "server `{server}`: unknown auth type `{s}`; supported: `bearer`, `header`, `oauth`"
                    ),
                );
                None
            }
            _ => {
                w.err(
                    t,
                    &format!("{path}.type"),
                    format!(
                        "expected `bearer`, `header` or `oauth`, found {}",
                        t.type_name()
                    ),
                );
                None
            }
        },
    };
    let oauth = kind == Some(AuthKind::OAuth);
    for e in entries {
        let keys = if oauth { OAUTH_KEYS } else { STATIC_KEYS };
        if !keys.contains(&e.key.as_str()) {
            w.err_key(
                node,
                e,
                &format!("{path}.{}", e.key),
                format!("unknown key `{}`; auth has {}", e.key, keys.join(", ")),
            );
        }
    }
    let header_name = match node.get("header_name") {
        None => Some(http::header::AUTHORIZATION),
        Some(_) if oauth => None,
        Some(h) => {
            let p = format!("{path}.header_name");
            let s = w.string(h, &p)?;
            if kind == Some(AuthKind::Bearer) && !s.eq_ignore_ascii_case("authorization") {
                w.err(
                    h,
                    &p,
                    "`type: bearer` always uses `Authorization`; use `type: header` for another header",
                );
                None
            } else {
                match HeaderName::from_bytes(s.as_bytes()) {
                    Ok(n) => Some(n),
                    Err(_) => {
                        w.err(h, &p, format!("`{s}` is not a valid HTTP header name"));
                        None
                    }
                }
            }
        }
    };
    let secret_ref = match node.get("secret_ref") {
        None if oauth => None,
        None => {
            w.err(
                node,
                &format!("{path}.secret_ref"),
                "missing; name the secret in local.toml [secrets], such as `api_keys.example`",
            );
            return None;
        }
        Some(r) => Some(secret_ref(w, r, &format!("{path}.secret_ref"))?),
    };
    let oauth_config = if oauth {
        Some(oauth_block(w, server, node, path, secret_ref.is_some())?)
    } else {
        None
    };
    Some(AuthConfig {
        kind: kind?,
        header_name: header_name?,
        secret_ref,
        oauth: oauth_config,
    })
}

/// A dotted `secret_ref` (or `private_key_ref`) at `path`.
pub(super) fn secret_ref(w: &mut Walk<'_>, node: &Node, path: &str) -> Option<SecretRef> {
    let s = w.string(node, path)?;
    match SecretRef::parse(&s) {
        Ok(r) => Some(r),
        Err(msg) => {
            w.err(node, path, msg);
            None
        }
    }
}

/// The OAuth settings of an `auth: {type: oauth}` block; `has_secret` tells whether it has a
/// `secret_ref` (the client secret).
fn oauth_block(
    w: &mut Walk<'_>,
    server: &str,
    node: &Node,
    path: &str,
    has_secret: bool,
) -> Option<OAuthConfig> {
    let before = w.errors.len();
    let client_id = node
        .get("client_id")
        .and_then(|n| w.string(n, &format!("{path}.client_id")));
    let method = node
        .get("token_endpoint_auth_method")
        .and_then(|n| auth_method(w, n, &format!("{path}.token_endpoint_auth_method")));
    let client_metadata_url = node
        .get("client_metadata_url")
        .and_then(|n| client_metadata_url(w, n, &format!("{path}.client_metadata_url")));
    let scopes = node
        .get("scopes")
        .and_then(|n| scopes(w, n, &format!("{path}.scopes")));
    let grant = match node.get("grant") {
        None => OAuthGrant::AuthorizationCode,
        Some(n) => grant(w, n, &format!("{path}.grant")),
    };
    let private_key_ref = node
        .get("private_key_ref")
        .and_then(|n| secret_ref(w, n, &format!("{path}.private_key_ref")));
    let config = OAuthConfig {
        client_id,
        token_endpoint_auth_method: method,
        client_metadata_url,
        scopes,
        grant,
        private_key_ref,
    };
    check_needs(w, server, node, path, has_secret, &config);
    if w.errors.len() != before {
        return None;
    }
    Some(config)
}

/// `token_endpoint_auth_method` at `p`.
fn auth_method(w: &mut Walk<'_>, n: &Node, p: &str) -> Option<ClientAuthMethod> {
    let s = w.string(n, p)?;
    let m = ClientAuthMethod::parse(&s);
    if m.is_none() {
        w.err(
            n,
            p,
            format!("unknown method `{s}`; one of client_secret_basic, client_secret_post, none, private_key_jwt"),
        );
    }
    m
}

/// `client_metadata_url` at `p`: an https URL with a path.
fn client_metadata_url(w: &mut Walk<'_>, n: &Node, p: &str) -> Option<Url> {
    let s = w.string(n, p)?;
    match Url::parse(&s) {
        Ok(u) if u.scheme() == "https" && u.path() != "/" && u.path() != "" => Some(u),
        Ok(_) => {
            w.err(
                n,
                p,
                "a client ID metadata document URL must be https with a path",
            );
            None
        }
        Err(e) => {
            w.err(n, p, format!("not a URL: {e}"));
            None
        }
    }
}

/// `scopes` at `p`: a list of single scopes (one with a space or a quote is refused and left
/// out).
fn scopes(w: &mut Walk<'_>, n: &Node, p: &str) -> Option<Vec<String>> {
    let list = w.string_list(n, p)?;
    let mut out = Vec::with_capacity(list.len());
    for (i, (s, item)) in list.into_iter().enumerate() {
        if s.chars()
            .any(|c| c.is_whitespace() || c == '"' || c == '\\')
        {
            w.err(
                &item,
                &format!("{p}[{i}]"),
                format!(
                    "`{}` is not one scope (no spaces or quotes)",
                    s.escape_debug()
                ),
            );
        } else {
            out.push(s);
        }
    }
    Some(out)
}

/// `grant` at `p`; the default, `authorization_code`, when it is not one.
fn grant(w: &mut Walk<'_>, n: &Node, p: &str) -> OAuthGrant {
    match w.string(n, p).as_deref() {
        Some("authorization_code") => OAuthGrant::AuthorizationCode,
        Some("client_credentials") => OAuthGrant::ClientCredentials,
        Some(other) => {
            w.err(
                n,
                p,
                format!("unknown grant `{other}`; `authorization_code` (default) or `client_credentials`"),
            );
            OAuthGrant::AuthorizationCode
        }
        None => OAuthGrant::AuthorizationCode,
    }
}

/// What the OAuth settings need of each other: a `client_id` for a secret, a key or the
/// client-credentials grant, and the credentials the grant or the method asks for.
fn check_needs(
    w: &mut Walk<'_>,
    server: &str,
    node: &Node,
    path: &str,
    has_secret: bool,
    config: &OAuthConfig,
) {
    let client_id = &config.client_id;
    let private_key_ref = &config.private_key_ref;
    let grant = config.grant;
    let needs_client =
        |what: &str| format!("server `{server}`: {what} needs a pre-registered `client_id`");
    if grant == OAuthGrant::ClientCredentials && client_id.is_none() {
        w.err(
            node,
            &format!("{path}.client_id"),
            needs_client("`grant: client_credentials`"),
        );
    }
    if grant == OAuthGrant::ClientCredentials && !has_secret && private_key_ref.is_none() {
        w.err(
            node,
            &format!("{path}.secret_ref"),
            format!("server `{server}`: `grant: client_credentials` needs the client's credentials: a `secret_ref` (its secret) or a `private_key_ref` (private_key_jwt)"),
        );
    }
    if has_secret && client_id.is_none() {
        w.err(
            node,
            &format!("{path}.client_id"),
            needs_client("a client secret (`secret_ref`)"),
        );
    }
    if private_key_ref.is_some() && client_id.is_none() {
        w.err(
            node,
            &format!("{path}.client_id"),
            needs_client("`private_key_ref`"),
        );
    }
    match config.token_endpoint_auth_method {
        Some(ClientAuthMethod::PrivateKeyJwt) if private_key_ref.is_none() => w.err(
            node,
            &format!("{path}.private_key_ref"),
            format!("server `{server}`: `token_endpoint_auth_method: private_key_jwt` needs `private_key_ref` (a PKCS#8 PEM EC P-256 key in local.toml)"),
        ),
        Some(ClientAuthMethod::ClientSecretBasic | ClientAuthMethod::ClientSecretPost)
            if !has_secret =>
        {
            w.err(
                node,
                &format!("{path}.secret_ref"),
                format!("server `{server}`: a client_secret method needs `secret_ref` (the client secret in local.toml)"),
            );
        }
        _ => {}
    }
}
