//! What a request is answered in both eras: a `tools/call`'s [`CallAnswer`] (a result, the
//! input a 2026-07-28 server asks for first, or a task), and the `Answer` of the other
//! requests a 2026-07-28 server may answer `input_required`. Read in one pass, whatever the
//! order of the keys.

use serde::{Deserialize, Deserializer};
use serde_json::{Map, Value};

use super::modern::InputRequired;
use super::result::ToolResult;

/// What a `tools/call` was answered: a result, or a request for input (multi round-trip
/// requests).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum CallAnswer {
    /// The call is done (`resultType: "complete"`, or no `resultType`: a legacy server).
    Complete(ToolResult),
    /// The server needs input before it can finish; the client retries the call with it.
    InputRequired(InputRequired),
    /// The server runs the call as a task (`resultType: "task"` in 2026-07-28, `{"task": …}`
    /// in 2025-11-25): the client follows it to its end ([`crate::client::tasks`]). Boxed:
    /// every answer travels in this enum, and a task's state is larger than a result.
    Task(Box<super::tasks::TaskState>),
}

/// The answer to a request other than `tools/call` that a 2026-07-28 server may answer
/// `input_required` (`resources/read`, `prompts/get`): its result, or what the server asks
/// for first. A legacy answer (no `resultType`) is a result.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Answer<R> {
    /// `resultType: "complete"`, or none.
    Complete(R),
    /// `resultType: "input_required"`.
    InputRequired(InputRequired),
}

impl<'de, R: serde::de::DeserializeOwned> Deserialize<'de> for Answer<R> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let mut value = Value::deserialize(deserializer)?;
        if value.get("resultType").and_then(Value::as_str) != Some("input_required") {
            return R::deserialize(value)
                .map(Self::Complete)
                .map_err(serde::de::Error::custom);
        }
        let input_requests = match value.get_mut("inputRequests").map(Value::take) {
            Some(Value::Object(map)) => map,
            _ => {
                return Err(serde::de::Error::custom(
                    "an input_required result without an `inputRequests` object",
                ))
            }
        };
        let request_state = match value.get_mut("requestState").map(Value::take) {
            None | Some(Value::Null) => None,
            Some(Value::String(state)) => Some(state),
            Some(_) => return Err(serde::de::Error::custom("`requestState` is not a string")),
        };
        Ok(Self::InputRequired(InputRequired {
            input_requests,
            request_state,
        }))
    }
}

impl<'de> Deserialize<'de> for CallAnswer {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(AnswerVisitor)
    }
}

/// The keys of a `tools/call` result this client reads.
#[derive(Deserialize)]
#[serde(field_identifier, rename_all = "camelCase")]
enum AnswerKey {
    Content,
    StructuredContent,
    IsError,
    #[serde(rename = "_meta")]
    Meta,
    ResultType,
    InputRequests,
    RequestState,
    Task,
    TaskId,
    Status,
    StatusMessage,
    PollIntervalMs,
    TtlMs,
    #[serde(other)]
    Other,
}

/// A string borrowed from the input when it can be.
#[derive(Deserialize)]
struct CowStr<'a>(#[serde(borrow)] std::borrow::Cow<'a, str>);

/// Reads every field of every answer shape in one pass, whatever the key order, into locals:
/// no intermediate struct is built and moved per answer (`resultType` borrowed: no
/// allocation). The task fields are read leniently (a value of another type is `None`) and
/// used only for a task answer: a plain result may carry keys of these names with other
/// meanings.
struct AnswerVisitor;

