//! Roots: the directories an operator lets a server see (`project.yaml`
//! `mcp.<key>.roots`), given to the server as `file://` URIs. With roots set
//! ([`ClientOptions::roots`](super::ClientOptions::roots)), the client advertises the `roots`
//! capability (`listChanged: false`: the roots are fixed for the client's life) and `Roots`
//! answers `roots/list` in the server→client request stack, in either era (a 2026-07-28
//! server asks for them in an `input_required` answer, which takes the same stack); without,
//! nothing is advertised and `roots/list` is refused "method not found" as any unknown request.
//!
//! # The first call waits for the roots
//! A server that uses roots typically asks for them when `notifications/initialized` arrives
//! and applies them asynchronously (server-filesystem resolves each with `realpath` first), so
//! a call sent right after the handshake may find none. With roots set, a legacy start is
//! therefore not ready until the server has had them, bounded by
//! [`ClientOptions::roots_wait`](super::ClientOptions::roots_wait) (2 s): after
//! `notifications/initialized` the client sends `ping`. A server that asks for roots on
//! `initialized` asks before it answers what came after it (one stream, in order), so when the
//! `pong` comes without a `roots/list` before it, the server did not ask and nothing more is
//! awaited. When it did ask, the answer was written before the `pong` was read, and one more
//! `ping` round trip lets the server take that answer in; then the client waits four more of
//! that round trip (at least 25 ms), since server-filesystem resolves the roots off its event
//! loop and a loaded machine needs longer for it. The protocol has no message saying a server
//! finished applying its roots; the round trip is the closest signal it offers, and the
//! settle scales with it.

use crate::protocol::method::{ListRoots, ServerRequestKind as _};
use std::fmt;
use std::future::{ready, Ready};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
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

/// How many times the client answered `roots/list` (every session of the client counts): the
/// start compares it before and after its `ping` (see the [module docs](self)).
#[derive(Debug, Clone, Default)]
pub(crate) struct RootsAnswered(Arc<AtomicU64>);

impl RootsAnswered {
    /// The count so far.
    pub(crate) fn get(&self) -> u64 {
        self.0.load(Ordering::Acquire)
    }
}

/// Answers `roots/list` with the client's roots; passes every other request to `inner`.
#[derive(Clone)]
pub(crate) struct Roots<S> {
    inner: S,
    answer: Arc<Value>,
    answered: RootsAnswered,
}

impl<S> Roots<S> {
    pub(crate) fn new(inner: S, roots: &[Root], answered: RootsAnswered) -> Self {
        Self {
            inner,
            answer: Arc::new(serde_json::json!({ "roots": roots })),
            answered,
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
            // Counted as it is answered: the answer is written as soon as this is ready.
            self.answered.0.fetch_add(1, Ordering::AcqRel);
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
        let answered = RootsAnswered::default();
        let svc = stack(
            "s",
            None,
            None,
            Some((&roots, answered.clone())),
            RejectedCounter::new(),
        );
        assert_eq!(
            svc.clone().oneshot(req("roots/list")).await.unwrap(),
            serde_json::json!({"roots": [{"uri": "file:///p/data"}]})
        );
        assert_eq!(answered.get(), 1, "roots/list is counted");
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
