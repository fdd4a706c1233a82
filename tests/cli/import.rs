//! `kaged-mcp import FILE` through the built binary, one test per format: realistic files with
//! `env` secrets, an `Authorization` header, a `${VAR}` reference, a name that needs converting
//! and a key the project already has. After the import, project.yaml holds no secret value,
//! local.toml is mode 0600 with the values, `check` names the one missing secret and passes
//! once it is filled in.

use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;

use common::cli::{run, Out};

use crate::common;

/// The project every import goes into: `db` is declared already.
const EXISTING: &str = "# the team's project\nmcp:\n  db:\n    transport: stdio\n    command: [\"kaged-mcp\", \"demo-server\"]\n\nprimary:\n  tools:\n    \"mcp.db.*\": { enabled: true }\n";

/// A project with [`EXISTING`] and the file to import, named `name`, holding `text`.
fn setup(name: &str, text: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let d = tempfile::tempdir().unwrap();
    std::fs::write(d.path().join("project.yaml"), EXISTING).unwrap();
    let file = d.path().join("from").join(name);
    std::fs::create_dir_all(file.parent().unwrap()).unwrap();
    std::fs::write(&file, text).unwrap();
    (d, file)
}

fn import(dir: &Path, file: &Path) -> Out {
    run(&["import", file.to_str().unwrap()], dir)
}

/// What every import must leave: the old text kept, no secret in project.yaml or the output,
/// local.toml private with every value, `check` naming `missing` (the `${VAR}` one) until it
/// is set under `table`, then passing.
fn assert_imported(dir: &Path, out: &Out, secrets: &[&str], missing: &str, table: &str) {
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let project = std::fs::read_to_string(dir.join("project.yaml")).unwrap();
    assert!(
        project.starts_with(EXISTING.split("\nprimary").next().unwrap()),
        "{project}"
    );
    assert!(project.contains("\nprimary:\n  tools:\n"), "{project}");
    let local_file = dir.join("local.toml");
    let local = std::fs::read_to_string(&local_file).unwrap();
    let mode = std::fs::metadata(&local_file).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o600);
    for s in secrets {
        assert!(!project.contains(s), "{s} in project.yaml:\n{project}");
        assert!(
            !out.stdout.contains(s) && !out.stderr.contains(s),
            "{s} printed"
        );
        assert!(local.contains(s), "{s} not in local.toml:\n{local}");
    }
    assert!(out.stdout.contains("skipped \"db\""), "{}", out.stdout);
    assert!(out.stdout.contains("needs a value: "), "{}", out.stdout);
    let check = run(&["check"], dir);
    assert_eq!(check.code, Some(2), "{}\n{}", check.stdout, check.stderr);
    assert!(check.stderr.contains(missing), "{}", check.stderr);
    let leaf = missing.rsplit('.').next().unwrap();
    let filled = local.replace(
        &format!("[{table}]\n"),
        &format!("[{table}]\n{leaf} = \"filled-in\"\n"),
    );
    std::fs::write(&local_file, filled).unwrap();
    let check = run(&["check"], dir);
    assert_eq!(
        check.code,
        Some(0),
        "{}\n{}\n{project}",
        check.stdout,
        check.stderr
    );
}

#[test]
fn a_claude_code_mcp_json_is_imported() {
    let (d, file) = setup(
        ".mcp.json",
        r#"{
  "mcpServers": {
    "GitHub": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_cc_secret_0123", "NODE_ENV": "production"}
    },
    "Linear Tracker": {
      "type": "http",
      "url": "https://mcp.linear.app/mcp",
      "headers": {"Authorization": "Bearer lin_cc_secret_4567", "X-Region": "eu"}
    },
    "notion": {"command": "npx", "args": ["-y", "@notionhq/notion-mcp-server"],
               "env": {"NOTION_TOKEN": "${NOTION_TOKEN}"}},
    "db": {"command": "other-db"}
  }
}"#,
    );
    let out = import(d.path(), &file);
    assert!(
        out.stdout.contains("Claude Code (mcpServers)"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("added linear-tracker (from \"Linear Tracker\"): streamable-http, https://mcp.linear.app/mcp (auth: bearer); secrets: header Authorization → import.linear-tracker.authorization"),
        "{}",
        out.stdout
    );
    assert_imported(
        d.path(),
        &out,
        &["ghp_cc_secret_0123", "lin_cc_secret_4567"],
        "import.notion.NOTION_TOKEN",
        "secrets.import.notion",
    );
    let project = std::fs::read_to_string(d.path().join("project.yaml")).unwrap();
    assert!(project.contains("NODE_ENV: \"production\""), "{project}");
    assert!(
        !project.contains("other-db"),
        "db was overwritten:\n{project}"
    );
}