impl<'de> serde::de::Visitor<'de> for AnswerVisitor {
    type Value = CallAnswer;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a tools/call result object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<CallAnswer, A::Error> {
        use serde::de::Error as _;
        let mut content: Option<Vec<super::content::ContentBlock>> = None;
        let mut structured_content: Option<Option<Value>> = None;
        let mut is_error: Option<Option<bool>> = None;
        let mut meta: Option<Option<Value>> = None;
        let mut result_type: Option<Option<CowStr<'de>>> = None;
        let mut input_requests: Option<Option<Map<String, Value>>> = None;
        let mut request_state: Option<Option<String>> = None;
        // A 2025-11-25 `CreateTaskResult`: `{"task": {…}}` and no `content`.
        let mut task: Option<Option<Value>> = None;
        // A 2026-07-28 `CreateTaskResult` (flat).
        let (mut task_id, mut status, mut status_message) = (None, None, None);
        let (mut poll_interval_ms, mut ttl_ms) = (None, None);
        macro_rules! once {
            ($slot:ident, $name:literal) => {{
                if $slot.is_some() {
                    return Err(A::Error::duplicate_field($name));
                }
                $slot = Some(map.next_value()?);
            }};
        }
        while let Some(key) = map.next_key::<AnswerKey>()? {
            match key {
                AnswerKey::Content => once!(content, "content"),
                AnswerKey::StructuredContent => once!(structured_content, "structuredContent"),
                AnswerKey::IsError => once!(is_error, "isError"),
                AnswerKey::Meta => once!(meta, "_meta"),
                AnswerKey::ResultType => once!(result_type, "resultType"),
                AnswerKey::InputRequests => once!(input_requests, "inputRequests"),
                AnswerKey::RequestState => once!(request_state, "requestState"),
                AnswerKey::Task => once!(task, "task"),
                // Read as any JSON only when present (a task answer): no cost to the others.
                AnswerKey::TaskId => task_id = string(map.next_value()?),
                AnswerKey::Status => status = string(map.next_value()?),
                AnswerKey::StatusMessage => status_message = string(map.next_value()?),
                AnswerKey::PollIntervalMs => {
                    poll_interval_ms = map.next_value::<Value>()?.as_f64();
                }
                AnswerKey::TtlMs => ttl_ms = map.next_value::<Value>()?.as_f64(),
                AnswerKey::Other => {
                    map.next_value::<serde::de::IgnoredAny>()?;
                }
            }
        }
        let invalid_task =
            |e: serde_json::Error| A::Error::custom(format_args!("an invalid task: {e}"));
        let result_type = result_type.flatten();
        let task = task.flatten();
        match result_type.as_ref().map(|t| &*t.0) {
            None if content.is_none() && task.is_some() => {
                let task = task.unwrap_or_default();
                serde_json::from_value::<super::tasks::TaskState>(task)
                    .map(|t| CallAnswer::Task(Box::new(t)))
                    .map_err(invalid_task)
            }
            Some("task") => {
                let status = status
                    .map(|s| serde_json::from_value::<super::tasks::TaskStatus>(Value::String(s)))
                    .transpose()
                    .map_err(invalid_task)?;
                match (task_id, status) {
                    (Some(task_id), Some(status)) => {
                        Ok(CallAnswer::Task(Box::new(super::tasks::TaskState {
                            task_id,
                            status,
                            status_message,
                            poll_interval: poll_interval_ms,
                            ttl: ttl_ms,
                            result: None,
                            error: None,
                            input_requests: None,
                            last_updated_at: None,
                        })))
                    }
                    _ => Err(A::Error::custom(
                        "an invalid task: a task result (resultType \"task\") needs a string taskId and status",
                    )),
                }
            }
            None | Some("complete") => Ok(CallAnswer::Complete(ToolResult {
                content: content.unwrap_or_default(),
                structured_content: structured_content.flatten(),
                is_error: is_error.flatten().unwrap_or(false),
                truncated: false,
                meta: meta.flatten(),
                truncated_from: None,
            })),
            Some("input_required") => {
                let input_requests = input_requests.flatten();
                let request_state = request_state.flatten();
                if input_requests.is_none() && request_state.is_none() {
                    return Err(A::Error::custom(
                        "an input_required result has neither inputRequests nor requestState",
                    ));
                }
                Ok(CallAnswer::InputRequired(InputRequired {
                    input_requests: input_requests.unwrap_or_default(),
                    request_state,
                }))
            }
            Some(other) => Err(A::Error::custom(format_args!(
                "unknown resultType {other:?} (expected \"complete\", \"input_required\" or \"task\")"
            ))),
        }
    }
}

