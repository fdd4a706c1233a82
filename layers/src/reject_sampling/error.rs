//! Error of [`RejectSampling`](super::RejectSampling).

use std::fmt;
use std::sync::Arc;

/// A server→client request refused by [`RejectSampling`](super::RejectSampling).
///
/// Found in a [`BoxError`](tower::BoxError) with `err.is::<Rejected>()`; the caller answers the
/// server with a JSON-RPC error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejected {
    server: Arc<str>,
    method: &'static str,
    request_id: Option<String>,
}

impl Rejected {
    pub(crate) const fn new(
        server: Arc<str>,
        method: &'static str,
        request_id: Option<String>,
    ) -> Self {
        Self {
            server,
            method,
            request_id,
        }
    }

    /// The label of the server that sent the request.
    pub fn server(&self) -> &str {
        &self.server
    }

    /// The refused JSON-RPC method.
    pub const fn method(&self) -> &str {
        self.method
    }

    /// The JSON-RPC id of the refused request, as rendered by
    /// [`JsonRpcMethod::request_id`](super::JsonRpcMethod::request_id).
    pub fn request_id(&self) -> Option<&str> {
        self.request_id.as_deref()
    }
}

impl fmt::Display for Rejected {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "server {:?} sent {}", &*self.server, self.method)?;
        if let Some(id) = &self.request_id {
            write!(f, " (request id {id})")?;
        }
        f.write_str(": refused, the client does not support it")
    }
}

impl std::error::Error for Rejected {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_names_server_method_and_request_id() {
        let err = Rejected::new("github".into(), "sampling/createMessage", Some("4".into()));
        assert_eq!(
            err.to_string(),
            "server \"github\" sent sampling/createMessage (request id 4): refused, the client does not support it"
        );
    }

    #[test]
    fn display_omits_a_missing_request_id() {
        let err = Rejected::new("s".into(), "sampling/createMessage", None);
        assert!(!err.to_string().contains("request id"));
    }
}
