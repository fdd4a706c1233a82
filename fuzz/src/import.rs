//! `import_formats`: another client's server list through `kaged_mcp::config::import`, as
//! `kaged-mcp import` runs it: planned against a fixed project, written into its
//! `project.yaml` and a new `local.toml`, and loaded back.

use std::borrow::Cow;

use kaged_mcp::config::import::{self, write};
use kaged_mcp::config::{is_valid_server_key, Sources, MAX_SERVERS};

/// The file names the first byte of an input picks from (the name is only a hint).
pub const FILE_NAMES: &[&str] = &[
    ".mcp.json",
    "claude_desktop_config.json",
    ".cursor/mcp.json",
    ".vscode/mcp.json",
    "config.toml",
    "notes.txt",
];

/// The project the servers are added to: one server, `db`, and a block after `mcp:`.
pub const PROJECT: &str = "# a project\nmcp:\n  db:\n    transport: stdio\n    command: [\"db\"]\n\nprimary:\n  tools:\n    \"mcp.db.*\": { enabled: true }\n";

/// `import_formats`: the first byte picks a [`FILE_NAMES`] entry, the rest (as UTF-8 with
/// invalid sequences replaced) is the file.
///
/// Planning never panics and an error says something; a plan's keys are valid, unique, not
/// `db`, and within [`MAX_SERVERS`] with it; its servers are added to [`PROJECT`] (and to no
/// project) without an error; the result loads with the new `local.toml`, every server in it,
/// and the only errors, if any, are the secrets the file had as `${…}` references.
pub fn import_formats(data: &[u8]) {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let name = FILE_NAMES[usize::from(pick) % FILE_NAMES.len()];
    let text: Cow<'_, str> = String::from_utf8_lossy(rest);
    let plan = match import::plan(&text, name, &["db"]) {
        Ok(p) => p,
        Err(e) => {
            assert!(!e.to_string().trim().is_empty(), "an empty error");
            return;
        }
    };
    let mut keys: Vec<&str> = plan.servers.iter().map(|s| s.key.as_str()).collect();
    assert!(keys.len() < MAX_SERVERS, "{} servers planned", keys.len());
    for k in &keys {
        assert!(is_valid_server_key(k) && *k != "db", "key {k:?}");
    }
    keys.sort_unstable();
    keys.dedup();
    assert_eq!(keys.len(), plan.servers.len(), "a key planned twice");
    for s in &plan.skipped {
        assert!(!s.reason.is_empty(), "a skip without a reason");
    }
    if plan.servers.is_empty() {
        return;
    }
    let fresh = write::project_yaml(None, &plan);
    assert!(fresh.is_ok(), "a new project.yaml: {fresh:?}");
    let project = write::project_yaml(Some(PROJECT), &plan);
    let project = project.unwrap_or_else(|e| panic!("adding to project.yaml: {e}"));
    assert!(
        project.contains("\nprimary:\n  tools:\n"),
        "the block after mcp: was lost"
    );
    let local = write::local_toml(None, &plan).unwrap_or_else(|e| panic!("local.toml: {e}"));
    let mut sources = Sources::new(project.as_str());
    if let Some(local) = &local {
        sources = sources.local(local.as_str());
    }
    let missing = plan.secrets().any(|(_, m)| m.value.is_none());
    match sources.load() {
        Ok(config) => {
            assert_eq!(config.project.servers.len(), plan.servers.len() + 1);
            if let Err(errors) = config.resolve_secrets() {
                assert!(missing, "an auth secret is missing: {errors}");
                for e in &errors {
                    assert!(e.message.contains("needs secret `import."), "{e}");
                }
            }
        }
        Err(errors) => {
            assert!(
                missing,
                "the imported project does not load: {errors}\n{project}"
            );
            for e in &errors {
                assert!(
                    e.message.contains("needs secret `import."),
                    "{e}\n{project}"
                );
            }
        }
    }
}
