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
tool_timeout_sec = 90.0

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
    // Issue 49: Codex's startup timeout is carried over, not dropped with a note.
    assert!(
        out.stdout.contains(
            "note: `startup_timeout_sec = 20` carried over as `probe_timeout_ms = 20000` under [mcp.docs_search] in local.toml"
        ),
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
    let local = std::fs::read_to_string(d.path().join("local.toml")).unwrap();
    assert!(
        local.contains("[mcp.docs_search]\ntimeout_ms = 90000\nprobe_timeout_ms = 20000\n"),
        "{local}"
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

/// Imports `file` into `dir`, after a dry run, and asserts that no credential is shown or
/// left in project.yaml: each of `hidden` appears nowhere in either run's stdout or stderr
/// nor in project.yaml; each of `moved` is in local.toml; each server of `disabled` is
/// imported disabled (said in the output, `disabled = true` in local.toml) and the others are
/// not; `check` passes.
fn assert_credentials_kept_out(
    dir: &Path,
    file: &Path,
    hidden: &[&str],
    moved: &[&str],
    disabled: &[&str],
) -> (String, String) {
    let dry = run(&["import", file.to_str().unwrap(), "--dry-run"], dir);
    assert_eq!(dry.code, Some(0), "{}\n{}", dry.stdout, dry.stderr);
    let out = import(dir, file);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let project = std::fs::read_to_string(dir.join("project.yaml")).unwrap();
    for s in hidden {
        for (what, text) in [
            ("stdout", &out.stdout),
            ("stderr", &out.stderr),
            ("dry-run stdout", &dry.stdout),
            ("dry-run stderr", &dry.stderr),
            ("project.yaml", &project),
        ] {
            assert!(!text.contains(s), "{s} in {what}:\n{text}");
        }
    }
    let local = std::fs::read_to_string(dir.join("local.toml")).unwrap();
    for s in moved {
        assert!(local.contains(s), "{s} not in local.toml:\n{local}");
    }
    for line in out.stdout.lines().filter(|l| l.starts_with("added ")) {
        let key = line["added ".len()..].split([' ', ':']).next().unwrap();
        assert_eq!(
            line.contains(" (disabled)"),
            disabled.contains(&key),
            "{line}"
        );
        assert_eq!(
            local.contains(&format!("[mcp.{key}]\ndisabled = true\n")),
            disabled.contains(&key),
            "{key}:\n{local}"
        );
    }
    let check = run(&["check"], dir);
    assert_eq!(
        check.code,
        Some(0),
        "{}\n{}\n{project}\n{local}",
        check.stdout,
        check.stderr
    );
    (out.stdout, project)
}

/// `Basic base64(user:password)`, as the user info of an HTTP URL is sent.
fn basic(user_password: &str) -> String {
    use base64::Engine as _;
    format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(user_password)
    )
}

#[test]
fn a_claude_desktop_config_keeps_credentials_in_arguments_and_urls_out() {
    let (d, file) = setup(
        "claude_desktop_config.json",
        r#"{"mcpServers": {
  "postgres": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres",
               "postgresql://app:cd_pg_pw_1@db.example:5432/app"]},
  "remote": {"command": "npx", "args": ["-y", "mcp-remote", "https://r.example/sse",
             "--header", "Authorization: Bearer cd_hdr_2"]},
  "github": {"command": "docker", "args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN=cd_ghp_3",
             "ghcr.io/github/github-mcp-server"]},
  "maps": {"url": "https://maps.example/mcp?api_token=cd_q_4&client_secret=cd_cs_5"},
  "callback": {"type": "sse", "url": "https://cb.example/sse#access_token=cd_frag_6"},
  "db": {"command": "other-db"}
}}"#,
    );
    let secrets = [
        "cd_pg_pw_1",
        "cd_hdr_2",
        "cd_ghp_3",
        "cd_q_4",
        "cd_cs_5",
        "cd_frag_6",
    ];
    let (stdout, project) = assert_credentials_kept_out(
        d.path(),
        &file,
        &secrets,
        &secrets,
        &["callback", "maps", "postgres", "remote"],
    );
    assert!(
        stdout.contains("args[2] has the password of a URL: project.yaml has `<import.postgres.arg2_password>` in its place"),
        "{stdout}"
    );
    assert!(
        project.contains("\"-e\", \"GITHUB_TOKEN\", \"ghcr.io/github/github-mcp-server\"]"),
        "{project}"
    );
    assert!(
        project.contains("GITHUB_TOKEN: { secret_ref: \"import.github.GITHUB_TOKEN\" }"),
        "{project}"
    );
}

