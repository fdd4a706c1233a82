//! Where a protected MCP server sends its clients: protected resource metadata (RFC 9728) and
//! the authorization server's metadata (RFC 8414, OpenID Connect discovery), in the order the
//! MCP authorization spec (2025-11-25) gives, with the 2025-03-26 fallbacks.
//!
//! - Resource metadata: the `resource_metadata` URL of the 401's challenge when there is one;
//!   else `/.well-known/oauth-protected-resource<path>`, and only when that is refused (4xx) the
//!   root `/.well-known/oauth-protected-resource`. Its `resource` must name this server: the
//!   same origin, and a path that is a prefix of the server's on a `/` boundary.
//! - Authorization server metadata, for an issuer without a path: `/.well-known/oauth-
//!   authorization-server`, then `/.well-known/openid-configuration`; with a path `/p`:
//!   `/.well-known/oauth-authorization-server/p`, `/.well-known/openid-configuration/p`,
//!   `/p/.well-known/openid-configuration` (never the root ones). The `issuer` must be the one
//!   asked for.
//! - No resource metadata at all (a 2025-03-26 server): the authorization server is the MCP
//!   server's origin; without its metadata, the default endpoints `/authorize`, `/token` and
//!   `/register` there.
//!
//! Every endpoint found (the authorization server named by the resource metadata, the
//! authorization, token and registration endpoints, the 2025-03-26 defaults) must be one that
//! [`may_receive_secrets`]: `https`, or `http` to a loopback address. Anything else is refused
//! here, before a request is made to it. With `auth.issuer` set, the authorization server must
//! be that one: the resource metadata must list it, and a 2025-03-26 server's metadata must
//! name it as the issuer of its own origin.

use serde_json::Value;
use url::Url;

use super::error::DocumentError;
use super::http::{Fetched, OAuthHttp};
use crate::config::may_receive_secrets;
use crate::escape::visible;
use crate::transport::http::{origin, redacted, same_origin};

/// What discovery found for one server.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The protected resource's identifier, sent as `resource` (RFC 8707); `None` for a
    /// 2025-03-26 server without resource metadata.
    pub(crate) resource: Option<String>,
    /// The resource's `scopes_supported`.
    pub(crate) resource_scopes: Vec<String>,
    /// The authorization server.
    pub(crate) server: AsMetadata,
}

/// The parts of an authorization server's metadata a client uses.
#[derive(Debug, Clone)]
pub(crate) struct AsMetadata {
    pub(crate) issuer: String,
    pub(crate) authorization_endpoint: Option<Url>,
    pub(crate) token_endpoint: Url,
    pub(crate) registration_endpoint: Option<Url>,
    pub(crate) scopes_supported: Vec<String>,
    pub(crate) token_endpoint_auth_methods_supported: Vec<String>,
    pub(crate) code_challenge_methods_supported: Option<Vec<String>>,
    pub(crate) client_id_metadata_document_supported: bool,
    /// `authorization_response_iss_parameter_supported` (RFC 9207): a redirect without `iss`
    /// is then refused.
    pub(crate) iss_parameter_supported: bool,
    /// The issuer came from metadata the server published (not the 2025-03-26 default
    /// endpoints): a redirect's `iss` is checked against it.
    pub(crate) issuer_published: bool,
    /// The metadata is the issuer's own (RFC 8414 section 3.3): fetched from the well-known
    /// URL made of `issuer`, or, for a 2025-03-26 server, `issuer` is the origin it was fetched
    /// from. Only then may `issuer` be compared with what the operator named.
    pub(crate) issuer_verified: bool,
}

/// Discovers where `server_url` sends its clients, from the `resource_metadata` URL of its
/// 401's challenge when it had one; `pinned` is the authorization server the operator named
/// (`auth.issuer`), if any.
///
/// # Errors
/// A message naming the URL that failed and why: unreachable, not JSON, a `resource` naming
/// another server, no usable authorization server, an endpoint that may not receive secrets,
/// an authorization server other than `pinned`.
pub(crate) async fn discover(
    http: &OAuthHttp,
    server_url: &Url,
    resource_metadata_url: Option<String>,
    pinned: Option<&Url>,
) -> Result<Discovered, DocumentError> {
    let prm = resource_metadata(http, server_url, resource_metadata_url).await?;
    let Some((prm_url, prm)) = prm else {
        return legacy(http, server_url, pinned).await;
    };
    let named = resource_document(&prm, &prm_url, server_url, pinned)?;
    let server = authorization_server(http, &named.issuer).await?;
    Ok(Discovered {
        resource: Some(named.resource),
        resource_scopes: named.scopes,
        server,
    })
}

