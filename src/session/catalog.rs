//! A server's `tools/list` made into its catalog ([`build_catalog`], [`rebuild_catalog`]):
//! names checked, the project's `tools:` filter applied (what it removed kept, to explain),
//! each tool judged against `mcp.lock` (held out under `pins = "enforce"` when it differs;
//! [`crate::pin`]), each tool's schemas compiled as `validate` says.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::config::{Config, McpServerConfig, TaskMode};

use crate::protocol::{TaskSupport, ToolInfo};
use crate::registry::{check_tool_name, McpTool, ServerCatalog, ToolDefinition, ToolSource};
use crate::validate::{ToolSchemas, Validation};

/// Turns a server's `tools/list` into its catalog: names checked, filter applied, duplicates
/// and bad names skipped with a WARN, each tool's schemas compiled as `validate` says
/// ([`crate::validate`]).
///
/// `runs_tasks`: the server runs `tools/call` as a task for this client
/// ([`McpClient::runs_tool_tasks`](crate::client::McpClient::runs_tool_tasks)). A tool that
/// requires a task is registered only then; otherwise (or with `tasks = "off"`) it is skipped
/// with a WARN, since every call of it would fail.
pub fn build_catalog(
    config: &Config,
    server: &McpServerConfig,
    tools: Vec<ToolInfo>,
    runs_tasks: bool,
) -> ServerCatalog {
    rebuild_catalog(config, server, tools, None, runs_tasks)
}

