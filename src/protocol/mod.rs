//! JSON-RPC 2.0 and the MCP messages the client speaks.
//!
//! The types here follow the MCP specification, revisions `2025-11-25` and `2026-07-28`, and
//! read every older revision the client accepts (`2024-11-05`, `2025-03-26`, `2025-06-18`).
//! They are lenient the way a client must be: unknown fields are ignored (or kept, where an embedder may want them),
//! JSON key order is free, request ids may be numbers or strings and may start at 0.
//!
//! - [`jsonrpc`]: [`RequestId`], [`JsonRpcError`] and the error codes.
//! - [`lifecycle`]: `initialize`, the protocol versions, [`Implementation`].
//! - [`method`]: every method the client speaks, typed ([`method::Request`],
//!   [`method::Notification`]): the one place a method's name is written.
//! - [`modern`]: the 2026-07-28 revision: `server/discover`, the per-request `_meta`, the
//!   modern error codes, what a server asks for first ([`InputRequired`]).
//! - [`answer`]: what a request is answered in both eras ([`CallAnswer`]).
//! - [`tasks`]: tasks in both eras ([`TaskState`], [`TaskStatus`], [`TaskSupport`]).
//! - [`tools`]: [`ToolInfo`], [`ToolAnnotations`] and the `tools/list` page.
//! - [`content`]: the content blocks of a tool result ([`ContentBlock`]).
//! - [`result`]: [`ToolResult`], with its [`Truncatable`](kaged_mcp_layers::truncate::Truncatable)
//!   implementation (see "Truncation, precisely" in the design).
//! - [`notifications`]: progress, logging, cancellation.
//! - [`elicitation`]: `elicitation/create` params and answers ([`ElicitParams`],
//!   [`ElicitResult`]).
//! - [`uri`]: a URI without its user info and query, as logs and errors show it.
//! - [`skills`]: skills over MCP (SEP-2640): `skills/list` entries and their files.
//! - [`server_request`]: requests a server sends to the client, as seen by the server→client
//!   request stack ([`ServerRequest`]).
//!
//! # Example
//! ```
//! use kaged_mcp::protocol::{ContentBlock, ToolResult};
//!
//! let json = r#"{"content":[{"type":"text","text":"Echo: hi"}],"isError":false}"#;
//! let result: ToolResult = serde_json::from_str(json)?;
//! assert!(matches!(&result.content[0], ContentBlock::Text(t) if t.text == "Echo: hi"));
//! assert!(!result.is_error);
//! # Ok::<(), serde_json::Error>(())
//! ```

pub mod answer;
pub mod content;
pub mod elicitation;
pub(crate) mod json_out;
pub mod jsonrpc;
pub mod lifecycle;
pub mod method;
pub mod modern;
pub mod notifications;
pub mod params;
pub mod prompts;
#[doc(hidden)]
pub mod quick;
pub mod resources;
pub mod result;
pub mod server_request;
pub mod skills;
pub mod tasks;
pub mod tools;
pub mod uri;

pub use self::answer::CallAnswer;
pub use self::content::{
    AudioContent, BlobResourceContents, ContentBlock, EmbeddedResource, ImageContent,
    ResourceContents, ResourceLink, Text, TextContent, TextResourceContents,
};
pub use self::elicitation::{ElicitMode, ElicitParams, ElicitResult};
pub use self::jsonrpc::{JsonRpcError, RequestId};
pub use self::lifecycle::{
    Implementation, InitializeResult, LATEST_PROTOCOL_VERSION, SUPPORTED_PROTOCOL_VERSIONS,
};
pub use self::modern::{
    DiscoverResult, InputRequired, MODERN_PROTOCOL_VERSION, SUPPORTED_MODERN_VERSIONS,
};
pub use self::notifications::{LoggingLevel, ProgressParams};
pub use self::prompts::{
    Completion, CompletionRef, GetPromptResult, Prompt, PromptArgument, PromptMessage,
};
pub use self::resources::{ReadResourceResult, ReadTooLarge, Resource, ResourceTemplate};
pub use self::result::ToolResult;
pub use self::server_request::ServerRequest;
pub use self::tasks::{TaskState, TaskStatus, TaskSupport};
pub use self::tools::{ListToolsResult, ToolAnnotations, ToolInfo};