#[test]
fn a_claude_code_mcp_json_keeps_credentials_in_arguments_and_urls_out() {
    let (d, file) = setup(
        ".mcp.json",
        r#"{"mcpServers": {
  "search": {"command": "search-mcp", "args": ["--api-key", "cc_flag_1", "--region", "eu"]},
  "runner": {"command": "uvx", "args": ["runner", "-e", "API_TOKEN=cc_env_2"]},
  "basic": {"type": "http", "url": "https://user:cc_basic_3@basic.example/mcp"},
  "keyed": {"type": "http", "url": "https://keyed.example/mcp?key=cc_key_4",
            "headers": {"Authorization": "Bearer cc_bearer_5"}},
  "db": {"command": "other-db"}
}}"#,
    );
    let (stdout, project) = assert_credentials_kept_out(
        d.path(),
        &file,
        &[
            "cc_flag_1",
            "cc_env_2",
            "cc_basic_3",
            &basic("user:cc_basic_3"),
            "cc_key_4",
            "cc_bearer_5",
        ],
        &[
            "cc_flag_1",
            "cc_env_2",
            &basic("user:cc_basic_3"),
            "cc_key_4",
            "cc_bearer_5",
        ],
        &["keyed", "runner", "search"],
    );
    assert!(
        project.contains(
            "url: \"https://basic.example/mcp\"\n    auth: { type: header, header_name: \"Authorization\", secret_ref: \"import.basic.authorization\" }"
        ),
        "{project}"
    );
    assert!(
        stdout.contains("note: the URL's user info became `auth:` header Authorization"),
        "{stdout}"
    );
}

#[test]
fn a_vscode_mcp_json_keeps_credentials_in_arguments_and_urls_out() {
    let (d, file) = setup(
        ".vscode/mcp.json",
        r#"{
  // hostile, but a real shape
  "servers": {
    "mysql": {"type": "stdio", "command": "npx", "args": ["-y", "mysql-mcp", "mysql://root:vs_pw_1@localhost/db"]},
    "api": {"type": "http", "url": "https://api.example/mcp?sig=vs_sig_2", "headers": {"X-Api-Key": "vs_key_3"}},
    "slack": {"type": "stdio", "command": "/usr/bin/podman", "args": ["run", "--env", "SLACK_BOT_TOKEN=vs_slack_4", "slack-mcp"]},
    "fetch": {"type": "stdio", "command": "fetch-mcp", "args": ["-H", "X-Auth-Token: vs_tok_5", "--password=vs_pass_6"]},
    "db": {"type": "stdio", "command": "other-db"},
  }
}"#,
    );
    let secrets = [
        "vs_pw_1",
        "vs_sig_2",
        "vs_key_3",
        "vs_slack_4",
        "vs_tok_5",
        "vs_pass_6",
    ];
    let (_, project) = assert_credentials_kept_out(
        d.path(),
        &file,
        &secrets,
        &secrets,
        &["api", "fetch", "mysql"],
    );
    assert!(
        project.contains("\"--env\", \"SLACK_BOT_TOKEN\", \"slack-mcp\"]"),
        "{project}"
    );
}

#[test]
fn a_codex_config_toml_keeps_credentials_in_arguments_and_urls_out() {
    let (d, file) = setup(
        "config.toml",
        r#"model = "o3"

[mcp_servers.pg]
command = "npx"
args = ["-y", "@modelcontextprotocol/server-postgres", "postgresql://app:cx_pw_1@db/app"]

[mcp_servers.github]
command = "docker"
args = ["run", "-i", "--rm", "-e", "GITHUB_PERSONAL_ACCESS_TOKEN=cx_ghp_2", "ghcr.io/github/github-mcp-server"]

[mcp_servers.remote]
command = "npx"
args = ["mcp-remote", "https://r.example/mcp", "--header", "Authorization:Bearer cx_hdr_3", "--token=cx_flag_4"]

[mcp_servers.maps]
url = "https://maps.example/mcp?access_token=cx_q_5#id_token=cx_frag_6"

[mcp_servers.db]
command = "other-db"
"#,
    );
    let secrets = [
        "cx_pw_1",
        "cx_ghp_2",
        "cx_hdr_3",
        "cx_flag_4",
        "cx_q_5",
        "cx_frag_6",
    ];
    assert_credentials_kept_out(
        d.path(),
        &file,
        &secrets,
        &secrets,
        &["maps", "pg", "remote"],
    );
}

