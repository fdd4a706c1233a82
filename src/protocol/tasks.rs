//! MCP tasks: a `tools/call` the server runs in the background and the client follows to its
//! end, in both eras.
//!
//! - **2025-11-25** (SEP-1686, experimental in that revision): a tool says it can run as a task
//!   (`execution.taskSupport`); the client asks for one with `params.task`; the server answers
//!   `{"task": {taskId, status, pollInterval, ttl, …}}`; the client polls `tasks/get` (a flat
//!   [`TaskState`]), may be woken by `notifications/tasks/status`, and reads the outcome with
//!   `tasks/result`, which answers what the plain call would have (a `CallToolResult` or the
//!   JSON-RPC error) and blocks while the task is not done. Server requests for input
//!   (`elicitation/create`) arrive on the connection while `tasks/result` waits.
//! - **2026-07-28** (the `io.modelcontextprotocol/tasks` extension, SEP-2663): a client that
//!   declares the extension in its per-request capabilities may get a task for any `tools/call`,
//!   flat (`resultType: "task"`, `ttlMs`, `pollIntervalMs`); `tasks/get` inlines the outcome
//!   (`result` or `error`) or the server's `inputRequests`, answered with `tasks/update`;
//!   `tasks/cancel` is acknowledged empty; there is no `tasks/result`.
//!
//! One [`TaskState`] reads both shapes (`pollInterval` or `pollIntervalMs`, `ttl` or `ttlMs`),
//! so the client follows one kind of thing; the follow loop is in
//! [`crate::client::tasks`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::modern::RequestMeta;
use super::ToolInfo;

/// The 2026-07-28 tasks extension's identifier, declared under `extensions` in the client's
/// capabilities.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";

/// What a tool says of running as a task: `execution.taskSupport`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// It cannot (the default when absent, and for a value this client does not know).
    #[default]
    Forbidden,
    /// It can, when the client asks.
    Optional,
    /// It runs only as a task: called plainly, the server refuses.
    Required,
}

impl TaskSupport {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Forbidden => "forbidden",
            Self::Optional => "optional",
            Self::Required => "required",
        }
    }
}

impl ToolInfo {
    /// The tool's `execution.taskSupport` (absent or unknown: [`TaskSupport::Forbidden`]).
    pub fn task_support(&self) -> TaskSupport {
        match self
            .extra
            .get("execution")
            .and_then(|e| e.get("taskSupport"))
            .and_then(Value::as_str)
        {
            Some("optional") => TaskSupport::Optional,
            Some("required") => TaskSupport::Required,
            _ => TaskSupport::Forbidden,
        }
    }
}

/// Where a task is: `working` and `input_required` go on; `completed`, `failed` and
/// `cancelled` are terminal and never change again.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Deserialize, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// Running.
    Working,
    /// Waiting for the client's input.
    InputRequired,
    /// Done: the outcome is the tool's result (which may be `isError: true`).
    Completed,
    /// Ended by an error (2026-07-28: a JSON-RPC error; 2025-11-25: also a tool error).
    Failed,
    /// Cancelled, by the client or the server.
    Cancelled,
}

impl TaskStatus {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::InputRequired => "input_required",
            Self::Completed => "completed",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
        }
    }

    /// Whether the task is over.
    pub fn is_terminal(self) -> bool {
        matches!(self, Self::Completed | Self::Failed | Self::Cancelled)
    }
}

impl std::fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A task as the server reports it: a created task (both eras), a `tasks/get` answer, a status
/// notification. Both eras' field names are read (`pollInterval`/`pollIntervalMs`,
/// `ttl`/`ttlMs`); the 2026-07-28 inlined outcome and input requests too.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskState {
    /// The server's id of the task.
    pub task_id: String,
    /// Its status.
    pub status: TaskStatus,
    /// The server's words on it.
    #[serde(default)]
    pub status_message: Option<String>,
    /// How often the server would like to be asked, in milliseconds.
    #[serde(default, alias = "pollIntervalMs")]
    pub poll_interval: Option<f64>,
    /// How long the server keeps the task, in milliseconds (`null`: unlimited).
    #[serde(default, alias = "ttlMs")]
    pub ttl: Option<f64>,
    /// 2026-07-28, `completed`: the tool's result, as `tools/call` would have answered it.
    #[serde(default)]
    pub result: Option<Value>,
    /// 2026-07-28, `failed`: the JSON-RPC error that ended the task.
    #[serde(default)]
    pub error: Option<TaskError>,
    /// 2026-07-28, `input_required`: the server's requests by key.
    #[serde(default)]
    pub input_requests: Option<Map<String, Value>>,
    /// When the server last changed the task (ISO 8601), when it says: a state older than
    /// one already seen (a poll's answer overtaken by a status notification) is stale.
    #[serde(default)]
    pub last_updated_at: Option<String>,
}

