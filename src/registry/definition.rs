//! [`ToolDefinition`]: a tool as the agent's catalog shows it, from any source (ADR-0043 §2).

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Where a tool comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum ToolSource {
    /// Built into the daemon.
    Builtin,
    /// Served by a kaged plugin subprocess.
    Plugin,
    /// Discovered on an MCP server.
    Mcp,
}

/// A capability a tool needs from its caller's cage (`net`, `fs.read`, …). MCP tools need
/// none: the daemon, not the agent, talks to the server.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
#[non_exhaustive]
pub struct ToolRequirement(pub String);

/// A tool in the registry, serialized under exactly the ADR's field names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ToolDefinition {
    /// The full name, such as `mcp.github.issue.create`.
    pub name: String,
    /// The first segment of the name: `mcp` for every MCP tool.
    pub namespace: String,
    /// From the tool's metadata.
    pub description: String,
    /// JSON Schema of the arguments (the MCP tool's `inputSchema`).
    pub parameters: Value,
    /// JSON Schema of the result (the MCP tool's `outputSchema`, or `{}`).
    pub returns: Value,
    /// Capabilities the tool needs.
    pub requires: Vec<ToolRequirement>,
    /// Where it comes from.
    pub source: ToolSource,
    /// The DSL key of its MCP server.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mcp_server: Option<String>,
    /// The tool's name as its MCP server knows it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mcp_tool_name: Option<String>,
}

impl ToolDefinition {
    /// A tool of `source` named `name` (its namespace the name's first segment), with no
    /// description, `{}` as its parameter and result schemas, and no requirement: a built-in
    /// or plugin tool the daemon registers beside the MCP ones.
    pub fn new(name: impl Into<String>, source: ToolSource) -> Self {
        let name = name.into();
        let namespace = name.split('.').next().unwrap_or_default().to_owned();
        Self {
            name,
            namespace,
            description: String::new(),
            parameters: Value::Object(serde_json::Map::new()),
            returns: Value::Object(serde_json::Map::new()),
            requires: Vec::new(),
            source,
            mcp_server: None,
            mcp_tool_name: None,
        }
    }

    /// With `description`.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// With `parameters`, the JSON Schema of its arguments.
    pub fn with_parameters(mut self, parameters: Value) -> Self {
        self.parameters = parameters;
        self
    }
}

/// Longest tool name an MCP server may give a tool.
pub const MAX_TOOL_NAME: usize = 128;

/// Why a server's tool name cannot be registered.
pub fn check_tool_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty".into());
    }
    if name.len() > MAX_TOOL_NAME {
        return Err(format!(
            "the name is {} bytes long, more than {MAX_TOOL_NAME}",
            name.len()
        ));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '-')))
    {
        return Err(format!(
            "the name contains {c:?}; allowed: A-Z a-z 0-9 _ . -"
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serializes_under_the_adr_field_names() {
        let d = ToolDefinition {
            name: "mcp.gh.issue.create".into(),
            namespace: "mcp".into(),
            description: "d".into(),
            parameters: serde_json::json!({"type": "object"}),
            returns: serde_json::json!({}),
            requires: vec![],
            source: ToolSource::Mcp,
            mcp_server: Some("gh".into()),
            mcp_tool_name: Some("issue.create".into()),
        };
        let v = serde_json::to_value(&d).unwrap();
        let keys: Vec<&str> = v.as_object().unwrap().keys().map(String::as_str).collect();
        for k in [
            "name",
            "namespace",
            "description",
            "parameters",
            "returns",
            "requires",
            "source",
            "mcp_server",
            "mcp_tool_name",
        ] {
            assert!(keys.contains(&k), "{k} missing from {keys:?}");
        }
        assert_eq!(v["source"], "mcp");
    }

    #[test]
    fn tool_names_are_checked() {
        assert!(check_tool_name("issue.create-v2_x").is_ok());
        assert!(check_tool_name("").is_err());
        assert!(check_tool_name("has space").is_err());
        assert!(check_tool_name("slash/no").is_err());
        assert!(check_tool_name(&"a".repeat(129)).is_err());
        assert!(check_tool_name(&"a".repeat(128)).is_ok());
    }
}
