//! The `initialize` handshake: protocol versions, client and server descriptions.
//!
//! The client offers [`LATEST_PROTOCOL_VERSION`] and accepts a server that answers any of
//! [`SUPPORTED_PROTOCOL_VERSIONS`]; any other answer ends the session with an error naming the
//! server and the version. It advertises no `sampling` (ADR-0043 §5); it advertises `roots`
//! only when the server has roots ([`crate::client::roots`]), and `elicitation` (form mode)
//! only when an elicitation handler is plugged in ([`crate::client::elicitation`]).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The protocol revision the client offers in `initialize`.
pub const LATEST_PROTOCOL_VERSION: &str = "2025-11-25";

/// Every protocol revision the client accepts in a server's `initialize` answer, oldest first.
pub const SUPPORTED_PROTOCOL_VERSIONS: &[&str] =
    &["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"];

/// Whether the client accepts the protocol revision a server answered with.
pub fn is_supported_version(version: &str) -> bool {
    SUPPORTED_PROTOCOL_VERSIONS.contains(&version)
}

/// The name and version of an MCP implementation (`clientInfo`, `serverInfo`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct Implementation {
    /// The implementation's name.
    #[serde(default)]
    pub name: String,
    /// Its version.
    #[serde(default)]
    pub version: String,
    /// A display name, if given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Fields this client does not interpret (`description`, `icons`, `websiteUrl`, …), kept.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

impl Implementation {
    /// `clientInfo`: this crate's name and version.
    pub fn this_client() -> Self {
        Self {
            name: env!("CARGO_PKG_NAME").to_owned(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            title: None,
            extra: Map::new(),
        }
    }
}

/// The parameters of `initialize` as the client sends them.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct InitializeParams<'a> {
    pub(crate) protocol_version: &'a str,
    /// `{}`, or `{"elicitation": {"form": {}}}` ([`client_capabilities`]).
    pub(crate) capabilities: Map<String, Value>,
    pub(crate) client_info: &'a Implementation,
}

/// The client's `capabilities` in `initialize` (and in a modern request's `_meta`): `{}`, with
/// `{"elicitation": {"form": {}}}` when elicitation is on (form mode only; `2025-11-25` reads a
/// bare `{}` as form mode too, and older revisions only look for the key) and
/// `{"roots": {"listChanged": false}}` when the client has roots.
pub(crate) fn client_capabilities(elicitation: bool, roots: bool) -> Map<String, Value> {
    let mut capabilities = Map::new();
    if elicitation {
        capabilities.insert("elicitation".into(), serde_json::json!({ "form": {} }));
    }
    if roots {
        capabilities.insert("roots".into(), serde_json::json!({ "listChanged": false }));
    }
    capabilities
}

/// Declares the extension `id` (`io.modelcontextprotocol/skills`, …) under the client's
/// `capabilities.extensions`, beside those already declared.
pub(crate) fn declare_extension(capabilities: &mut Map<String, Value>, id: &str) {
    let extensions = capabilities
        .entry("extensions")
        .or_insert_with(|| Value::Object(Map::new()));
    if !extensions.is_object() {
        *extensions = Value::Object(Map::new());
    }
    if let Value::Object(extensions) = extensions {
        extensions
            .entry(id)
            .or_insert_with(|| Value::Object(Map::new()));
    }
}

/// The lists a client asks a server for, in the order it asks: `tools`, `resources`,
/// `prompts`, and `skills` (the `io.modelcontextprotocol/skills` extension).
pub const LISTS: [&str; 4] = ["tools", "resources", "prompts", "skills"];

/// Which of [`LISTS`] a server's `capabilities` (its `initialize` answer's, or a 2026-07-28
/// server's `server/discover` answer's) declare, in that order. A list it does not declare is
/// never asked for.
pub fn offered_lists(capabilities: &Value) -> Vec<&'static str> {
    LISTS
        .into_iter()
        .filter(|list| match *list {
            "skills" => crate::protocol::skills::offers_skills(capabilities),
            other => capabilities.get(other).is_some(),
        })
        .collect()
}

