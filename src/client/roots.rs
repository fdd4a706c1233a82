//! Roots: the directories an operator lets a server see (`project.yaml`
//! `mcp.<key>.roots`), given to the server as `file://` URIs. With roots set
//! ([`ClientOptions::roots`](super::ClientOptions::roots)), the client advertises the `roots`
//! capability (`listChanged: false`: the roots are fixed for the client's life) and `Roots`
//! answers `roots/list` in the server→client request stack, in either era (a 2026-07-28
//! server asks for them in an `input_required` answer, which takes the same stack); without,
//! nothing is advertised and `roots/list` is refused "method not found" as any unknown request.

use crate::protocol::method::{ListRoots, ServerRequestKind as _};
use std::fmt;
use std::future::{ready, Ready};
use std::path::Path;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::Either;
use serde::Serialize;
use serde_json::Value;
use tower::{BoxError, Service};

use crate::protocol::ServerRequest;

/// One root: a `file://` URI and a name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Root {
    /// The root's `file://` URI.
    pub uri: String,
    /// A name for it (the path as the operator wrote it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl Root {
    /// The root at `uri` (a `file://` URI, as the specification asks), named `name`.
    pub fn new(uri: impl Into<String>, name: Option<String>) -> Self {
        Self {
            uri: uri.into(),
            name,
        }
    }

    /// The root for the absolute directory `path`, named `name`: its `file://` URI, with every
    /// byte of the path outside the unreserved set and `/` percent-encoded (RFC 3986; on Unix
    /// the path's own bytes, so a path that is not UTF-8 keeps them).
    pub fn for_dir(path: &Path, name: Option<String>) -> Self {
        #[cfg(unix)]
        let bytes = std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).to_vec();
        #[cfg(not(unix))]
        let bytes = path.to_string_lossy().replace('\\', "/").into_bytes();
        let mut uri = String::from("file://");
        for b in bytes {
            if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
                uri.push(b as char);
            } else {
                uri.push_str(&format!("%{b:02X}"));
            }
        }
        Self { uri, name }
    }
}

/// Answers `roots/list` with the client's roots; passes every other request to `inner`.
#[derive(Clone)]
pub(crate) struct Roots<S> {
    inner: S,
    answer: Arc<Value>,
}

impl<S> Roots<S> {
    pub(crate) fn new(inner: S, roots: &[Root]) -> Self {
        Self {
            inner,
            answer: Arc::new(serde_json::json!({ "roots": roots })),
        }
    }
}

impl<S> fmt::Debug for Roots<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Roots")
            .field("answer", &self.answer)
            .finish()
    }
}

impl<S> Service<ServerRequest> for Roots<S>
where
    S: Service<ServerRequest, Response = Value, Error = BoxError>,
{
    type Response = Value;
    type Error = BoxError;
    type Future = Either<Ready<Result<Value, BoxError>>, S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, req: ServerRequest) -> Self::Future {
        if req.method == ListRoots::METHOD {
            return Either::Left(ready(Ok(Value::clone(&self.answer))));
        }
        Either::Right(self.inner.call(req))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::server_requests::{stack, to_jsonrpc_error};
    use crate::protocol::jsonrpc::METHOD_NOT_FOUND;
    use crate::protocol::RequestId;
    use kaged_mcp_layers::reject_sampling::RejectedCounter;
    use tower::ServiceExt;

    fn req(method: &str) -> ServerRequest {
        ServerRequest {
            id: RequestId::Number(1),
            method: method.into(),
            params: None,
        }
    }

    #[cfg(unix)]
    #[test]
    fn a_path_that_is_not_utf8_keeps_its_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::OsStr::from_bytes(b"/p/\xff");
        assert_eq!(Root::for_dir(Path::new(path), None).uri, "file:///p/%FF");
    }

    #[test]
    fn a_root_is_a_percent_encoded_file_uri() {
        let root = Root::for_dir(Path::new("/srv/my data/ü"), Some("./data".into()));
        assert_eq!(root.uri, "file:///srv/my%20data/%C3%BC");
        assert_eq!(
            serde_json::to_value(&root).unwrap(),
            serde_json::json!({"uri": "file:///srv/my%20data/%C3%BC", "name": "./data"})
        );
    }

    #[tokio::test]
    async fn roots_list_is_answered_with_the_roots_and_the_rest_passes() {
        let roots = [Root::for_dir(Path::new("/p/data"), None)];
        let svc = stack("s", None, None, Some(&roots), RejectedCounter::new());
        assert_eq!(
            svc.clone().oneshot(req("roots/list")).await.unwrap(),
            serde_json::json!({"roots": [{"uri": "file:///p/data"}]})
        );
        assert_eq!(
            svc.clone().oneshot(req("ping")).await.unwrap(),
            serde_json::json!({})
        );
        let err = svc
            .oneshot(req("sampling/createMessage"))
            .await
            .unwrap_err();
        assert_eq!(to_jsonrpc_error(&err).code, METHOD_NOT_FOUND);
    }

    #[tokio::test]
    async fn without_roots_roots_list_is_not_found() {
        let svc = stack("s", None, None, None, RejectedCounter::new());
        let err = svc.oneshot(req("roots/list")).await.unwrap_err();
        assert_eq!(to_jsonrpc_error(&err).code, METHOD_NOT_FOUND);
    }
}
