//! `tools/list` and `tools/call`: tool descriptions and the call parameters.

use super::json_out;
use super::modern::RequestMeta;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// One tool as a server describes it in `tools/list`.
///
/// Fields this client does not interpret (`icons`, `execution`, `_meta`, …) are kept in
/// [`extra`](Self::extra); an unknown field is never an error.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolInfo {
    /// The tool's name as the server knows it.
    pub name: String,
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What the tool does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The JSON Schema of the arguments. A server that leaves it out gets `{"type":"object"}`.
    #[serde(default = "object_schema")]
    pub input_schema: Value,
    /// The JSON Schema of `structuredContent`, if the tool declares one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints. Untrusted unless the server is (MCP spec, tools).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Every other field, as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn object_schema() -> Value {
    serde_json::json!({"type": "object"})
}

impl ToolInfo {
    /// Whether a repeated call is harmless by the tool's own word: `readOnlyHint` or
    /// `idempotentHint` is `true`. The retry policy uses this (`ARCHITECTURE.md`, "Retry only
    /// when safe").
    pub fn is_retry_safe(&self) -> bool {
        self.annotations
            .as_ref()
            .is_some_and(|a| a.read_only_hint == Some(true) || a.idempotent_hint == Some(true))
    }
}

/// The `annotations` of a tool. Absent hints keep the spec's defaults, which the accessor
/// methods apply.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolAnnotations {
    /// A display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not modify its environment (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may perform destructive updates (default `true`; meaningful when not read-only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Repeating a call with the same arguments has no further effect (default `false`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to an open world of external entities (default `true`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
    /// Annotations this client does not interpret, kept as sent (they are part of what
    /// [`crate::pin`] pins).
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl ToolAnnotations {
    /// `readOnlyHint`, default `false`.
    pub fn read_only(&self) -> bool {
        self.read_only_hint.unwrap_or(false)
    }
    /// `destructiveHint`, default `true`.
    pub fn destructive(&self) -> bool {
        self.destructive_hint.unwrap_or(true)
    }
    /// `idempotentHint`, default `false`.
    pub fn idempotent(&self) -> bool {
        self.idempotent_hint.unwrap_or(false)
    }
    /// `openWorldHint`, default `true`.
    pub fn open_world(&self) -> bool {
        self.open_world_hint.unwrap_or(true)
    }
}

/// One page of `tools/list`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListToolsResult {
    /// The tools of this page.
    #[serde(default)]
    pub tools: Vec<ToolInfo>,
    /// The cursor of the next page; `None` (or an empty string) on the last one.
    #[serde(default)]
    pub next_cursor: Option<String>,
    /// 2026-07-28 `ttlMs`: how long (milliseconds) the list may be kept before it is read
    /// again. `None` from a legacy server.
    #[serde(default)]
    pub ttl_ms: Option<u64>,
    /// 2026-07-28 `cacheScope`: `public` or `private`.
    #[serde(default)]
    pub cache_scope: Option<String>,
}

/// `tools/call` parameters in a legacy session: the progress token in `_meta` when the caller
/// wants progress, nothing else (the hot path of a legacy session: no modern fields to check).
#[derive(Debug, Serialize)]
pub(crate) struct LegacyCallToolParams<'a> {
    pub(crate) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<&'a Map<String, Value>>,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    pub(crate) meta: Option<ProgressMeta>,
    /// `params.task`: run the call as a task (2025-11-25).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<super::tasks::TaskMetadata>,
}

impl LegacyCallToolParams<'_> {
    /// Writes these params as serde writes them (same bytes; `json_out` says why by hand).
    pub(crate) fn write_json(&self, buf: &mut Vec<u8>) -> std::io::Result<()> {
        write_name_and_arguments(buf, self.name, self.arguments)?;
        if let Some(meta) = &self.meta {
            buf.extend_from_slice(br#","_meta":"#);
            serde_json::to_writer(&mut *buf, meta)?;
        }
        if let Some(task) = &self.task {
            buf.extend_from_slice(br#","task":"#);
            serde_json::to_writer(&mut *buf, task)?;
        }
        buf.push(b'}');
        Ok(())
    }
}

/// `{"name":…` and, when there are arguments, `,"arguments":{…}`: how both params types of a
/// `tools/call` begin (the object is left open).
fn write_name_and_arguments(
    buf: &mut Vec<u8>,
    name: &str,
    arguments: Option<&Map<String, Value>>,
) -> std::io::Result<()> {
    buf.extend_from_slice(br#"{"name":"#);
    json_out::str(buf, name)?;
    if let Some(arguments) = arguments {
        buf.extend_from_slice(br#","arguments":"#);
        json_out::map(buf, arguments)?;
    }
    Ok(())
}

/// `{"progressToken": N}`; the client uses the request id as the token.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ProgressMeta {
    pub(crate) progress_token: u64,
}

/// `tools/call` parameters: the progress token rides in `_meta` when the caller wants progress
/// (the client uses the request id as the token), with the modern entries in a modern session;
/// a multi round-trip retry adds the answers and the server's state.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallToolParams<'a> {
    pub(crate) name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<&'a Map<String, Value>>,
    #[serde(rename = "_meta", skip_serializing_if = "RequestMeta::is_empty")]
    pub(crate) meta: RequestMeta<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) input_responses: Option<&'a Map<String, Value>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<&'a str>,
}

