//! Skills over MCP (SEP-2640, the `io.modelcontextprotocol/skills` extension): a server that
//! declares the extension under `capabilities.extensions` lists its agent skills with
//! `skills/list`; each entry names the skill's `SKILL.md` (its URI), the YAML frontmatter of
//! that file as the server published it, and every file of the skill with its SHA-256 digest
//! and size. The files themselves are read with `resources/read`, and verified against the
//! entry before any use ([`McpClient::load_skill`](crate::client::McpClient::load_skill)).
//!
//! A listing may be partial: `skills/get` `{"uri": "skill://<name>/SKILL.md"}` answers
//! `{"skill": <entry>}` for a skill the server serves, listed or not, and `-32602` for a URI it
//! does not serve as a skill.
//!
//! Wire, as the conformance suite's 0.2.0 scenarios serve it:
//! `{"resultType": "complete", "ttlMs": 0, "cacheScope": "private", "skills": [{"uri":
//! "skill://pdf-processing/SKILL.md", "frontmatter": {"name": …, "description": …},
//! "resources": [{"uri": …, "digest": "sha256:<hex>", "size": <bytes>}]}]}`.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The extension's identifier, under `capabilities.extensions` of a server that serves skills.
pub const SKILLS_EXTENSION: &str = "io.modelcontextprotocol/skills";

/// Whether a server's `capabilities` declare the skills extension.
pub fn offers_skills(capabilities: &Value) -> bool {
    capabilities
        .get("extensions")
        .and_then(|e| e.get(SKILLS_EXTENSION))
        .is_some()
}

/// The answer to `skills/list`.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListSkillsResult {
    /// The skills.
    #[serde(default)]
    pub skills: Vec<SkillEntry>,
    /// How long the list may be kept, in milliseconds (2026-07-28 cache hint); absent or 0:
    /// not kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// Who may share the cached list (`private`, `public`), as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
}

/// The answer to `skills/get`: the entry of the skill asked for, in the shape of a listed one
/// (`{"skill": {"uri", "frontmatter", "resources"}}`, plus `resultType` in 2026-07-28).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct GetSkillResult {
    /// The skill's entry.
    pub skill: SkillEntry,
}

/// One skill as listed: where its `SKILL.md` is, what that file's frontmatter says, and every
/// file of the skill.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillEntry {
    /// The URI of the skill's `SKILL.md` (`skill://<name>/SKILL.md`).
    pub uri: String,
    /// The YAML frontmatter of `SKILL.md`, as the server lists it (`name`, `description`, …).
    #[serde(default)]
    pub frontmatter: Map<String, Value>,
    /// The skill's files, `SKILL.md` among them, each with its digest and size.
    #[serde(default)]
    pub resources: Vec<SkillFile>,
}

impl SkillEntry {
    /// The skill's name (`frontmatter.name`), or its URI when it has none.
    pub fn name(&self) -> &str {
        self.frontmatter
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or(&self.uri)
    }

    /// The skill's description (`frontmatter.description`), if any.
    pub fn description(&self) -> Option<&str> {
        self.frontmatter.get("description").and_then(Value::as_str)
    }

    /// The listed file at `uri`, if the skill lists one.
    pub fn file(&self, uri: &str) -> Option<&SkillFile> {
        self.resources.iter().find(|f| f.uri == uri)
    }
}

/// One file of a skill: its URI, the SHA-256 digest of its bytes (`sha256:<hex>`) and its
/// size in bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SkillFile {
    /// The file's URI.
    pub uri: String,
    /// `sha256:<64 hex digits>` of the file's bytes (a text's UTF-8 bytes).
    pub digest: String,
    /// The file's size in bytes.
    pub size: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_listing_reads_as_the_conformance_suite_serves_it() {
        let listed: ListSkillsResult = serde_json::from_value(json!({
            "resultType": "complete", "ttlMs": 0, "cacheScope": "private",
            "skills": [{"uri": "skill://pdf-processing/SKILL.md",
                "frontmatter": {"name": "pdf-processing", "description": "Extract PDFs"},
                "resources": [{"uri": "skill://pdf-processing/SKILL.md",
                    "digest": "sha256:00", "size": 12}]}]
        }))
        .unwrap();
        let skill = &listed.skills[0];
        assert_eq!(skill.name(), "pdf-processing");
        assert_eq!(skill.description(), Some("Extract PDFs"));
        assert_eq!(skill.file(&skill.uri).unwrap().size, 12);
        assert_eq!(listed.ttl_ms, Some(0));
        assert!(offers_skills(
            &json!({"extensions": {SKILLS_EXTENSION: {}}})
        ));
        assert!(!offers_skills(&json!({"resources": {}})));
    }
}
