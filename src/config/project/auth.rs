//! A server's `auth:` block (ADR-0043 §4): tiers 1 and 2 (`bearer`, `header`) with the
//! `secret_ref` that names the secret in `local.toml`, and tier 3 (`oauth`, issue 15) with its
//! optional client settings. Every key is checked; an OAuth block on a stdio server is refused
//! by the server walker (it has no HTTP request to authorize).

use http::HeaderName;
use url::Url;

use crate::config::secret::SecretRef;
use crate::config::yaml::{Node, Value};

use super::walk::Walk;
use super::{AuthConfig, AuthKind, ClientAuthMethod, IdentityProvider, OAuthConfig, OAuthGrant};

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
    "assertion_file",
    "identity_provider",
    "dpop",
    "issuer",
];
/// The keys of an `identity_provider` block (SEP-990).
pub const IDP_KEYS: &[&str] = &["token_endpoint", "id_token_file", "client_id", "secret_ref"];

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
    let assertion_file = node
        .get("assertion_file")
        .and_then(|n| assertion_file(w, n, &format!("{path}.assertion_file")));
    let identity_provider = node
        .get("identity_provider")
        .and_then(|n| identity_provider(w, n, &format!("{path}.identity_provider")));
    let dpop = node
        .get("dpop")
        .and_then(|n| w.boolean(n, &format!("{path}.dpop")))
        .unwrap_or(false);
    let issuer = node.get("issuer").and_then(|n| {
        endpoint(
            w,
            n,
            &format!("{path}.issuer"),
            "the authorization server's issuer",
        )
    });
    let config = OAuthConfig {
        client_id,
        token_endpoint_auth_method: method,
        client_metadata_url,
        scopes,
        grant,
        private_key_ref,
        assertion_file,
        identity_provider,
        dpop,
        issuer,
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

/// `assertion_file` at `p`: an absolute path (the file itself is read at each grant, so it
/// need not exist yet).
fn assertion_file(w: &mut Walk<'_>, n: &Node, p: &str) -> Option<std::path::PathBuf> {
    let s = w.string(n, p)?;
    let path = std::path::PathBuf::from(&s);
    if s.is_empty() || !path.is_absolute() {
        w.err(
            n,
            p,
            format!("`{}` is not an absolute path; name the token file as mounted, such as `/var/run/secrets/tokens/mcp-token`", s.escape_debug()),
        );
        return None;
    }
    Some(path)
}

/// `identity_provider` at `p`: the enterprise IdP of SEP-990.
fn identity_provider(w: &mut Walk<'_>, n: &Node, p: &str) -> Option<IdentityProvider> {
    let entries = w.map(n, p)?;
    for e in entries {
        if !matches!(
            e.key.as_str(),
            "token_endpoint" | "id_token_file" | "client_id" | "secret_ref"
        ) {
            w.err_key(
                n,
                e,
                &format!("{p}.{}", e.key),
                format!(
                    "unknown key `{}`; identity_provider has {}",
                    e.key,
                    IDP_KEYS.join(", ")
                ),
            );
        }
    }
    let before = w.errors.len();
    let token_endpoint = match n.get("token_endpoint") {
        None => {
            w.err(
                n,
                &format!("{p}.token_endpoint"),
                "missing; the IdP's token endpoint, where the ID token is exchanged (RFC 8693)",
            );
            None
        }
        Some(t) => endpoint(
            w,
            t,
            &format!("{p}.token_endpoint"),
            "the IdP's token endpoint",
        ),
    };
    let id_token_file = match n.get("id_token_file") {
        None => {
            w.err(
                n,
                &format!("{p}.id_token_file"),
                "missing; the file holding the ID token the IdP issued",
            );
            None
        }
        Some(f) => assertion_file(w, f, &format!("{p}.id_token_file")),
    };
    let client_id = n
        .get("client_id")
        .and_then(|c| w.string(c, &format!("{p}.client_id")));
    let secret_ref = n
        .get("secret_ref")
        .and_then(|r| secret_ref(w, r, &format!("{p}.secret_ref")));
    if secret_ref.is_some() && client_id.is_none() {
        w.err(
            n,
            &format!("{p}.client_id"),
            "a secret at the IdP (`secret_ref`) needs the `client_id` it belongs to",
        );
    }
    if w.errors.len() != before {
        return None;
    }
    Some(IdentityProvider {
        token_endpoint: token_endpoint?,
        id_token_file: id_token_file?,
        client_id,
        secret_ref,
    })
}

/// An endpoint URL at `p`, `what` it is for: one that [`may_receive_secrets`].
fn endpoint(w: &mut Walk<'_>, n: &Node, p: &str, what: &str) -> Option<Url> {
    let s = w.string(n, p)?;
    match Url::parse(&s) {
        Ok(u) if may_receive_secrets(&u) => Some(u),
        Ok(_) => {
            w.err(
                n,
                p,
                format!("{what} must be https (http only on a loopback address: 127.0.0.0/8, ::1, localhost)"),
            );
            None
        }
        Err(e) => {
            w.err(n, p, format!("not a URL: {e}"));
            None
        }
    }
}

/// Whether `url` may receive a secret (a client secret, an assertion, a code, a token): it is
/// `https`, or `http` to a loopback address (`127.0.0.0/8`, `::1`, `localhost`), where nothing
/// crosses a network. The one rule for every OAuth endpoint, configured (the IdP's token
/// endpoint, `auth.issuer`) or discovered (authorization servers and their endpoints).
pub(crate) fn may_receive_secrets(url: &Url) -> bool {
    match url.scheme() {
        "https" => url.host().is_some(),
        "http" => match url.host() {
            Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
            Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
            Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
            None => false,
        },
        _ => false,
    }
}

/// `grant` at `p`; the default, `authorization_code`, when it is not one.
fn grant(w: &mut Walk<'_>, n: &Node, p: &str) -> OAuthGrant {
    match w.string(n, p).as_deref() {
        Some("authorization_code") => OAuthGrant::AuthorizationCode,
        Some("client_credentials") => OAuthGrant::ClientCredentials,
        Some("jwt_bearer") => OAuthGrant::JwtBearer,
        Some(other) => {
            w.err(
                n,
                p,
                format!("unknown grant `{other}`; `authorization_code` (default), `client_credentials` or `jwt_bearer`"),
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
    check_jwt_bearer(w, server, node, path, config);
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

/// `grant: jwt_bearer` needs one source of assertions, `assertion_file` or
/// `identity_provider`, and either needs that grant.
fn check_jwt_bearer(w: &mut Walk<'_>, server: &str, node: &Node, path: &str, config: &OAuthConfig) {
    let jwt_bearer = config.grant == OAuthGrant::JwtBearer;
    let file = node.get("assertion_file");
    let idp = node.get("identity_provider");
    if jwt_bearer && file.is_none() && idp.is_none() {
        w.err(
            node,
            &format!("{path}.assertion_file"),
            format!("server `{server}`: `grant: jwt_bearer` needs `assertion_file`, the path of the workload's identity token (such as `/var/run/secrets/tokens/mcp-token`), or an `identity_provider` (SEP-990)"),
        );
    }
    if let (Some(_), Some(i)) = (file, idp) {
        w.err(
            i,
            &format!("{path}.identity_provider"),
            format!("server `{server}`: the assertion comes from `assertion_file` or from an `identity_provider`, not both"),
        );
    }
    if !jwt_bearer {
        for (key, n) in [("assertion_file", file), ("identity_provider", idp)] {
            if let Some(n) = n {
                w.err(
                    n,
                    &format!("{path}.{key}"),
                    format!("server `{server}`: `{key}` is only read by `grant: jwt_bearer` (this block's grant is `{}`)", config.grant.as_str()),
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_https_or_http_to_a_loopback_address_may_receive_secrets() {
        for ok in [
            "https://as.example.com/token",
            "https://10.0.0.1/token",
            "http://127.0.0.1:8080/as/token",
            "http://127.1.2.3/token",
            "http://[::1]:9000/token",
            "http://localhost/token",
            "http://LOCALHOST:1/token",
        ] {
            assert!(may_receive_secrets(&Url::parse(ok).unwrap()), "{ok}");
        }
        for refused in [
            "http://127.0.0.1.evil.com/token",
            "http://localhost.evil/token",
            "http://localhost.evil.com/token",
            "http://evil.localhost.com/token",
            "http://10.0.0.1/token",
            "http://10.255.255.1/as",
            "http://example.invalid/token",
            "http://[::2]/token",
            "http://[::ffff:10.0.0.1]/token",
            "http://0.0.0.0/token",
            "ftp://127.0.0.1/token",
            "ftp://as.example.com/token",
            "file:///etc/passwd",
            "ws://127.0.0.1/token",
            "data:text/plain,x",
        ] {
            assert!(
                !may_receive_secrets(&Url::parse(refused).unwrap()),
                "{refused}"
            );
        }
    }
}
