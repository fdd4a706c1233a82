//! Prompts (`prompts/list`, `prompts/get`), argument completion (`completion/complete`) and
//! the server's log level (`logging/setLevel`).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::content::ContentBlock;
use super::modern::RequestMeta;
use super::notifications::LoggingLevel;

/// A prompt template a server offers (`prompts/list`).
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// Its name, as `prompts/get` takes it.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub arguments: Vec<PromptArgument>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// One argument of a [`Prompt`].
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether `prompts/get` must be given it.
    #[serde(default, deserialize_with = "null_as_false")]
    pub required: bool,
}

fn null_as_false<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<bool, D::Error> {
    Ok(Option::<bool>::deserialize(deserializer)?.unwrap_or(false))
}

/// One `prompts/list` page.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListPromptsPage {
    /// The prompts of this page.
    #[serde(default)]
    pub prompts: Vec<Prompt>,
    /// The cursor of the next page, if any.
    #[serde(default)]
    pub next_cursor: Option<String>,
}

/// The answer to `prompts/get`: the prompt's messages with its arguments filled in.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages.
    #[serde(default)]
    pub messages: Vec<PromptMessage>,
    /// `_meta`, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Value>,
}

/// One message of a prompt: a role (`user` or `assistant`) and one content block.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct PromptMessage {
    /// `user` or `assistant`, as sent.
    pub role: String,
    /// The content: text, image, audio, a resource link or an embedded resource.
    pub content: ContentBlock,
}

/// What `completion/complete` completes: an argument of a prompt, or a variable of a resource
/// template.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionRef {
    /// `{"type": "ref/prompt", "name": …}`
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `{"type": "ref/resource", "uri": …}`: the template's URI template.
    #[serde(rename = "ref/resource")]
    ResourceTemplate {
        /// The URI template, as listed.
        uri: String,
    },
}

/// The values a server offers for an argument (`completion/complete`), at most 100.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// The values, best first.
    #[serde(default)]
    pub values: Vec<String>,
    /// How many values there are in all, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than these, when the server says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// The answer to `completion/complete`.
#[derive(Debug, Deserialize)]
#[non_exhaustive]
pub struct CompleteResult {
    /// The values offered.
    #[serde(default)]
    pub completion: Completion,
}

/// `prompts/get` parameters.
#[derive(Debug, Serialize)]
pub(crate) struct GetPromptParams<'a> {
    pub(crate) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<&'a Map<String, Value>>,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(crate) meta: RequestMeta<'a>,
    /// A multi round-trip retry's answers to the server's input requests (2026-07-28).
    #[serde(rename = "inputResponses", skip_serializing_if = "Option::is_none")]
    pub(crate) input_responses: Option<&'a serde_json::Map<String, Value>>,
    /// A multi round-trip retry's echoed state.
    #[serde(rename = "requestState", skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<&'a str>,
}

/// `completion/complete` parameters.
#[derive(Debug, Serialize)]
pub(crate) struct CompleteParams<'a> {
    #[serde(rename = "ref")]
    pub(crate) reference: &'a CompletionRef,
    pub(crate) argument: CompleteArgument<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<CompleteContext<'a>>,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(crate) meta: RequestMeta<'a>,
}

/// The argument being completed.
#[derive(Debug, Serialize)]
pub(crate) struct CompleteArgument<'a> {
    pub(crate) name: &'a str,
    pub(crate) value: &'a str,
}

/// The arguments already chosen.
#[derive(Debug, Serialize)]
pub(crate) struct CompleteContext<'a> {
    pub(crate) arguments: &'a Map<String, Value>,
}

/// `logging/setLevel` parameters.
#[derive(Debug, Serialize)]
pub(crate) struct SetLevelParams<'a> {
    pub(crate) level: LoggingLevel,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(crate) meta: RequestMeta<'a>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prompts_read_with_their_arguments_and_required_flags() {
        let page: ListPromptsPage = serde_json::from_value(json!({
            "prompts": [
                {"name": "args-prompt", "description": "d", "arguments": [
                    {"name": "city", "required": true},
                    {"name": "state", "required": null}
                ]},
                {"name": "simple-prompt"}
            ],
            "nextCursor": "c"
        }))
        .unwrap();
        assert_eq!(page.prompts.len(), 2);
        assert!(page.prompts[0].arguments[0].required);
        assert!(!page.prompts[0].arguments[1].required);
        assert!(page.prompts[1].arguments.is_empty());
        assert_eq!(page.next_cursor.as_deref(), Some("c"));
    }

    #[test]
    fn a_prompt_result_reads_its_messages() {
        let r: GetPromptResult = serde_json::from_value(json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "Paris"}}]
        }))
        .unwrap();
        assert_eq!(r.messages[0].role, "user");
        assert_eq!(r.messages[0].content.as_text(), Some("Paris"));
    }

    #[test]
    fn completion_params_name_the_reference_argument_and_context() {
        let reference = CompletionRef::Prompt {
            name: "completable-prompt".into(),
        };
        let mut chosen = Map::new();
        chosen.insert("department".into(), "Sales".into());
        let params = CompleteParams {
            reference: &reference,
            argument: CompleteArgument {
                name: "name",
                value: "",
            },
            context: Some(CompleteContext { arguments: &chosen }),
            meta: RequestMeta::default(),
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({
                "ref": {"type": "ref/prompt", "name": "completable-prompt"},
                "argument": {"name": "name", "value": ""},
                "context": {"arguments": {"department": "Sales"}}
            })
        );
        let template = CompletionRef::ResourceTemplate {
            uri: "demo://resource/dynamic/text/{resourceId}".into(),
        };
        assert_eq!(
            serde_json::to_value(&template).unwrap(),
            json!({"type": "ref/resource", "uri": "demo://resource/dynamic/text/{resourceId}"})
        );
    }

    #[test]
    fn a_completion_reads_total_and_has_more() {
        let r: CompleteResult = serde_json::from_value(json!({
            "completion": {"values": ["David", "Eve"], "total": 2, "hasMore": false}
        }))
        .unwrap();
        assert_eq!(r.completion.values, ["David", "Eve"]);
        assert_eq!(r.completion.total, Some(2));
        assert_eq!(r.completion.has_more, Some(false));
    }

    #[test]
    fn set_level_writes_the_level_in_lower_case() {
        let p = SetLevelParams {
            level: LoggingLevel::Emergency,
            meta: RequestMeta::default(),
        };
        assert_eq!(
            serde_json::to_value(&p).unwrap(),
            json!({"level": "emergency"})
        );
    }
}
