//! [`ToolCall`]: the request of the tool-call stack.

use std::sync::Arc;

use kaged_mcp_layers::retry::RetrySafe;
use kaged_mcp_layers::timeout::{ProgressAware, ProgressHandle};
use serde_json::{Map, Value};

use kaged_mcp_layers::validate::Validated;
use tower::BoxError;

use crate::protocol::ToolResult;
use crate::validate::{ResultCheck, ToolSchemas, Validation};

/// One `tools/call`: the tool's name as the server knows it, its arguments, whether a repeat is
/// harmless, and where to report progress.
///
/// When [`progress`](Self::progress) is set, the client sends `_meta.progressToken` and calls
/// [`ProgressHandle::notify`] for each `notifications/progress` of the call, so a
/// `ProgressTimeout` layer can reset its idle timer.
///
/// The name and the arguments are shared (`Arc`): the retry layer keeps a copy of every request
/// in case it must send it again, and that copy is two reference counts, not a deep clone of
/// the arguments.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct ToolCall {
    /// The tool's name on the server.
    pub name: Arc<str>,
    /// The arguments object; `None` sends no `arguments`.
    pub arguments: Option<Arc<Map<String, Value>>>,
    /// A repeat is harmless (the tool is annotated read-only or idempotent and the operator
    /// trusts the annotations). Read by the retry policy.
    pub retry_safe: bool,
    /// Notified on each progress report of this call.
    pub progress: Option<ProgressHandle>,
    /// The tool's compiled schemas, which the validation layer checks the call against
    /// ([`crate::validate`]); the registry sets them from the catalog that resolved the name.
    /// `None`: the call is not validated.
    pub schemas: Option<Arc<ToolSchemas>>,
    /// Ask a 2025-11-25 server to run the call as a task (`params.task`); the registry sets it
    /// from the tool's `execution.taskSupport` and the server's `tasks` mode (see
    /// [`tasks`](super::tasks)). A 2026-07-28 server decides itself, so it is not read there.
    pub task: bool,
}

impl ToolCall {
    /// A call of `name` without arguments.
    pub fn new(name: impl Into<Arc<str>>) -> Self {
        Self {
            name: name.into(),
            ..Self::default()
        }
    }

    /// Sets the arguments (a `Map`, or an `Arc<Map>` shared with other calls).
    #[must_use]
    pub fn with_arguments(mut self, arguments: impl Into<Arc<Map<String, Value>>>) -> Self {
        self.arguments = Some(arguments.into());
        self
    }

    /// Sets the arguments from a JSON value: an object becomes the arguments, `null` means none.
    ///
    /// # Panics
    /// When `arguments` is neither an object nor `null` (a programmer error: MCP arguments are
    /// always an object).
    #[must_use]
    pub fn with_json_arguments(mut self, arguments: Value) -> Self {
        self.arguments = match arguments {
            Value::Object(map) => Some(Arc::new(map)),
            Value::Null => None,
            other => panic!("tool arguments must be a JSON object, not {other}"),
        };
        self
    }

    /// Marks the call safe (or not) to send twice.
    #[must_use]
    pub fn with_retry_safe(mut self, retry_safe: bool) -> Self {
        self.retry_safe = retry_safe;
        self
    }

    /// Sets the schemas the validation layer checks the call against.
    #[must_use]
    pub fn with_schemas(mut self, schemas: Arc<ToolSchemas>) -> Self {
        self.schemas = Some(schemas);
        self
    }

    /// Asks a 2025-11-25 server to run the call as a task (see [`task`](Self::task)).
    #[must_use]
    pub fn with_task(mut self, task: bool) -> Self {
        self.task = task;
        self
    }

    /// Asks for progress reports, delivered to `handle`.
    #[must_use]
    pub fn with_progress(mut self, handle: ProgressHandle) -> Self {
        self.progress = Some(handle);
        self
    }
}

/// The validation layer's request trait: a call that carries its tool's schemas is checked
/// against them as the stack's `validate` knob says ([`ToolSchemas::check_call`]); one without
/// passes as is.
impl Validated<ToolResult, Validation> for ToolCall {
    type Check = ResultCheck;

    fn validate(&mut self, validation: &Validation) -> Result<Option<ResultCheck>, BoxError> {
        let Some(schemas) = &self.schemas else {
            return Ok(None);
        };
        schemas
            .check_call(&self.name, &mut self.arguments, *validation)
            .map_err(Into::into)
    }
}

impl RetrySafe for ToolCall {
    fn retry_safe(&self) -> bool {
        self.retry_safe
    }
}

impl ProgressAware for ToolCall {
    fn progress(&self) -> Option<&ProgressHandle> {
        self.progress.as_ref()
    }
}
