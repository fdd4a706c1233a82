//! `elicitation/create`: a server asks the user, through the client, for input.
//!
//! Two modes (spec revision `2025-11-25`): **form** (the default when `mode` is absent, as in
//! `2025-06-18`), where the server sends a `requestedSchema` (a flat object of primitive
//! properties) and the answer carries the values; and **url**, where the server sends a URL the
//! user should open and the answer carries no values. The answer is one of three actions:
//! accept, decline, cancel.
//!
//! [`ElicitParams`] reads a request leniently: a missing `message` is empty and a form request
//! without `requestedSchema` asks for nothing. A `mode` other than `form` or `url`, or a URL
//! request without its `url`, does not decode; the client answers it with "invalid params".
//!
//! # Example
//! ```
//! use kaged_mcp::protocol::elicitation::{ElicitMode, ElicitParams};
//!
//! let json = r#"{"message":"Your name?","requestedSchema":{"type":"object",
//!     "properties":{"name":{"type":"string","default":"Ada"}}}}"#;
//! let params: ElicitParams = serde_json::from_str(json)?;
//! assert_eq!(params.message, "Your name?");
//! assert!(matches!(&params.mode, ElicitMode::Form { requested_schema }
//!     if requested_schema["properties"]["name"]["default"] == "Ada"));
//! # Ok::<(), serde_json::Error>(())
//! ```

use serde::Deserialize;
use serde_json::{Map, Value};

/// The parameters of an `elicitation/create` request. See the [module docs](self).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(try_from = "WireParams")]
#[non_exhaustive]
pub struct ElicitParams {
    /// Why the server asks, for the user to read.
    pub message: String,
    /// What is asked: a form, or a URL to open.
    pub mode: ElicitMode,
    /// Fields this client does not interpret (`_meta`, …), kept.
    pub extra: Map<String, Value>,
}

/// What an elicitation asks for.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitMode {
    /// `mode: "form"`, or no `mode`: values for the properties of `requested_schema`, a JSON
    /// Schema object (`type`, `properties`, `required`) as sent. A property's `default` is
    /// filled in by the client when an accepted answer leaves it out (SEP-1034).
    Form {
        /// The schema of the expected values.
        requested_schema: Map<String, Value>,
    },
    /// `mode: "url"` (`2025-11-25`): the user is asked to open `url`; the values never pass
    /// through the client. This client does not advertise URL mode, so a server should not
    /// send it; a handler that gets one anyway may decline it.
    Url {
        /// The URL the user should open.
        url: String,
        /// The server's id for this elicitation (named again in
        /// `notifications/elicitation/complete`).
        elicitation_id: String,
    },
}

/// The answer to an elicitation: the user accepted, declined or cancelled.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitResult {
    /// The user submitted. For a form, the values by property name: a property the schema
    /// gives a `default` may be left out, the client fills it in. For a URL, the user agreed to
    /// open it; the values are ignored and the answer carries no `content`.
    Accept(Map<String, Value>),
    /// The user explicitly said no.
    Decline,
    /// The user dismissed the request without choosing (closed the dialog, timed out).
    Cancel,
}

impl ElicitResult {
    /// `"accept"`, `"decline"` or `"cancel"`: the `action` on the wire.
    pub const fn action(&self) -> &'static str {
        match self {
            Self::Accept(_) => "accept",
            Self::Decline => "decline",
            Self::Cancel => "cancel",
        }
    }

    /// The JSON-RPC `result` of the answer: `{"action": …}`, with `content` for an accepted
    /// form (`with_content`) only.
    pub(crate) fn into_result(self, with_content: bool) -> Value {
        let mut result = Map::new();
        result.insert("action".into(), Value::from(self.action()));
        if let (Self::Accept(content), true) = (self, with_content) {
            result.insert("content".into(), Value::Object(content));
        }
        Value::Object(result)
    }
}

/// `elicitation/create` params as sent, before the mode is checked.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireParams {
    #[serde(default)]
    mode: Option<String>,
    #[serde(default)]
    message: String,
    #[serde(default)]
    requested_schema: Option<Map<String, Value>>,
    #[serde(default)]
    url: Option<String>,
    #[serde(default)]
    elicitation_id: Option<String>,
    #[serde(flatten)]
    extra: Map<String, Value>,
}

impl TryFrom<WireParams> for ElicitParams {
    type Error = String;

    fn try_from(wire: WireParams) -> Result<Self, String> {
        let mode = match wire.mode.as_deref() {
            None | Some("form") => ElicitMode::Form {
                requested_schema: wire.requested_schema.unwrap_or_default(),
            },
            Some("url") => ElicitMode::Url {
                url: wire.url.ok_or("a URL-mode elicitation needs `url`")?,
                elicitation_id: wire.elicitation_id.unwrap_or_default(),
            },
            Some(other) => return Err(format!("unsupported elicitation mode `{other}`")),
        };
        Ok(Self {
            message: wire.message,
            mode,
            extra: wire.extra,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn parse(v: Value) -> Result<ElicitParams, serde_json::Error> {
        serde_json::from_value(v)
    }

    #[test]
    fn a_request_without_mode_is_a_form() {
        let p = parse(json!({"message": "m", "requestedSchema": {"type": "object"}})).unwrap();
        assert_eq!(
            p.mode,
            ElicitMode::Form {
                requested_schema: json!({"type": "object"}).as_object().unwrap().clone()
            }
        );
    }

    #[test]
    fn a_form_without_schema_asks_for_nothing_and_meta_is_kept() {
        let p = parse(json!({"mode": "form", "_meta": {"k": 1}})).unwrap();
        assert_eq!(p.message, "");
        assert_eq!(
            p.mode,
            ElicitMode::Form {
                requested_schema: Map::new()
            }
        );
        assert_eq!(p.extra["_meta"], json!({"k": 1}));
    }

    #[test]
    fn a_url_request_decodes_with_its_id() {
        let p = parse(
            json!({"mode": "url", "message": "open", "url": "https://x/y",
            "elicitationId": "e1"}),
        )
        .unwrap();
        assert_eq!(
            p.mode,
            ElicitMode::Url {
                url: "https://x/y".into(),
                elicitation_id: "e1".into()
            }
        );
    }

    #[test]
    fn an_unknown_mode_or_a_url_request_without_url_does_not_decode() {
        let err = parse(json!({"mode": "telepathy", "message": "m"})).unwrap_err();
        assert!(err.to_string().contains("telepathy"), "{err}");
        assert!(parse(json!({"mode": "url", "message": "m"})).is_err());
    }

    #[test]
    fn results_carry_content_only_when_asked() {
        let content = json!({"a": 1}).as_object().unwrap().clone();
        assert_eq!(
            ElicitResult::Accept(content.clone()).into_result(true),
            json!({"action": "accept", "content": {"a": 1}})
        );
        assert_eq!(
            ElicitResult::Accept(content).into_result(false),
            json!({"action": "accept"})
        );
        assert_eq!(
            ElicitResult::Decline.into_result(true),
            json!({"action": "decline"})
        );
        assert_eq!(
            ElicitResult::Cancel.into_result(true),
            json!({"action": "cancel"})
        );
    }
}