/// What protected resource metadata names: the resource, its first authorization server and
/// its scopes.
#[derive(Debug)]
pub(crate) struct ResourceDocument {
    pub(crate) resource: String,
    pub(crate) issuer: Url,
    pub(crate) scopes: Vec<String>,
}

/// Reads the protected resource metadata `prm` found at `prm_url`: its `resource` must name
/// `server_url`; the authorization server is `pinned` when set (which it must list), else its
/// first `authorization_servers` entry, a URL that [`may_receive_secrets`].
pub(crate) fn resource_document(
    prm: &Value,
    prm_url: &Url,
    server_url: &Url,
    pinned: Option<&Url>,
) -> Result<ResourceDocument, DocumentError> {
    let resource = prm
        .get("resource")
        .and_then(Value::as_str)
        .ok_or_else(|| missing(prm_url, "resource"))?;
    if !names_server(resource, server_url) {
        return Err(DocumentError::ForeignResource {
            url: redacted(prm_url),
            resource: resource.to_owned(),
            server: redacted(server_url),
        });
    }
    let listed: Vec<&str> = prm
        .get("authorization_servers")
        .and_then(Value::as_array)
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let Some(first) = listed.first() else {
        return Err(missing(prm_url, "authorization_servers"));
    };
    let issuer = match pinned {
        None => first,
        Some(p) => listed
            .iter()
            .find(|s| same_issuer(s, p.as_str()))
            .ok_or_else(|| DocumentError::NotPinned {
                from: format!("the protected resource metadata at {}", redacted(prm_url)),
                found: visible(&listed.join(", ")).into_owned(),
                pinned: redacted(p),
            })?,
    };
    let what = format!(
        "the protected resource metadata at {}: `authorization_servers`",
        redacted(prm_url)
    );
    Ok(ResourceDocument {
        resource: resource.to_owned(),
        issuer: secure_url(issuer, &what)?,
        scopes: strings(prm, "scopes_supported"),
    })
}

/// Whether the issuer identifiers `a` and `b` are the same, a trailing `/` aside.
pub(crate) fn same_issuer(a: &str, b: &str) -> bool {
    a.trim_end_matches('/') == b.trim_end_matches('/')
}

/// The resource metadata and where it was found; `None` when the server has none (every
/// candidate refused with a 4xx).
async fn resource_metadata(
    http: &OAuthHttp,
    server_url: &Url,
    from_challenge: Option<String>,
) -> Result<Option<(Url, Value)>, DocumentError> {
    let candidates = match from_challenge {
        Some(u) => vec![parse_url(&u, "resource_metadata")?],
        None => {
            let base = origin(server_url);
            let path = server_url.path().trim_end_matches('/');
            let mut urls = Vec::with_capacity(2);
            if !path.is_empty() {
                urls.push(format!("{base}/.well-known/oauth-protected-resource{path}"));
            }
            urls.push(format!("{base}/.well-known/oauth-protected-resource"));
            urls.iter()
                .map(|u| parse_url(u, "resource metadata"))
                .collect::<Result<_, _>>()?
        }
    };
    for url in candidates {
        let fetched = http.get_json(&url).await?;
        if let Some(json) = metadata_answer(&url, fetched)? {
            return Ok(Some((url, json)));
        }
    }
    Ok(None)
}

/// Whether the metadata's `resource` identifies `server_url`: same origin, and its path a
/// prefix of the server's on a segment boundary (`https://h` and `https://h/mcp` both name
/// `https://h/mcp`).
fn names_server(resource: &str, server_url: &Url) -> bool {
    let Ok(r) = Url::parse(resource) else {
        return false;
    };
    if origin(&r) != origin(server_url) || r.fragment().is_some() {
        return false;
    }
    let rp = r.path().trim_end_matches('/');
    let sp = server_url.path().trim_end_matches('/');
    rp.is_empty() || sp == rp || sp.starts_with(&format!("{rp}/"))
}

