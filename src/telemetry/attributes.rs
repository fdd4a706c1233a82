//! The names kaged-mcp's telemetry uses, as the OpenTelemetry semantic conventions for MCP
//! spell them, and which of them each signal carries (a unit test holds the spans and the
//! metrics to these lists).

/// `mcp.method.name`: the JSON-RPC method (required).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
/// `mcp.protocol.version`: the protocol version the session speaks.
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// `mcp.session.id`: a digest of the 2025-era Streamable HTTP session id, never the id.
pub const MCP_SESSION_ID: &str = "mcp.session.id";
/// `mcp.resource.uri`: the URI a resource request is about.
pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
/// `jsonrpc.request.id`: the request's id, as text.
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
/// `gen_ai.tool.name`: the tool of a `tools/call`.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.operation.name`: `execute_tool` on a `tools/call`, absent otherwise.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// `gen_ai.prompt.name`: the prompt of a `prompts/get`.
pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
/// `network.transport`: `pipe` (stdio) or `tcp` (HTTP).
pub const NETWORK_TRANSPORT: &str = "network.transport";
/// `network.protocol.name`: `http` for an HTTP server.
pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
/// `server.address`: an HTTP server's host.
pub const SERVER_ADDRESS: &str = "server.address";
/// `server.port`: an HTTP server's port.
pub const SERVER_PORT: &str = "server.port";
/// `error.type`: the JSON-RPC code as text, `tool_error`, or one word; only on failure.
pub const ERROR_TYPE: &str = "error.type";
/// `rpc.response.status_code`: the JSON-RPC error code, as text; only when the server sent one.
pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";

/// The span of a request: `mcp.request`, named `{mcp.method.name} {target}`, kind CLIENT.
pub const SPAN_ATTRIBUTES: &[&str] = &[
    MCP_METHOD_NAME,
    MCP_PROTOCOL_VERSION,
    MCP_SESSION_ID,
    MCP_RESOURCE_URI,
    JSONRPC_REQUEST_ID,
    GEN_AI_TOOL_NAME,
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROMPT_NAME,
    NETWORK_TRANSPORT,
    NETWORK_PROTOCOL_NAME,
    SERVER_ADDRESS,
    SERVER_PORT,
    ERROR_TYPE,
    RPC_RESPONSE_STATUS_CODE,
];

/// `mcp.client.operation.duration` (histogram, seconds): never the session id, the request id
/// or a URI (the conventions keep those off a metric: they are unbounded).
pub const OPERATION_METRIC_ATTRIBUTES: &[&str] = &[
    MCP_METHOD_NAME,
    MCP_PROTOCOL_VERSION,
    GEN_AI_TOOL_NAME,
    GEN_AI_OPERATION_NAME,
    GEN_AI_PROMPT_NAME,
    NETWORK_TRANSPORT,
    NETWORK_PROTOCOL_NAME,
    SERVER_ADDRESS,
    SERVER_PORT,
    ERROR_TYPE,
    RPC_RESPONSE_STATUS_CODE,
];

/// `mcp.client.session.duration` (histogram, seconds), once per server session.
pub const SESSION_METRIC_ATTRIBUTES: &[&str] = &[
    MCP_PROTOCOL_VERSION,
    NETWORK_TRANSPORT,
    NETWORK_PROTOCOL_NAME,
    SERVER_ADDRESS,
    SERVER_PORT,
    ERROR_TYPE,
];

/// The name of the per-request duration histogram.
pub const OPERATION_DURATION: &str = "mcp.client.operation.duration";
/// The name of the per-session duration histogram.
pub const SESSION_DURATION: &str = "mcp.client.session.duration";
/// The conventions' bucket boundaries for both histograms, in seconds.
pub const DURATION_BUCKETS: &[f64] = &[
    0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0,
];
