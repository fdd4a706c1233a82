//! The protocol dialect of one session: the era's state, kept out of the JSON-RPC session.
//!
//! A modern (2026-07-28) session writes the era's `_meta` entries (the version, the client's
//! capabilities and identity, serialized once per client) into every request and names its
//! version to the transport; over a transport that mirrors request fields (Streamable HTTP)
//! it also mirrors the values of each tool's `x-mcp-header` parameters, which the catalog found
//! at `tools/list`. A legacy session does neither. [`RpcSession`](super::rpc::RpcSession)
//! holds one `Dialect` and asks it; the era itself is found by the supervisor
//! ([`era`](super::era)) and set here once with [`Dialect::speak_modern`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use crate::protocol::modern::{param_header_value, ModernMeta, ParamHeader, RequestMeta};

use super::call::ToolCall;

/// The `x-mcp-header` parameters of each tool that has any, by tool name: kept by the client
/// across its sessions, filled at `tools/list`.
pub(crate) type ParamHeaders = Arc<Mutex<HashMap<String, Arc<[ParamHeader]>>>>;

/// See the [module docs](self).
#[derive(Debug)]
pub(crate) struct Dialect {
    /// Set once the session speaks the modern era: every request carries these `_meta`
    /// entries (and names its version to the transport).
    modern: OnceLock<Arc<ModernMeta>>,
    /// The transport mirrors `x-mcp-header` parameters (Streamable HTTP).
    mirrors_headers: bool,
    /// In a modern session over such a transport: the annotated parameters of each tool of
    /// the last `tools/list` that has any (the client's map, shared by its sessions).
    param_headers: ParamHeaders,
}

impl Dialect {
    /// A legacy dialect until [`speak_modern`](Self::speak_modern); `mirrors_headers` when the
    /// transport mirrors request fields, with the client's map of annotated parameters.
    pub(crate) fn new(mirrors_headers: bool, param_headers: ParamHeaders) -> Self {
        Self {
            modern: OnceLock::new(),
            mirrors_headers,
            param_headers,
        }
    }

    /// From now on every request carries the modern `_meta` entries `meta`.
    pub(crate) fn speak_modern(&self, meta: Arc<ModernMeta>) {
        let _ = self.modern.set(meta);
    }

    /// Whether the session speaks the modern era.
    pub(crate) fn is_modern(&self) -> bool {
        self.modern.get().is_some()
    }

    /// The modern `_meta` entries, in a modern session.
    #[inline]
    pub(crate) fn modern_meta(&self) -> Option<&ModernMeta> {
        self.modern.get().map(Arc::as_ref)
    }

    /// The `_meta` a request carries: the era's entries in a modern session, no progress token.
    pub(crate) fn meta(&self) -> RequestMeta<'_> {
        RequestMeta {
            progress_token: None,
            modern: self.modern_meta(),
        }
    }

    /// The protocol version a request declares in its own `_meta` (modern).
    pub(crate) fn declared_version(&self) -> Option<&str> {
        self.modern_meta().map(ModernMeta::version)
    }

    /// Whether `x-mcp-header` parameters are mirrored into headers: modern, over a transport
    /// that mirrors request fields (Streamable HTTP).
    pub(crate) fn mirrors_param_headers(&self) -> bool {
        self.mirrors_headers && self.is_modern()
    }

    /// Keeps the annotated parameters of the tools just listed (only those that have any).
    pub(crate) fn set_param_headers(&self, headers: HashMap<String, Arc<[ParamHeader]>>) {
        *self
            .param_headers
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = headers;
    }

    /// The `(name, value)` of each annotated parameter `call` gives a value.
    pub(crate) fn param_header_values(&self, call: &ToolCall) -> Vec<(String, String)> {
        if !self.mirrors_headers {
            return Vec::new();
        }
        let headers = {
            let map = self
                .param_headers
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            match map.get(&*call.name) {
                Some(h) => Arc::clone(h),
                None => return Vec::new(),
            }
        };
        let Some(arguments) = call.arguments.as_deref() else {
            return Vec::new();
        };
        headers
            .iter()
            .filter_map(|h| Some((h.name.clone(), param_header_value(arguments, h)?)))
            .collect()
    }
}