/// The metadata of the authorization server `issuer`, tried at its well-known URLs in order.
async fn authorization_server(http: &OAuthHttp, issuer: &Url) -> Result<AsMetadata, DocumentError> {
    let base = origin(issuer);
    let path = issuer.path().trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec![
            format!("{base}/.well-known/oauth-authorization-server"),
            format!("{base}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{base}/.well-known/oauth-authorization-server{path}"),
            format!("{base}/.well-known/openid-configuration{path}"),
            format!("{base}{path}/.well-known/openid-configuration"),
        ]
    };
    let wanted = issuer.as_str().trim_end_matches('/');
    for candidate in &candidates {
        let url = parse_url(candidate, "authorization server metadata")?;
        let Some(json) = fetch_metadata(http, &url).await? else {
            continue;
        };
        return server_document(&json, &url, wanted).map(|meta| AsMetadata {
            issuer_verified: true,
            ..meta
        });
    }
    Err(DocumentError::NoMetadata {
        issuer: redacted(issuer),
        tried: candidates.join(", "),
    })
}

/// A server without resource metadata (2025-03-26): the authorization server is its origin.
async fn legacy(
    http: &OAuthHttp,
    server_url: &Url,
    pinned: Option<&Url>,
) -> Result<Discovered, DocumentError> {
    let base = origin(server_url);
    for candidate in [
        format!("{base}/.well-known/oauth-authorization-server"),
        format!("{base}/.well-known/openid-configuration"),
    ] {
        let url = parse_url(&candidate, "authorization server metadata")?;
        if let Some(json) = fetch_metadata(http, &url).await? {
            // A 2025-03-26 server's issuer need not be its origin: no issuer check here, but
            // only an issuer that is that origin is known to be the one that answered.
            let mut server = as_metadata(&json, &url)?;
            server.issuer_verified = Url::parse(&server.issuer).is_ok_and(|i| {
                same_origin(&i, server_url) && i.path().trim_end_matches('/').is_empty()
            });
            if let Some(p) = pinned {
                let from = format!("the 2025-03-26 metadata at {}", redacted(&url));
                if !same_issuer(&server.issuer, p.as_str()) {
                    return Err(DocumentError::NotPinned {
                        from,
                        found: visible(&server.issuer).into_owned(),
                        pinned: redacted(p),
                    });
                }
                if !server.issuer_verified {
                    return Err(DocumentError::UnverifiedIssuer {
                        url: redacted(&url),
                        issuer: visible(&server.issuer).into_owned(),
                    });
                }
            }
            return Ok(Discovered {
                resource: None,
                resource_scopes: Vec::new(),
                server,
            });
        }
    }
    let what = format!(
        "the 2025-03-26 default endpoints of {}",
        redacted(server_url)
    );
    if let Some(p) = pinned.filter(|p| !same_issuer(&base, p.as_str())) {
        return Err(DocumentError::NotPinned {
            from: what,
            found: base,
            pinned: redacted(p),
        });
    }
    let endpoint = |path: &str| secure_url(&format!("{base}{path}"), &what);
    Ok(Discovered {
        resource: None,
        resource_scopes: Vec::new(),
        server: AsMetadata {
            issuer: base.clone(),
            authorization_endpoint: Some(endpoint("/authorize")?),
            token_endpoint: endpoint("/token")?,
            registration_endpoint: Some(endpoint("/register")?),
            scopes_supported: Vec::new(),
            token_endpoint_auth_methods_supported: Vec::new(),
            code_challenge_methods_supported: None,
            client_id_metadata_document_supported: false,
            iss_parameter_supported: false,
            issuer_published: false,
            issuer_verified: true,
        },
    })
}

/// The JSON object at `url`; `None` when it is refused (4xx).
async fn fetch_metadata(http: &OAuthHttp, url: &Url) -> Result<Option<Value>, DocumentError> {
    let fetched = http.get_json(url).await?;
    metadata_answer(url, fetched)
}

