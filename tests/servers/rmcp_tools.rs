//! The tools both rmcp test servers serve (`rmcp_server` over stdio, `rmcp_http_server` over
//! Streamable HTTP): `echo {message}` → `Echo: <message>`, `add {a, b}` → the sum as text.

use rmcp::{
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{ServerCapabilities, ServerConfig},
    tool, tool_handler, tool_router, ServerHandler,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// Arguments of `echo`.
#[derive(Debug, Deserialize, JsonSchema)]
struct EchoArgs {
    /// The text to send back.
    message: String,
}

/// Arguments of `add`.
#[derive(Debug, Deserialize, JsonSchema)]
struct AddArgs {
    /// The left operand.
    a: i64,
    /// The right operand.
    b: i64,
}

/// The test server: its tools live in the router the `#[tool_router]` macro builds.
#[derive(Debug, Clone)]
pub(crate) struct TestServer {
    /// Read by the code `#[tool_handler]` generates.
    #[expect(dead_code, reason = "read only by the code #[tool_handler] generates")]
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TestServer {
    pub(crate) fn new() -> Self {
        Self {
            tool_router: Self::tool_router(),
        }
    }

    /// Echo the message back, prefixed with `Echo: `.
    #[tool(description = "Echo the message back, prefixed with 'Echo: '")]
    fn echo(&self, Parameters(EchoArgs { message }): Parameters<EchoArgs>) -> String {
        format!("Echo: {message}")
    }

    /// Add two integers.
    #[tool(description = "Add two integers")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        a.saturating_add(b).to_string()
    }
}

#[tool_handler]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_instructions("kaged-mcp test server (rmcp): tools echo and add")
    }
}
