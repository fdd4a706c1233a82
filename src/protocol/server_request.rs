//! Requests a server sends to the client (`ping`, `sampling/createMessage`, `roots/list`, …).
//!
//! The client passes each one through its server→client request stack (see
//! [`crate::client::server_requests`]) and writes the answer back.

use serde_json::Value;

use super::jsonrpc::RequestId;

/// A request from the server, as the server→client request stack sees it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct ServerRequest {
    /// The server's id for the request (its own numbering; often starts at 0).
    pub id: RequestId,
    /// The JSON-RPC method.
    pub method: String,
    /// The parameters, as sent.
    pub params: Option<Value>,
}

impl kaged_mcp_layers::reject_sampling::JsonRpcMethod for ServerRequest {
    fn method(&self) -> &str {
        &self.method
    }

    fn request_id(&self) -> Option<String> {
        Some(self.id.to_string())
    }
}