/// The JSON-RPC error a failed task carries (2026-07-28). Lenient: a server that sends a bare
/// message still says what went wrong.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[non_exhaustive]
pub struct TaskError {
    /// The error code (0 when the server sent none).
    #[serde(default)]
    pub code: i64,
    /// The error message.
    #[serde(default)]
    pub message: String,
    /// The error data.
    #[serde(default)]
    pub data: Option<Value>,
}

/// `params.task` of a 2025-11-25 task-augmented request.
#[derive(Debug, Clone, Copy, Serialize)]
pub(crate) struct TaskMetadata {
    /// How long the server should keep the task, in milliseconds.
    pub(crate) ttl: u64,
}

/// `tasks/get`, `tasks/result` and `tasks/cancel` parameters.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskIdParams<'a> {
    pub(crate) task_id: &'a str,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(crate) meta: RequestMeta<'a>,
}

/// `tasks/update` parameters (2026-07-28).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct TaskUpdateParams<'a> {
    pub(crate) task_id: &'a str,
    pub(crate) input_responses: &'a Map<String, Value>,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(crate) meta: RequestMeta<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2025-11-25 `CreateTaskResult`: `{"task": {…}}`.
    #[derive(Debug, Deserialize)]
    struct LegacyCreated {
        task: TaskState,
    }

    #[test]
    fn both_eras_task_shapes_read_into_one_state() {
        let legacy: LegacyCreated = serde_json::from_str(
            r#"{"task":{"taskId":"t1","status":"working","statusMessage":"go","createdAt":"x",
                "lastUpdatedAt":"x","ttl":60000,"pollInterval":5000}}"#,
        )
        .unwrap();
        assert_eq!(legacy.task.task_id, "t1");
        assert_eq!(legacy.task.poll_interval, Some(5000.0));
        assert_eq!(legacy.task.ttl, Some(60000.0));
        let modern: TaskState = serde_json::from_str(
            r#"{"resultType":"complete","taskId":"t2","status":"completed","ttlMs":null,
                "pollIntervalMs":250,"result":{"content":[]}}"#,
        )
        .unwrap();
        assert_eq!(modern.status, TaskStatus::Completed);
        assert!(modern.status.is_terminal());
        assert_eq!(modern.poll_interval, Some(250.0));
        assert_eq!(modern.ttl, None);
        assert!(modern.result.is_some());
        let failed: TaskState = serde_json::from_str(
            r#"{"taskId":"t3","status":"failed","error":{"code":-32603,"message":"boom"}}"#,
        )
        .unwrap();
        assert_eq!(failed.error.unwrap().message, "boom");
        let asked: TaskState = serde_json::from_str(
            r#"{"taskId":"t4","status":"input_required","inputRequests":{"k":{"method":"elicitation/create"}}}"#,
        )
        .unwrap();
        assert!(!asked.status.is_terminal());
        assert!(asked.input_requests.unwrap().contains_key("k"));
        assert!(serde_json::from_str::<TaskState>(r#"{"taskId":"t","status":"paused"}"#).is_err());
    }

    #[test]
    fn task_support_reads_execution_and_defaults_to_forbidden() {
        let tool = |execution: &str| -> ToolInfo {
            serde_json::from_str(&format!(
                r#"{{"name":"t","inputSchema":{{"type":"object"}}{execution}}}"#
            ))
            .unwrap()
        };
        assert_eq!(tool("").task_support(), TaskSupport::Forbidden);
        assert_eq!(
            tool(r#","execution":{"taskSupport":"required"}"#).task_support(),
            TaskSupport::Required
        );
        assert_eq!(
            tool(r#","execution":{"taskSupport":"optional"}"#).task_support(),
            TaskSupport::Optional
        );
        assert_eq!(
            tool(r#","execution":{"taskSupport":"sometimes"}"#).task_support(),
            TaskSupport::Forbidden
        );
    }
}