/// A server's answer to `initialize`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct InitializeResult {
    /// The protocol revision the server chose.
    pub protocol_version: String,
    /// The server's capabilities, as sent (`tools`, `logging`, …).
    #[serde(default)]
    pub capabilities: Value,
    /// The server's name and version.
    #[serde(default = "unnamed_server")]
    pub server_info: Implementation,
    /// Optional instructions for the client.
    #[serde(default)]
    pub instructions: Option<String>,
}

pub(crate) fn unnamed_server() -> Implementation {
    Implementation {
        name: String::new(),
        version: String::new(),
        title: None,
        extra: Map::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_params_offer_the_latest_version_and_no_capability() {
        let info = Implementation::this_client();
        let params = InitializeParams {
            protocol_version: LATEST_PROTOCOL_VERSION,
            capabilities: client_capabilities(false, false),
            client_info: &info,
        };
        let json = serde_json::to_value(&params).unwrap();
        assert_eq!(json["protocolVersion"], "2025-11-25");
        assert_eq!(json["capabilities"], serde_json::json!({}));
        assert_eq!(json["clientInfo"]["name"], "kaged-mcp");
        assert_eq!(json["clientInfo"]["version"], env!("CARGO_PKG_VERSION"));
    }

    #[test]
    fn elicitation_is_advertised_as_form_mode_only_when_on() {
        assert_eq!(
            Value::Object(client_capabilities(true, false)),
            serde_json::json!({"elicitation": {"form": {}}})
        );
        assert!(client_capabilities(false, false).is_empty());
    }

    #[test]
    fn roots_are_advertised_without_list_changes_only_when_set() {
        assert_eq!(
            Value::Object(client_capabilities(false, true)),
            serde_json::json!({"roots": {"listChanged": false}})
        );
        assert_eq!(
            Value::Object(client_capabilities(true, true)),
            serde_json::json!({"elicitation": {"form": {}}, "roots": {"listChanged": false}})
        );
    }

    #[test]
    fn an_extension_is_declared_beside_the_others() {
        let mut caps = client_capabilities(false, true);
        declare_extension(&mut caps, "io.modelcontextprotocol/skills");
        declare_extension(&mut caps, "io.modelcontextprotocol/tasks");
        declare_extension(&mut caps, "io.modelcontextprotocol/skills");
        assert_eq!(
            Value::Object(caps),
            serde_json::json!({"roots": {"listChanged": false}, "extensions": {
                "io.modelcontextprotocol/skills": {}, "io.modelcontextprotocol/tasks": {}}})
        );
    }

    #[test]
    fn only_the_lists_a_server_declares_are_offered() {
        let ext_skills = serde_json::json!({"resources": {"listChanged": true}, "completions": {},
            "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}}});
        assert_eq!(offered_lists(&ext_skills), ["resources", "skills"]);
        let all = serde_json::json!({"prompts": {}, "tools": {}, "resources": {},
            "extensions": {"io.modelcontextprotocol/skills": {}}});
        assert_eq!(offered_lists(&all), LISTS);
        assert!(offered_lists(&serde_json::json!({"logging": {}})).is_empty());
        assert!(offered_lists(&Value::Null).is_empty());
    }

    #[test]
    fn initialize_result_keeps_unknown_server_info_fields() {
        let json = r#"{"capabilities":{"tools":{}},"serverInfo":{"name":"s","version":"1",
            "websiteUrl":"https://x"},"protocolVersion":"2025-06-18","extra":1}"#;
        let r: InitializeResult = serde_json::from_str(json).unwrap();
        assert_eq!(r.protocol_version, "2025-06-18");
        assert_eq!(r.server_info.name, "s");
        assert_eq!(r.server_info.extra["websiteUrl"], "https://x");
    }

    #[test]
    fn only_the_four_known_revisions_are_supported() {
        for v in ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"] {
            assert!(is_supported_version(v), "{v}");
        }
        for v in ["2024-10-07", "1999-01-01", "2026-07-28", ""] {
            assert!(!is_supported_version(v), "{v}");
        }
    }
}