/// [`build_catalog`] for a server whose catalog `previous` is being replaced (`list_changed`,
/// a `ttlMs` re-read): a tool whose schemas did not change keeps its compiled validators (no
/// compile, no WARN repeated).
pub fn rebuild_catalog(
    config: &Config,
    server: &McpServerConfig,
    tools: Vec<ToolInfo>,
    previous: Option<&ServerCatalog>,
    runs_tasks: bool,
) -> ServerCatalog {
    let overrides = config.local.overrides(&server.key);
    let mode = overrides.tasks;
    let trust = overrides.trust_annotations;
    let validation = overrides.validate;
    let pins = config.server_pins(&server.key);
    let mut catalog = ServerCatalog::default();
    for t in tools {
        if let Err(why) = check_tool_name(&t.name) {
            tracing::warn!(server = %server.key, tool = %t.name.escape_debug(), reason = %why, "tool skipped");
            let name: String = t.name.escape_debug().take(100).collect();
            catalog.skipped.insert(name, why.to_string());
            continue;
        }
        if let Some(rule) = server.tools.refusal(&t.name) {
            catalog.filtered.insert(t.name.clone(), rule);
            continue;
        }
        let full = format!("mcp.{}.{}", server.key, t.name);
        if catalog.tools.contains_key(&full) || catalog.held.contains_key(&t.name) {
            tracing::warn!(server = %server.key, tool = %t.name, "duplicate tool name skipped");
            catalog.skipped.insert(
                t.name.clone(),
                "the server lists this name twice".to_owned(),
            );
            continue;
        }
        let pin = pins.verdict(&t);
        if pins.holds(&pin) {
            catalog.held.insert(t.name.clone(), pin);
            continue;
        }
        let task = match (t.task_support(), mode) {
            (TaskSupport::Required, TaskMode::Off) => {
                let why = format!(
                    "it runs only as a task and tasks = \"off\" for this server (`tasks` under [mcp.{}] in local.toml)",
                    server.key
                );
                tracing::warn!(server = %server.key, tool = %t.name, reason = %why, "tool skipped");
                catalog.skipped.insert(t.name.clone(), why);
                continue;
            }
            (TaskSupport::Required, _) if !runs_tasks => {
                let why =
                    "it runs only as a task and the server does not offer tasks for tools/call \
                           (no capabilities.tasks.requests.tools.call, nor the tasks extension)"
                        .to_owned();
                tracing::warn!(server = %server.key, tool = %t.name, reason = %why, "tool skipped");
                catalog.skipped.insert(t.name.clone(), why);
                continue;
            }
            (TaskSupport::Required, _) => true,
            (TaskSupport::Optional, TaskMode::Prefer) => runs_tasks,
            _ => false,
        };
        let retry_safe = trust && t.is_retry_safe();
        let returns = t
            .output_schema
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new()));
        let schemas = (validation != Validation::Off).then(|| {
            previous
                .and_then(|p| p.tools.get(&full))
                .and_then(|p| p.schemas.clone().map(|s| (p, s)))
                .filter(|(p, s)| {
                    // `returns` is `{}` for no output schema too: compare whether one is declared.
                    p.definition.parameters == t.input_schema
                        && p.definition.returns == returns
                        && s.declares_output() == t.output_schema.is_some()
                })
                .map(|(_, s)| s)
                .unwrap_or_else(|| Arc::new(ToolSchemas::compile(&server.key, &t, validation)))
        });
        let definition = ToolDefinition {
            name: full.clone(),
            namespace: "mcp".into(),
            description: t
                .description
                .clone()
                .or(t.title.clone())
                .unwrap_or_default(),
            parameters: t.input_schema.clone(),
            returns,
            requires: Vec::new(),
            source: ToolSource::Mcp,
            mcp_server: Some(server.key.clone()),
            mcp_tool_name: Some(t.name.clone()),
        };
        catalog.tools.insert(
            full,
            McpTool {
                name: Arc::from(t.name.as_str()),
                definition,
                retry_safe,
                schemas,
                task,
                pin,
                tool: Arc::new(t),
            },
        );
    }
    catalog
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Sources;

    fn tool(name: &str, read_only: bool) -> ToolInfo {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "description": format!("tool {name}"),
            "inputSchema": {"type": "object"},
            "annotations": {"readOnlyHint": read_only},
        }))
        .unwrap()
    }

    fn config(local: &str) -> Config {
        Sources::new(
            "mcp:\n  gh:\n    transport: stdio\n    command: [x]\n    tools:\n      deny: [\"repo.delete\"]\n",
        )
        .local(local)
        .load()
        .unwrap()
    }

    #[test]
    fn bad_names_and_duplicates_are_skipped_and_the_filter_applies() {
        let c = config("");
        let server = c.project.server("gh").unwrap();
        let long = "x".repeat(129);
        let tools = vec![
            tool("issue.create", false),
            tool("", false),
            tool("has space", false),
            tool("slash/no", false),
            tool(&long, false),
            tool("issue.create", true),
            tool("repo.delete", false),
            tool("repo.list", true),
        ];
        let catalog = build_catalog(&c, server, tools, false);
        let names: Vec<&str> = catalog.tools.keys().map(String::as_str).collect();
        assert_eq!(names, ["mcp.gh.issue.create", "mcp.gh.repo.list"]);
        let first = &catalog.tools["mcp.gh.issue.create"];
        assert_eq!(
            first.definition.description, "tool issue.create",
            "the first one wins"
        );
        assert_eq!(
            first.definition.mcp_tool_name.as_deref(),
            Some("issue.create")
        );
        assert_eq!(first.definition.returns, serde_json::json!({}));
        // What was left out is kept, to be explained: skipped names with why, filtered ones
        // with the rule.
        let skipped: Vec<&str> = catalog.skipped.keys().map(String::as_str).collect();
        assert_eq!(
            skipped,
            ["", "has space", "issue.create", "slash/no", &long[..100]]
        );
        assert_eq!(
            catalog.skipped["issue.create"],
            "the server lists this name twice"
        );
        assert!(catalog.skipped["has space"].contains("' '"));
        assert_eq!(catalog.filtered.get("repo.delete"), Some(&"tools.deny"));
    }

    #[test]
    fn a_rebuilt_catalog_keeps_the_validators_of_unchanged_schemas_only() {
        let c = config("");
        let server = c.project.server("gh").unwrap();
        let schemas = |cat: &ServerCatalog| cat.tools["mcp.gh.repo.list"].schemas.clone().unwrap();
        let first = build_catalog(&c, server, vec![tool("repo.list", true)], false);
        let same = rebuild_catalog(
            &c,
            server,
            vec![tool("repo.list", true)],
            Some(&first),
            false,
        );
        assert!(
            Arc::ptr_eq(&schemas(&first), &schemas(&same)),
            "not compiled again"
        );
        // An output schema of `{}` looks like none in `returns`: it is a change all the same.
        let mut declared = tool("repo.list", true);
        declared.output_schema = Some(serde_json::json!({}));
        let changed = rebuild_catalog(&c, server, vec![declared], Some(&same), false);
        assert!(!Arc::ptr_eq(&schemas(&same), &schemas(&changed)));
        assert!(schemas(&changed).declares_output());
    }

    #[test]
    fn annotations_make_a_tool_retry_safe_only_on_trusted_servers() {
        let untrusted = config("");
        let server = untrusted.project.server("gh").unwrap();
        let c = build_catalog(&untrusted, server, vec![tool("repo.list", true)], false);
        assert!(!c.tools["mcp.gh.repo.list"].retry_safe);
        let trusted = config("[mcp.gh]\ntrust_annotations = true\n");
        let c = build_catalog(
            &trusted,
            server,
            vec![tool("repo.list", true), tool("repo.push", false)],
            false,
        );
        assert!(c.tools["mcp.gh.repo.list"].retry_safe);
        assert!(!c.tools["mcp.gh.repo.push"].retry_safe);
        // A tool that writes, but idempotently, is retried too.
        let mut upsert = tool("repo.upsert", false);
        upsert.annotations.as_mut().unwrap().idempotent_hint = Some(true);
        let c = build_catalog(&trusted, server, vec![upsert], false);
        assert!(c.tools["mcp.gh.repo.upsert"].retry_safe);
    }

    fn task_tool(name: &str, support: &str) -> ToolInfo {
        serde_json::from_value(serde_json::json!({
            "name": name,
            "inputSchema": {"type": "object"},
            "execution": {"taskSupport": support},
        }))
        .unwrap()
    }

    fn task_catalog(local: &str, runs_tasks: bool) -> ServerCatalog {
        let c = config(local);
        let server = c.project.server("gh").unwrap();
        let tools = vec![
            task_tool("research", "required"),
            task_tool("build", "optional"),
            task_tool("echo", "forbidden"),
        ];
        build_catalog(&c, server, tools, runs_tasks)
    }

    #[test]
    fn task_tools_are_registered_by_the_mode_and_the_servers_capability() {
        let task =
            |c: &ServerCatalog, name: &str| c.tools.get(&format!("mcp.gh.{name}")).map(|t| t.task);
        // Default (`required`): only the tool that requires it runs as a task.
        let c = task_catalog("", true);
        assert_eq!(
            (task(&c, "research"), task(&c, "build"), task(&c, "echo")),
            (Some(true), Some(false), Some(false))
        );
        // `prefer`: the optional one too.
        let c = task_catalog("[mcp.gh]\ntasks = \"prefer\"\n", true);
        assert_eq!(
            (task(&c, "research"), task(&c, "build")),
            (Some(true), Some(true))
        );
        // A server that offers no tasks: the required one is skipped, with why.
        let c = task_catalog("[mcp.gh]\ntasks = \"prefer\"\n", false);
        assert_eq!(
            (task(&c, "research"), task(&c, "build")),
            (None, Some(false))
        );
        assert!(
            c.skipped["research"].contains("does not offer tasks"),
            "{:?}",
            c.skipped
        );
        // `off`: never, and the required one is skipped naming the setting.
        let c = task_catalog("[mcp.gh]\ntasks = \"off\"\n", true);
        assert_eq!(
            (task(&c, "research"), task(&c, "build")),
            (None, Some(false))
        );
        assert!(
            c.skipped["research"].contains("tasks = \"off\""),
            "{:?}",
            c.skipped
        );
        assert!(
            c.skipped["research"].contains("[mcp.gh]"),
            "{:?}",
            c.skipped
        );
    }
}
