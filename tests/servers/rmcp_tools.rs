//! The tools both rmcp test servers serve (`rmcp_server` over stdio, `rmcp_http_server` over
//! Streamable HTTP). The server advertises the tasks extension (SEP-2663,
//! `capabilities.extensions["io.modelcontextprotocol/tasks"] = {}`), which rmcp 3.11 implements
//! for protocol 2026-07-28 (and, beyond the SEP, also honours over a 2025-11-25 session when the
//! client declared it in `initialize` `capabilities.extensions`).
//!
//! Tools:
//! - `echo {message: string}` → text `Echo: <message>`.
//! - `add {a: integer, b: integer}` → the sum as text.
//! - `slow_task {seconds?: number (default 1), label?: string (default "none")}`: task-only.
//!   Without the tasks extension in the request's client capabilities → JSON-RPC error -32021
//!   (`Missing required client capability`, `data.requiredCapabilities.extensions`
//!   `{"io.modelcontextprotocol/tasks": {}}`). With it → a `CreateTaskResult`
//!   (`resultType: "task"`, `status: "working"`, `ttlMs: 60000`, `pollIntervalMs: 200`); the
//!   task waits `seconds` then completes with text `slow_task done: <label>`. `tasks/cancel`
//!   during the wait settles it as `cancelled`. `seconds` negative, NaN or too large → -32602
//!   before any task is created.
//! - `ask_task {}`: task-only, same -32021 without the extension. With it → a `CreateTaskResult`
//!   (same ttl/poll); `tasks/get` then reports `input_required` with `inputRequests` `{"name":
//!   {"method": "elicitation/create", "params": {"mode": "form", "message": "Your name?",
//!   "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
//!   "required": ["name"]}}}}`. After `tasks/update {inputResponses: {"name": {"action":
//!   "accept", "content": {"name": "<name>"}}}}` it completes with text `Hello, <name>!`; any
//!   other answer (decline, cancel, no string `name`) completes with a tool error
//!   (`isError: true`, text `ask_task: no name (<answer JSON>)`). `tasks/cancel` while waiting
//!   settles it as `cancelled`.
//!
//! `tasks/get`, `tasks/update` and `tasks/cancel` are served by one process-wide
//! [`TaskManager`] (the HTTP server builds a `TestServer` per session or per stateless request,
//! so tasks must outlive the instance that created them). Without the extension they are -32021
//! (rmcp checks that before calling the handler); an unknown task id is -32602.

use std::{sync::LazyLock, time::Duration};

use rmcp::{
    handler::server::{router::tool::ToolRouter, wrapper::Parameters},
    model::{
        CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities, ContentBlock,
        CreateTaskResult, ElicitRequest, ElicitRequestParams, ElicitationSchema, GetTaskParams,
        GetTaskResult, InputRequest, ServerCapabilities, ServerConfig, UpdateTaskParams,
    },
    service::RequestContext,
    task_manager::{TaskExit, TaskManager, TaskOptions},
    tool, tool_handler, tool_router, ErrorData as McpError, RoleServer, ServerHandler,
};
use schemars::JsonSchema;
use serde::Deserialize;

/// The task store shared by every `TestServer` in the process.
static TASKS: LazyLock<TaskManager> = LazyLock::new(TaskManager::new);

/// Retention and suggested polling interval of the tasks the task tools create.
fn task_options() -> TaskOptions {
    TaskOptions::new()
        .with_ttl_ms(60_000)
        .with_poll_interval_ms(200)
}

/// -32021 unless the request's client capabilities declare the tasks extension.
fn require_tasks_extension(ctx: &RequestContext<RoleServer>) -> Result<(), McpError> {
    if ctx
        .client_capabilities()
        .is_some_and(|c| c.supports_tasks())
    {
        Ok(())
    } else {
        Err(McpError::missing_required_client_capability(
            ClientCapabilities::builder().enable_tasks().build(),
        ))
    }
}

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

/// Arguments of `slow_task`.
#[derive(Debug, Deserialize, JsonSchema)]
struct SlowTaskArgs {
    /// How long the task works before completing, in seconds.
    #[serde(default = "one_second")]
    seconds: f64,
    /// Echoed in the result text.
    #[serde(default = "no_label")]
    label: String,
}

fn one_second() -> f64 {
    1.0
}

fn no_label() -> String {
    "none".to_owned()
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

    /// Task-only: wait `seconds`, then complete with `slow_task done: <label>`.
    #[tool(
        description = "Task-only (tasks extension required): waits `seconds` (default 1), then completes with 'slow_task done: <label>'"
    )]
    fn slow_task(
        &self,
        Parameters(SlowTaskArgs { seconds, label }): Parameters<SlowTaskArgs>,
        ctx: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        require_tasks_extension(&ctx)?;
        let wait = Duration::try_from_secs_f64(seconds).map_err(|e| {
            McpError::invalid_params(format!("slow_task: seconds {seconds}: {e}"), None)
        })?;
        let task = TASKS.spawn(task_options(), move |tc| {
            Box::pin(async move {
                tokio::select! {
                    () = tokio::time::sleep(wait) => Ok(CallToolResult::success(vec![
                        ContentBlock::text(format!("slow_task done: {label}")),
                    ])),
                    () = tc.cancelled() => Err(TaskExit::Cancelled),
                }
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    /// Task-only: ask for a name through `inputRequests`, then complete with `Hello, <name>!`.
    #[tool(
        description = "Task-only (tasks extension required): asks 'Your name?' through an elicitation input request, then completes with 'Hello, <name>!'"
    )]
    fn ask_task(&self, ctx: RequestContext<RoleServer>) -> Result<CallToolResponse, McpError> {
        require_tasks_extension(&ctx)?;
        let requested_schema = ElicitationSchema::builder()
            .required_string("name")
            .build()
            .map_err(|e| McpError::internal_error(format!("ask_task schema: {e}"), None))?;
        let question = InputRequest::Elicitation(ElicitRequest::new(
            ElicitRequestParams::FormElicitationParams {
                meta: None,
                message: "Your name?".to_owned(),
                requested_schema,
            },
        ));
        let task = TASKS.spawn(task_options(), move |tc| {
            Box::pin(async move {
                let answer = tc.request_input("name", question).await?;
                let name = (answer.get("action").and_then(|a| a.as_str()) == Some("accept"))
                    .then(|| answer.pointer("/content/name").and_then(|n| n.as_str()))
                    .flatten();
                Ok(match name {
                    Some(name) => {
                        CallToolResult::success(vec![ContentBlock::text(format!("Hello, {name}!"))])
                    }
                    None => CallToolResult::error(vec![ContentBlock::text(format!(
                        "ask_task: no name ({answer})"
                    ))]),
                })
            })
        });
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }
}

#[tool_handler]
impl ServerHandler for TestServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_instructions(
            "kaged-mcp test server (rmcp): tools echo, add, slow_task and ask_task (the last two \
             only as tasks)",
        )
    }

    async fn get_task(
        &self,
        params: GetTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, McpError> {
        TASKS.get_task(&params.task_id).map(GetTaskResult::new)
    }

    async fn update_task(
        &self,
        params: UpdateTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        TASKS.update_task(&params.task_id, params.input_responses)
    }

    async fn cancel_task(
        &self,
        params: CancelTaskParams,
        _ctx: RequestContext<RoleServer>,
    ) -> Result<(), McpError> {
        TASKS.cancel_task(&params.task_id)
    }
}