#[test]
fn a_claude_desktop_config_is_imported() {
    let (d, file) = setup(
        "claude_desktop_config.json",
        r#"{
  "globalShortcut": "",
  "mcpServers": {
    "brave-search": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-brave-search"],
                     "env": {"BRAVE_API_KEY": "BSA_desktop_secret_77"}},
    "Sentry (prod)": {"type": "sse", "url": "https://mcp.sentry.dev/sse",
                      "headers": {"Authorization": "Bearer sntrys_desktop_secret_88"}},
    "slack": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-slack"],
              "env": {"SLACK_BOT_TOKEN": "${SLACK_BOT_TOKEN}", "SLACK_TEAM_ID": "T0123"}},
    "db": {"command": "other-db"}
  }
}"#,
    );
    let out = import(d.path(), &file);
    assert!(out.stdout.contains("Claude Desktop"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("added sentry-prod (from \"Sentry (prod)\"): sse"),
        "{}",
        out.stdout
    );
    assert_imported(
        d.path(),
        &out,
        &["BSA_desktop_secret_77", "sntrys_desktop_secret_88", "T0123"],
        "import.slack.SLACK_BOT_TOKEN",
        "secrets.import.slack",
    );
}

#[test]
fn a_cursor_mcp_json_is_imported() {
    let (d, file) = setup(
        ".cursor/mcp.json",
        r#"{
  "mcpServers": {
    "Context7": {"url": "https://mcp.context7.com/mcp", "headers": {"CONTEXT7_API_KEY": "ctx7_cursor_secret_9"}},
    "stripe": {"command": "npx", "args": ["-y", "@stripe/mcp", "--tools=all"],
               "env": {"STRIPE_SECRET_KEY": "sk_test_cursor_secret_1"}},
    "postgres": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres"],
                 "env": {"DATABASE_URL": "${env:DATABASE_URL}"}},
    "db": {"command": "other-db"}
  }
}"#,
    );
    let out = import(d.path(), &file);
    assert!(out.stdout.contains("Cursor (mcpServers)"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("added context7 (from \"Context7\"): streamable-http"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("note: no `type`: taken as streamable-http"),
        "{}",
        out.stdout
    );
    assert_imported(
        d.path(),
        &out,
        &["ctx7_cursor_secret_9", "sk_test_cursor_secret_1"],
        "import.postgres.DATABASE_URL",
        "secrets.import.postgres",
    );
    let project = std::fs::read_to_string(d.path().join("project.yaml")).unwrap();
    assert!(
        project.contains("header_name: \"CONTEXT7_API_KEY\""),
        "{project}"
    );
}

#[test]
fn a_vscode_mcp_json_with_inputs_is_imported() {
    let (d, file) = setup(
        ".vscode/mcp.json",
        r#"{
  // Inputs are prompted on first server start, then stored securely by VS Code.
  "inputs": [
    {"type": "promptString", "id": "perplexity-key", "description": "Perplexity API Key", "password": true}
  ],
  "servers": {
    "Perplexity": {"type": "stdio", "command": "npx", "args": ["-y", "server-perplexity-ask"],
                   "env": {"PERPLEXITY_API_KEY": "${input:perplexity-key}"}},
    "github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/",
               "headers": {"Authorization": "Bearer ghp_vscode_secret_5"}},
    "memory": {"type": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"],
               "env": {"MEMORY_FILE_PATH": "/tmp/memory_secretish_6.json"}},
    "db": {"type": "stdio", "command": "other-db"},
  }
}"#,
    );
    let out = import(d.path(), &file);
    assert!(out.stdout.contains("VS Code (servers)"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("had ${input:perplexity-key} (Perplexity API Key)"),
        "{}",
        out.stdout
    );
    assert_imported(
        d.path(),
        &out,
        &["ghp_vscode_secret_5", "memory_secretish_6"],
        "import.perplexity.PERPLEXITY_API_KEY",
        "secrets.import.perplexity",
    );
}