impl CallToolParams<'_> {
    /// Writes these params as serde writes them (same bytes; `json_out` says why by hand).
    pub(crate) fn write_json(&self, buf: &mut Vec<u8>) -> std::io::Result<()> {
        write_name_and_arguments(buf, self.name, self.arguments)?;
        if !self.meta.is_empty() {
            buf.extend_from_slice(br#","_meta":"#);
            serde_json::to_writer(&mut *buf, &self.meta)?;
        }
        if let Some(responses) = self.input_responses {
            buf.extend_from_slice(br#","inputResponses":"#);
            json_out::map(buf, responses)?;
        }
        if let Some(state) = self.request_state {
            buf.extend_from_slice(br#","requestState":"#);
            json_out::str(buf, state)?;
        }
        buf.push(b'}');
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tool_with_unknown_fields_reads_and_keeps_them() {
        let json = r#"{"name":"echo","inputSchema":{"type":"object"},"execution":{"taskSupport":"forbidden"},
            "icons":[],"annotations":{"readOnlyHint":true,"futureHint":1},"outputSchema":{"type":"object"}}"#;
        let t: ToolInfo = serde_json::from_str(json).unwrap();
        assert_eq!(t.name, "echo");
        assert!(t.extra.contains_key("execution"));
        assert!(t.extra.contains_key("icons"));
        assert!(t.annotations.as_ref().unwrap().read_only());
        assert!(t.output_schema.is_some());
        assert!(t.is_retry_safe());
        // An annotation this client does not know is kept as sent.
        let again = serde_json::to_value(&t).unwrap();
        assert_eq!(again["annotations"]["futureHint"], 1);
        assert_eq!(again["execution"]["taskSupport"], "forbidden");
    }

    #[test]
    fn a_tool_without_input_schema_gets_an_object_schema() {
        let t: ToolInfo = serde_json::from_str(r#"{"name":"x"}"#).unwrap();
        assert_eq!(t.input_schema, serde_json::json!({"type":"object"}));
        assert!(!t.is_retry_safe());
    }

    /// `idempotentHint` alone makes a tool retry-safe, as `readOnlyHint` alone does; a hint
    /// that is `false` (or absent) does not.
    #[test]
    fn either_hint_alone_makes_a_tool_retry_safe() {
        let safe = |annotations: serde_json::Value| {
            serde_json::from_value::<ToolInfo>(
                serde_json::json!({"name": "t", "annotations": annotations}),
            )
            .unwrap()
            .is_retry_safe()
        };
        assert!(safe(serde_json::json!({"idempotentHint": true})));
        assert!(safe(
            serde_json::json!({"readOnlyHint": false, "idempotentHint": true})
        ));
        assert!(safe(serde_json::json!({"readOnlyHint": true})));
        assert!(safe(
            serde_json::json!({"readOnlyHint": true, "idempotentHint": false})
        ));
        assert!(!safe(
            serde_json::json!({"readOnlyHint": false, "idempotentHint": false})
        ));
        assert!(!safe(serde_json::json!({"destructiveHint": false})));
    }

    #[test]
    fn annotation_defaults_follow_the_spec() {
        let a = ToolAnnotations::default();
        assert!(!a.read_only());
        assert!(a.destructive());
        assert!(!a.idempotent());
        assert!(a.open_world());
    }

    #[test]
    fn call_params_carry_the_progress_token_in_meta() {
        let mut args = Map::new();
        args.insert("message".into(), "hi".into());
        let p = CallToolParams {
            name: "echo",
            arguments: Some(&args),
            meta: RequestMeta {
                progress_token: Some(4),
                modern: None,
            },
            input_responses: None,
            request_state: None,
        };
        assert_eq!(
            serde_json::to_string(&p).unwrap(),
            r#"{"name":"echo","arguments":{"message":"hi"},"_meta":{"progressToken":4}}"#
        );
    }
}