/// What a metadata document's answer from `url` holds: `None` when it was refused (4xx), the
/// JSON object when it was a success, else an error naming the URL.
pub(crate) fn metadata_answer(url: &Url, fetched: Fetched) -> Result<Option<Value>, DocumentError> {
    if fetched.status.is_client_error() {
        return Ok(None);
    }
    if !fetched.status.is_success() {
        return Err(DocumentError::Status {
            url: redacted(url),
            status: fetched.status,
        });
    }
    fetched
        .json
        .filter(Value::is_object)
        .map(Some)
        .ok_or_else(|| DocumentError::NotAnObject { url: redacted(url) })
}

/// The authorization server metadata `json` found at `url`, whose issuer must be `wanted`
/// (a trailing `/` aside).
pub(crate) fn server_document(
    json: &Value,
    url: &Url,
    wanted: &str,
) -> Result<AsMetadata, DocumentError> {
    let meta = as_metadata(json, url)?;
    if !same_issuer(&meta.issuer, wanted) {
        return Err(DocumentError::WrongIssuer {
            url: redacted(url),
            found: meta.issuer,
            wanted: wanted.to_owned(),
        });
    }
    Ok(meta)
}

fn as_metadata(json: &Value, from: &Url) -> Result<AsMetadata, DocumentError> {
    let url_field = |key: &str| -> Result<Option<Url>, DocumentError> {
        json.get(key)
            .and_then(Value::as_str)
            .map(|s| {
                let what = format!(
                    "the authorization server metadata at {}: `{key}`",
                    redacted(from)
                );
                secure_url(s, &what)
            })
            .transpose()
    };
    let token_endpoint =
        url_field("token_endpoint")?.ok_or_else(|| missing(from, "token_endpoint"))?;
    Ok(AsMetadata {
        issuer: json
            .get("issuer")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned(),
        authorization_endpoint: url_field("authorization_endpoint")?,
        token_endpoint,
        registration_endpoint: url_field("registration_endpoint")?,
        scopes_supported: strings(json, "scopes_supported"),
        token_endpoint_auth_methods_supported: strings(
            json,
            "token_endpoint_auth_methods_supported",
        ),
        code_challenge_methods_supported: json
            .get("code_challenge_methods_supported")
            .map(|_| strings(json, "code_challenge_methods_supported")),
        client_id_metadata_document_supported: json
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        iss_parameter_supported: json
            .get("authorization_response_iss_parameter_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        issuer_published: true,
        issuer_verified: false,
    })
}

/// A document at `url` without its `key`.
fn missing(url: &Url, key: &'static str) -> DocumentError {
    DocumentError::Missing {
        url: redacted(url),
        key,
    }
}

/// A URL of a metadata document, or an error naming where it came from.
pub(crate) fn parse_url(s: &str, what: &str) -> Result<Url, DocumentError> {
    let url = Url::parse(s).map_err(|source| DocumentError::NotAUrl {
        what: what.to_owned(),
        value: s.to_owned(),
        source,
    })?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(DocumentError::NotHttp {
            what: what.to_owned(),
            url: redacted(&url),
        });
    }
    Ok(url)
}

/// A URL a secret may be sent to, found as `what` (the document and its key): one that
/// [`may_receive_secrets`], or an error naming the document, the key and the URL.
fn secure_url(s: &str, what: &str) -> Result<Url, DocumentError> {
    let url = parse_url(s, what)?;
    if !may_receive_secrets(&url) {
        return Err(DocumentError::Insecure {
            what: what.to_owned(),
            url: visible(&redacted(&url)).into_owned(),
        });
    }
    Ok(url)
}

