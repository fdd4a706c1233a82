//! What a caller gives as a request's `params` through the generic entry
//! ([`McpClient::request`](crate::client::McpClient::request),
//! [`Session::request`](crate::Session::request)): one owned type per request kind, each kind's
//! [`Request::Params`](super::method::Request::Params), as `lsp_types` has them. The session
//! serializes it into the request's `params` object and adds what is its own to add: the era's
//! `_meta` (merged into a `_meta` the caller gave), and a 2026-07-28 multi round-trip's
//! `inputResponses` and `requestState`. The typed helpers (`list_tools`, `read_resource`, …)
//! write their wire params directly and do not go through these.
//!
//! Kinds without params of their own (`ping`, `server/discover`) take `()`; the handshake and
//! `subscriptions/listen`, which the session sends itself, and an embedder's own kinds take a
//! JSON object (`Map<String, Value>`).

use serde::ser::Serializer;
use serde::Serialize;
use serde_json::{Map, Value};

use super::modern::RequestMeta;
use super::notifications::LoggingLevel;
use super::prompts::{CompleteArgument, CompleteContext, CompleteParams, CompletionRef};

/// One page of a list (`tools/list`, `resources/list`, `resources/templates/list`,
/// `prompts/list`, `skills/list`): none for the first page, else the `nextCursor` of the page
/// before.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct PaginatedParams {
    /// The `nextCursor` of the page before; `None` for the first page.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cursor: Option<String>,
}

impl PaginatedParams {
    /// The first page.
    pub fn first() -> Self {
        Self::default()
    }

    /// The page after the one whose `nextCursor` was `cursor`.
    pub fn after(cursor: impl Into<String>) -> Self {
        Self {
            cursor: Some(cursor.into()),
        }
    }
}

/// `tools/call`: the tool's name and its arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct CallToolRequestParams {
    /// The tool's name, as the server lists it.
    pub name: String,
    /// Its arguments; none sends none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}

impl CallToolRequestParams {
    /// A call of `name` without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            arguments: None,
        }
    }

    /// With `arguments`.
    pub fn with_arguments(mut self, arguments: Map<String, Value>) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// `resources/read`, `resources/subscribe` and `resources/unsubscribe`: the resource's URI.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct ResourceRequestParams {
    /// The resource's URI.
    pub uri: String,
}

impl ResourceRequestParams {
    /// The resource at `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        Self { uri: uri.into() }
    }
}

/// `prompts/get`: the prompt's name and the values of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GetPromptRequestParams {
    /// The prompt's name, as the server lists it.
    pub name: String,
    /// Its arguments' values; none sends none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Map<String, Value>>,
}

impl GetPromptRequestParams {
    /// The prompt `name`, without arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Self {
            name: name.into(),
            arguments: None,
        }
    }

    /// With `arguments`.
    pub fn with_arguments(mut self, arguments: Map<String, Value>) -> Self {
        self.arguments = Some(arguments);
        self
    }
}

/// `completion/complete`: the argument `name` of `reference`, typed so far as `value`, and the
/// arguments already chosen (`context.arguments`).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct CompleteRequestParams {
    /// The prompt or resource template whose argument is completed.
    pub reference: CompletionRef,
    /// The argument's name.
    pub name: String,
    /// What was typed so far.
    pub value: String,
    /// The values of the arguments already chosen, if any.
    pub chosen: Option<Map<String, Value>>,
}

impl CompleteRequestParams {
    /// Completes the argument `name` of `reference` from `value`.
    pub fn new(
        reference: CompletionRef,
        name: impl Into<String>,
        value: impl Into<String>,
    ) -> Self {
        Self {
            reference,
            name: name.into(),
            value: value.into(),
            chosen: None,
        }
    }

    /// With the values of the arguments already chosen.
    pub fn with_chosen(mut self, chosen: Map<String, Value>) -> Self {
        self.chosen = Some(chosen);
        self
    }
}

impl Serialize for CompleteRequestParams {
    /// As the client's own `complete` writes them (one wire shape), without `_meta`: the
    /// session adds it.
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        CompleteParams {
            reference: &self.reference,
            argument: CompleteArgument {
                name: &self.name,
                value: &self.value,
            },
            context: self
                .chosen
                .as_ref()
                .map(|arguments| CompleteContext { arguments }),
            meta: RequestMeta::default(),
        }
        .serialize(serializer)
    }
}

/// `logging/setLevel`: the least severe level the server should send.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct SetLevelRequestParams {
    /// The level.
    pub level: LoggingLevel,
}

impl SetLevelRequestParams {
    /// Messages at `level` and above.
    pub fn new(level: LoggingLevel) -> Self {
        Self { level }
    }
}

/// `tasks/get`, `tasks/result` and `tasks/cancel`: the task's id.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct TaskRequestParams {
    /// The task's id, as the server gave it.
    pub task_id: String,
}

impl TaskRequestParams {
    /// The task `task_id`.
    pub fn new(task_id: impl Into<String>) -> Self {
        Self {
            task_id: task_id.into(),
        }
    }
}

/// `tasks/update` (2026-07-28): the answers to a task's input requests, by request key.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct UpdateTaskRequestParams {
    /// The task's id.
    pub task_id: String,
    /// An answer per input request key.
    pub input_responses: Map<String, Value>,
}

impl UpdateTaskRequestParams {
    /// Answers `input_responses` to the task `task_id`.
    pub fn new(task_id: impl Into<String>, input_responses: Map<String, Value>) -> Self {
        Self {
            task_id: task_id.into(),
            input_responses,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_serializes_to_the_fields_the_protocol_names() {
        fn to(params: &impl Serialize) -> Value {
            serde_json::to_value(params).unwrap()
        }
        assert_eq!(to(&PaginatedParams::first()), json!({}));
        assert_eq!(to(&PaginatedParams::after("c2")), json!({"cursor": "c2"}));
        let args = json!({"a": 1}).as_object().cloned().unwrap();
        assert_eq!(
            to(&CallToolRequestParams::new("echo").with_arguments(args.clone())),
            json!({"name": "echo", "arguments": {"a": 1}})
        );
        assert_eq!(
            to(&CallToolRequestParams::new("echo")),
            json!({"name": "echo"})
        );
        assert_eq!(
            to(&ResourceRequestParams::new("a://b")),
            json!({"uri": "a://b"})
        );
        assert_eq!(
            to(&GetPromptRequestParams::new("p").with_arguments(args.clone())),
            json!({"name": "p", "arguments": {"a": 1}})
        );
        let reference = CompletionRef::Prompt { name: "p".into() };
        assert_eq!(
            to(&CompleteRequestParams::new(reference.clone(), "city", "Ly")),
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "city", "value": "Ly"}})
        );
        assert_eq!(
            to(&CompleteRequestParams::new(reference, "city", "Ly").with_chosen(args.clone())),
            json!({"ref": {"type": "ref/prompt", "name": "p"}, "argument": {"name": "city", "value": "Ly"}, "context": {"arguments": {"a": 1}}})
        );
        assert_eq!(
            to(&SetLevelRequestParams::new(LoggingLevel::Warning)),
            json!({"level": "warning"})
        );
        assert_eq!(to(&TaskRequestParams::new("t1")), json!({"taskId": "t1"}));
        assert_eq!(
            to(&UpdateTaskRequestParams::new("t1", args)),
            json!({"taskId": "t1", "inputResponses": {"a": 1}})
        );
    }
}