#[test]
fn server_strings_are_printed_escaped() {
    let (d, file) = setup(
        ".mcp.json",
        "{\"mcpServers\": {\"evil\\u001b[2K\\u202e\": {\"command\": \"x\\u200b\", \"args\": [\"a\\rb\"]},\n\
         \"bad\\u202e\": {\"type\": \"w\\u001bs\", \"url\": \"https://h\"}}}",
    );
    let dry = run(&["import", file.to_str().unwrap(), "--dry-run"], d.path());
    assert_eq!(dry.code, Some(0), "{}\n{}", dry.stdout, dry.stderr);
    let out = import(d.path(), &file);
    assert_eq!(out.code, Some(0), "{}\n{}", out.stdout, out.stderr);
    let project = std::fs::read_to_string(d.path().join("project.yaml")).unwrap();
    for text in [&out.stdout, &out.stderr, &dry.stdout, &dry.stderr, &project] {
        assert!(
            !text.contains(['\u{1b}', '\r', '\u{202e}', '\u{200b}']),
            "{text:?}"
        );
    }
    assert!(
        out.stdout.contains(r#"(from "evil\u{1b}[2K\u{202e}")"#),
        "{}",
        out.stdout
    );
    assert!(
        out.stdout
            .contains(r#"skipped "bad\u{202e}": unknown type `w\u{1b}s`"#),
        "{}",
        out.stdout
    );
}

#[test]
fn a_second_credential_header_disables_the_server() {
    let (d, file) = setup(
        ".cursor/mcp.json",
        r#"{"mcpServers": {
  "api": {"url": "https://api.example/mcp",
          "headers": {"Authorization": "Bearer cu_bearer_1", "X-Api-Key": "cu_key_2"}},
  "one": {"url": "https://one.example/mcp", "headers": {"X-Api-Key": "cu_key_3"}}
}}"#,
    );
    let secrets = ["cu_bearer_1", "cu_key_2", "cu_key_3"];
    let (stdout, _) = assert_credentials_kept_out(d.path(), &file, &secrets, &secrets, &["api"]);
    assert!(
        stdout.contains("header `X-Api-Key` is a second credential header"),
        "{stdout}"
    );
}

/// Each refusal of `import` is one exact `error:` line on stderr, exit 2, nothing on stdout
/// and nothing written: an input that is not UTF-8 or not valid JSON (naming the formats it
/// knows), a project.yaml that is not YAML (where, and to fix it first) or not UTF-8.
#[test]
fn imports_refusals_are_exact_operator_lines_and_write_nothing() {
    let d = tempfile::tempdir().unwrap();
    let at = |name: &str| d.path().join(name);
    std::fs::write(at("bin.json"), b"\xff\xfe{}").unwrap();
    std::fs::write(at("trunc.json"), r#"{"mcpServers": "#).unwrap();
    std::fs::write(
        at("good.json"),
        r#"{"mcpServers":{"x":{"command":"echo"}}}"#,
    )
    .unwrap();
    for dir in ["empty", "badyaml", "binyaml"] {
        std::fs::create_dir(at(dir)).unwrap();
    }
    std::fs::write(at("badyaml/project.yaml"), "mcp: [unclosed\n").unwrap();
    std::fs::write(at("binyaml/project.yaml"), b"mcp:\n\xff\n").unwrap();
    let shown = |name: &str| at(name).display().to_string();
    let known = "expected a JSON object with `mcpServers` (Claude Code's .mcp.json, Claude \
                 Desktop's claude_desktop_config.json, Cursor's mcp.json) or `servers` (VS \
                 Code's mcp.json), or a TOML file with [mcp_servers.NAME] tables (Codex's \
                 config.toml)";
    let cases: [(&str, Vec<String>, String); 4] = [
        (
            "empty",
            vec![shown("bin.json")],
            format!("cannot read {}: not UTF-8 text", shown("bin.json")),
        ),
        (
            "empty",
            vec![shown("trunc.json")],
            format!(
                "{}: not valid JSON: EOF while parsing a value at line 1 column 15; {known}",
                shown("trunc.json")
            ),
        ),
        (
            "badyaml",
            vec![shown("good.json")],
            "project.yaml:2:1: invalid YAML: while parsing a flow sequence, expected ',' or ']'; \
             fix it first"
                .into(),
        ),
        (
            "binyaml",
            vec![shown("good.json")],
            format!("{}: not UTF-8 text", shown("binyaml/project.yaml")),
        ),
    ];
    for (dir, args, line) in &cases {
        let before: Vec<_> = std::fs::read_dir(at(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        let mut all = vec!["import"];
        all.extend(args.iter().map(String::as_str));
        let out = run(&all, &at(dir));
        assert_eq!(
            (out.code, out.stdout.as_str(), out.stderr.as_str()),
            (Some(2), "", format!("error: {line}\n").as_str()),
            "{all:?}"
        );
        let after: Vec<_> = std::fs::read_dir(at(dir))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        assert_eq!(before, after, "{all:?}: nothing written");
    }
    assert_eq!(
        std::fs::read(at("badyaml/project.yaml")).unwrap(),
        b"mcp: [unclosed\n"
    );
}