#[test]
fn a_codex_config_toml_is_imported() {
    let (d, file) = setup(
        "config.toml",
        r#"model = "o3"
approval_policy = "on-request"

[mcp_servers.Docs_Search]
command = "uvx"
args = ["docs-mcp", "--stdio"]
env = { DOCS_API_KEY = "docs_codex_secret_2", LOG_LEVEL = "info" }
startup_timeout_sec = 20

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_OAUTH_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }

[mcp_servers.db]
command = "other-db"
"#,
    );
    let out = import(d.path(), &file);
    assert!(out.stdout.contains("Codex (mcp_servers)"), "{}", out.stdout);
    assert!(
        out.stdout
            .contains("added docs_search (from \"Docs_Search\")"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains("note: not carried over: startup_timeout_sec"),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout.contains("had ${FIGMA_OAUTH_TOKEN}"),
        "{}",
        out.stdout
    );
    assert_imported(
        d.path(),
        &out,
        &["docs_codex_secret_2"],
        "import.figma.authorization",
        "secrets.import.figma",
    );
}

#[test]
fn a_file_of_no_known_format_exits_2_and_writes_nothing() {
    let (d, file) = setup("settings.json", r#"{"editor.fontSize": 14}"#);
    let out = import(d.path(), &file);
    assert_eq!(out.code, Some(2), "{}", out.stderr);
    assert!(
        out.stderr
            .contains("expected a JSON object with `mcpServers`"),
        "{}",
        out.stderr
    );
    assert_eq!(
        std::fs::read_to_string(d.path().join("project.yaml")).unwrap(),
        EXISTING
    );
    assert!(!d.path().join("local.toml").exists());
    let missing = run(&["import", "/nonexistent/.mcp.json"], d.path());
    assert_eq!(missing.code, Some(2));
    assert!(
        missing
            .stderr
            .contains("cannot read /nonexistent/.mcp.json"),
        "{}",
        missing.stderr
    );
}

#[test]
fn a_readable_local_toml_gets_no_secret_and_a_dry_run_writes_nothing() {
    let (d, file) = setup(
        ".mcp.json",
        r#"{"mcpServers": {"api": {"command": "api", "env": {"API_TOKEN": "tok_readable_3"}}}}"#,
    );
    let local = d.path().join("local.toml");
    std::fs::write(&local, "[mcp.db]\ntimeout_ms = 5000\n").unwrap();
    std::fs::set_permissions(&local, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = import(d.path(), &file);
    assert_eq!(out.code, Some(2), "{}", out.stdout);
    assert!(out.stderr.contains("chmod 600"), "{}", out.stderr);
    assert_eq!(
        std::fs::read_to_string(d.path().join("project.yaml")).unwrap(),
        EXISTING
    );
    std::fs::set_permissions(&local, std::fs::Permissions::from_mode(0o600)).unwrap();
    let dry = run(&["import", file.to_str().unwrap(), "--dry-run"], d.path());
    assert_eq!(dry.code, Some(0), "{}", dry.stderr);
    assert!(
        dry.stdout
            .contains("API_TOKEN: { secret_ref: \"import.api.API_TOKEN\" }"),
        "{}",
        dry.stdout
    );
    assert!(!dry.stdout.contains("tok_readable_3"));
    assert_eq!(
        std::fs::read_to_string(d.path().join("project.yaml")).unwrap(),
        EXISTING
    );
    let out = import(d.path(), &file);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    let text = std::fs::read_to_string(&local).unwrap();
    assert!(text.starts_with("[mcp.db]\ntimeout_ms = 5000\n") && text.contains("tok_readable_3"));
    assert_eq!(
        std::fs::metadata(&local).unwrap().permissions().mode() & 0o777,
        0o600
    );
    assert_eq!(run(&["check"], d.path()).code, Some(0));
}

#[test]
fn a_project_is_created_when_there_is_none() {
    let d = tempfile::tempdir().unwrap();
    let file = d.path().join(".mcp.json");
    std::fs::write(
        &file,
        r#"{"mcpServers": {"demo": {"command": "kaged-mcp", "args": ["demo-server"]}}}"#,
    )
    .unwrap();
    let out = import(d.path(), &file);
    assert_eq!(out.code, Some(0), "{}", out.stderr);
    assert!(
        !d.path().join("local.toml").exists(),
        "no secret, no local.toml"
    );
    let project = std::fs::read_to_string(d.path().join("project.yaml")).unwrap();
    assert!(project.starts_with("mcp:\n"), "{project}");
    let check = run(&["check"], d.path());
    assert_eq!(check.code, Some(0), "{}", check.stderr);
    assert!(check.stdout.contains("demo"), "{}", check.stdout);
}