/// A string value, or `None` for a value of any other type.
fn string(value: Value) -> Option<String> {
    match value {
        Value::String(s) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answer_is_a_result_or_the_input_the_server_asks_for() {
        let done: Answer<crate::protocol::ReadResourceResult> = serde_json::from_str(
            r#"{"resultType":"complete","contents":[{"uri":"a://x","text":"hi"}],"ttlMs":0}"#,
        )
        .unwrap();
        assert!(matches!(done, Answer::Complete(r) if r.joined_text() == "hi"));
        let legacy: Answer<crate::protocol::ReadResourceResult> =
            serde_json::from_str(r#"{"contents":[]}"#).unwrap();
        assert!(matches!(legacy, Answer::Complete(_)));
        let asked: Answer<crate::protocol::GetPromptResult> = serde_json::from_str(
            r#"{"resultType":"input_required","inputRequests":{"roots":{"method":"roots/list"}},"requestState":"s"}"#,
        )
        .unwrap();
        match asked {
            Answer::InputRequired(i) => {
                assert_eq!(i.input_requests["roots"]["method"], "roots/list");
                assert_eq!(i.request_state.as_deref(), Some("s"));
            }
            Answer::Complete(_) => panic!("an input request read as a result"),
        }
        assert!(
            serde_json::from_str::<Answer<crate::protocol::GetPromptResult>>(
                r#"{"resultType":"input_required"}"#
            )
            .is_err()
        );
    }

    #[test]
    fn call_answers_read_complete_legacy_and_input_required() {
        let a: CallAnswer =
            serde_json::from_str(r#"{"isError":false,"content":[{"type":"text","text":"x"}]}"#)
                .unwrap();
        assert!(matches!(a, CallAnswer::Complete(r) if r.joined_text() == "x"));
        let a: CallAnswer =
            serde_json::from_str(r#"{"content":[],"resultType":"complete","_meta":{"k":1}}"#)
                .unwrap();
        assert!(matches!(a, CallAnswer::Complete(r) if r.meta.is_some()));
        let a: CallAnswer = serde_json::from_str(
            r#"{"requestState":"s","resultType":"input_required","inputRequests":{"n":{"method":"elicitation/create"}}}"#,
        )
        .unwrap();
        let CallAnswer::InputRequired(ir) = a else {
            panic!("not input_required")
        };
        assert_eq!(ir.request_state.as_deref(), Some("s"));
        assert_eq!(ir.input_requests["n"]["method"], "elicitation/create");
        assert!(serde_json::from_str::<CallAnswer>(r#"{"resultType":"input_required"}"#).is_err());
        assert!(serde_json::from_str::<CallAnswer>(r#"{"resultType":"task"}"#).is_err());
        assert!(serde_json::from_str::<CallAnswer>(r#"{"resultType":"later"}"#).is_err());
    }

    #[test]
    fn a_call_answer_is_no_larger_than_a_result() {
        // Every answer of the hot path moves through this enum (the pending table's channel,
        // the call's future): a task's larger state is boxed so it costs the others nothing.
        assert_eq!(
            std::mem::size_of::<CallAnswer>(),
            std::mem::size_of::<ToolResult>()
        );
    }

    #[test]
    fn call_answers_read_tasks_of_both_eras() {
        let a: CallAnswer = serde_json::from_str(
            r#"{"resultType":"task","taskId":"t","status":"working","ttlMs":60000,"pollIntervalMs":250,"createdAt":"x"}"#,
        )
        .unwrap();
        let CallAnswer::Task(t) = a else {
            panic!("not a task")
        };
        assert_eq!(
            (t.task_id.as_str(), t.poll_interval, t.ttl),
            ("t", Some(250.0), Some(60000.0))
        );
        let a: CallAnswer = serde_json::from_str(
            r#"{"task":{"taskId":"u","status":"working","pollInterval":5000,"ttl":null}}"#,
        )
        .unwrap();
        assert!(
            matches!(a, CallAnswer::Task(t) if t.task_id == "u" && t.poll_interval == Some(5000.0))
        );
    }

    #[test]
    fn a_plain_result_with_keys_of_a_tasks_names_is_a_plain_result() {
        let a: CallAnswer = serde_json::from_str(
            r#"{"content":[{"type":"text","text":"x"}],"status":"ok","taskId":7,"task":"build","pollIntervalMs":"soon","resultType":"complete"}"#,
        )
        .unwrap();
        assert!(matches!(a, CallAnswer::Complete(r) if r.joined_text() == "x"));
        // A `task` object beside `content` is the result's own.
        let a: CallAnswer =
            serde_json::from_str(r#"{"content":[],"task":{"kind":"build"}}"#).unwrap();
        assert!(matches!(a, CallAnswer::Complete(_)));
        // A null task is no task; a key given twice is refused, as derived decoders do.
        let a: CallAnswer = serde_json::from_str(r#"{"task":null}"#).unwrap();
        assert!(matches!(a, CallAnswer::Complete(r) if r.content.is_empty()));
        assert!(serde_json::from_str::<CallAnswer>(r#"{"content":[],"content":[]}"#).is_err());
        // The same from a `Value` (what the fuzz target checks).
        let v = serde_json::json!({"resultType": "task", "taskId": "t", "status": "working"});
        assert!(matches!(
            serde_json::from_value::<CallAnswer>(v).unwrap(),
            CallAnswer::Task(_)
        ));
        // A task answer that is not one is an error naming it.
        for bad in [
            r#"{"resultType":"task","taskId":"t","status":"paused"}"#,
            r#"{"resultType":"task","taskId":7,"status":"working"}"#,
            r#"{"task":{"taskId":"t"}}"#,
        ] {
            let e = serde_json::from_str::<CallAnswer>(bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains("an invalid task"), "{bad}: {e}");
        }
    }
}