fn strings(json: &Value, key: &str) -> Vec<String> {
    json.get(key)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_resource_names_the_server_by_origin_and_path_prefix() {
        let server = Url::parse("http://localhost:3000/mcp").unwrap();
        assert!(names_server("http://localhost:3000/mcp", &server));
        assert!(names_server("http://localhost:3000", &server));
        assert!(names_server("http://localhost:3000/", &server));
        assert!(names_server("http://localhost:3000/mcp/", &server));
        assert!(!names_server("http://localhost:3000/mc", &server));
        assert!(!names_server("https://evil.example.com/mcp", &server));
        assert!(!names_server("http://localhost:3001/mcp", &server));
        assert!(!names_server("http://localhost:3000/mcp/deeper", &server));
        assert!(!names_server("not a url", &server));
    }

    fn prm(servers: &[&str]) -> Value {
        serde_json::json!({"resource": "https://mcp.test/mcp", "authorization_servers": servers})
    }

    #[test]
    fn the_resource_metadata_names_no_authorization_server_over_plain_http() {
        let at = Url::parse("https://mcp.test/.well-known/oauth-protected-resource/mcp").unwrap();
        let server = Url::parse("https://mcp.test/mcp").unwrap();
        for bad in [
            "http://10.255.255.1/as",
            "http://127.0.0.1.evil.test/as",
            "http://localhost.evil/as",
        ] {
            let err = resource_document(&prm(&[bad]), &at, &server, None).unwrap_err();
            let text = err.to_string();
            assert!(matches!(err, DocumentError::Insecure { .. }), "{text}");
            for part in [at.as_str(), "`authorization_servers`", bad] {
                assert!(text.contains(part), "{part} not in {text}");
            }
        }
        for ok in [
            "https://as.test",
            "http://127.0.0.1:9/as",
            "http://[::1]:9/as",
        ] {
            let doc = resource_document(&prm(&[ok]), &at, &server, None).unwrap();
            assert!(same_issuer(doc.issuer.as_str(), ok), "{ok}");
        }
    }

    #[test]
    fn a_pinned_issuer_is_chosen_among_those_listed_or_refused() {
        let at = Url::parse("https://mcp.test/.well-known/oauth-protected-resource").unwrap();
        let server = Url::parse("https://mcp.test/mcp").unwrap();
        let pinned = Url::parse("https://as.operator.test").unwrap();
        let listed = prm(&["https://as.evil.test", "https://as.operator.test/"]);
        let doc = resource_document(&listed, &at, &server, Some(&pinned)).unwrap();
        assert_eq!(doc.issuer.as_str(), "https://as.operator.test/");
        let doc = resource_document(&listed, &at, &server, None).unwrap();
        assert_eq!(doc.issuer.as_str(), "https://as.evil.test/");
        let hostile = prm(&["https://as.evil.test", "https://as.operator.test.evil.test"]);
        let err = resource_document(&hostile, &at, &server, Some(&pinned)).unwrap_err();
        let text = err.to_string();
        assert!(matches!(err, DocumentError::NotPinned { .. }), "{text}");
        assert!(text.contains("https://as.evil.test, https://as.operator.test.evil.test"));
        assert!(text.contains("`https://as.operator.test/` that `auth.issuer` names"));
    }

    #[test]
    fn every_endpoint_of_the_metadata_must_be_https_or_loopback() {
        let at = Url::parse("https://as.test/.well-known/oauth-authorization-server").unwrap();
        let good = serde_json::json!({
            "issuer": "https://as.test",
            "token_endpoint": "https://as.test/token",
            "authorization_endpoint": "https://as.test/authorize",
            "registration_endpoint": "http://localhost:8080/register",
        });
        let meta = server_document(&good, &at, "https://as.test").unwrap();
        assert!(!meta.issuer_verified, "set by the fetch, not the reading");
        for key in [
            "token_endpoint",
            "authorization_endpoint",
            "registration_endpoint",
        ] {
            let mut bad = good.clone();
            bad[key] = Value::from("http://as.test/\u{202e}x");
            let text = server_document(&bad, &at, "https://as.test")
                .unwrap_err()
                .to_string();
            for part in [
                at.as_str(),
                &format!("`{key}`"),
                "http://as.test/%E2%80%AEx",
            ] {
                assert!(text.contains(part), "{part} not in {text}");
            }
        }
    }

    #[test]
    fn issuers_are_the_same_but_for_a_trailing_slash() {
        assert!(same_issuer("https://as.test/", "https://as.test"));
        assert!(same_issuer("https://as.test/t1", "https://as.test/t1/"));
        assert!(!same_issuer("https://as.test/t1", "https://as.test/t2"));
        assert!(!same_issuer("https://AS.test", "https://as.test"));
    }
}
