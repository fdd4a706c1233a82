//! The `endpoint` event: the URL to POST to, resolved against the stream's URL and kept on the
//! stream's origin.
//!
//! Servers send a relative reference (`/messages/?session_id=…` from the Python SDK,
//! `/message?sessionId=…` from the TypeScript SDK); an absolute one is accepted when its scheme,
//! host and port are the stream's. Anything else is refused, so the auth header, which goes on
//! every POST, never reaches a host the operator did not declare.

use std::fmt;

use url::Url;

use crate::transport::http::{origin, same_origin};

/// Why an `endpoint` event was refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum EndpointError {
    /// The data is not a URL reference.
    Invalid(String),
    /// The endpoint is on another origin; the field holds it as received.
    Foreign(String),
}

impl fmt::Display for EndpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Invalid(why) => write!(f, "the endpoint event is not a valid URL: {why}"),
            Self::Foreign(url) => write!(
                f,
                "the endpoint event names another origin ({}); refusing to send anything there",
                url.escape_debug()
            ),
        }
    }
}

/// The POST URL for the endpoint event's `data`, checked to be on `base`'s origin.
pub(crate) fn resolve(base: &Url, data: &str) -> Result<Url, EndpointError> {
    let data = data.trim();
    if data.is_empty() {
        return Err(EndpointError::Invalid("it is empty".into()));
    }
    let mut url = base
        .join(data)
        .map_err(|e| EndpointError::Invalid(e.to_string()))?;
    url.set_fragment(None);
    let same = same_origin(&url, base) && url.username().is_empty() && url.password().is_none();
    if !same {
        return Err(EndpointError::Foreign(origin(&url)));
    }
    Ok(url)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> Url {
        Url::parse("http://127.0.0.1:3001/sse").unwrap()
    }

    #[test]
    fn a_relative_endpoint_is_resolved_against_the_stream_url() {
        let url = resolve(&base(), "/messages/?session_id=0123abcd").unwrap();
        assert_eq!(
            url.as_str(),
            "http://127.0.0.1:3001/messages/?session_id=0123abcd"
        );
        let url = resolve(&base(), "message?sessionId=x-y").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:3001/message?sessionId=x-y");
    }

    #[test]
    fn a_relative_endpoint_keeps_a_path_prefix() {
        let base = Url::parse("https://mcp.example/api/v1/sse").unwrap();
        let url = resolve(&base, "messages?s=1").unwrap();
        assert_eq!(url.as_str(), "https://mcp.example/api/v1/messages?s=1");
    }

    #[test]
    fn an_absolute_endpoint_on_the_same_origin_is_accepted() {
        let url = resolve(&base(), " http://127.0.0.1:3001/m?s=1#frag\r\n").unwrap();
        assert_eq!(url.as_str(), "http://127.0.0.1:3001/m?s=1");
        let base = Url::parse("https://h.example/sse").unwrap();
        assert!(resolve(&base, "https://h.example:443/m").is_ok());
    }

    #[test]
    fn another_host_port_or_scheme_is_refused() {
        for foreign in [
            "http://127.0.0.2:3001/messages",
            "http://127.0.0.1:3002/messages",
            "https://127.0.0.1:3001/messages",
            "//evil.example/messages",
            "http://user:pw@127.0.0.1:3001/messages",
        ] {
            let err = resolve(&base(), foreign).unwrap_err();
            assert!(
                matches!(err, EndpointError::Foreign(_)),
                "{foreign}: {err:?}"
            );
        }
        let err = resolve(&base(), "http://127.0.0.2:3001/x?s=1").unwrap_err();
        assert_eq!(
            err.to_string(),
            "the endpoint event names another origin (http://127.0.0.2:3001); refusing to send \
             anything there"
        );
    }

    #[test]
    fn an_empty_or_broken_endpoint_is_invalid() {
        assert!(matches!(
            resolve(&base(), "  "),
            Err(EndpointError::Invalid(_))
        ));
        assert!(matches!(
            resolve(&base(), "http://[::1"),
            Err(EndpointError::Invalid(_))
        ));
    }
}
