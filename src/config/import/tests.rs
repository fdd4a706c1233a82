use super::write::{declared_keys, local_toml, project_yaml};
use super::*;
use crate::config::{EnvValue, Sources, TransportConfig};

const CLAUDE: &str = r#"{
  "mcpServers": {
    "GitHub Server": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret123", "NODE_ENV": "production"}
    },
    "linear": {
      "type": "http",
      "url": "https://mcp.linear.app/mcp",
      "headers": {"Authorization": "Bearer lin_secret456", "X-Region": "eu"}
    },
    "notion": {"command": "notion-mcp", "env": {"NOTION_TOKEN": "${NOTION_TOKEN}"}},
    "db": {"command": "db-mcp"}
  }
}"#;

/// Loads `project` with `local`, as `check` does (env secrets resolved, auth secrets too).
fn load(project: &str, local: Option<&str>) -> Result<crate::config::Config, String> {
    let mut sources = Sources::new(project);
    if let Some(l) = local {
        sources = sources.local(l);
    }
    let config = sources.load().map_err(|e| e.to_string())?;
    config.resolve_secrets().map_err(|e| e.to_string())?;
    Ok(config)
}

#[test]
fn a_claude_code_file_becomes_servers_and_secrets() {
    let plan = plan(CLAUDE, ".mcp.json", &["db"]).unwrap();
    assert_eq!(plan.format, Format::ClaudeCode);
    let keys: Vec<&str> = plan.servers.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["github-server", "linear", "notion"]);
    assert_eq!(plan.skipped.len(), 1);
    assert!(plan.skipped[0].reason.contains("already declares `db`"));
    let existing = "# my project\nname: demo\nmcp:\n  db:\n    transport: stdio\n    command: [\"db\"]\n\nprimary: {}\n";
    let project = project_yaml(Some(existing), &plan).unwrap();
    assert!(project.starts_with(existing.split("\nprimary").next().unwrap()));
    assert!(project.ends_with("\nprimary: {}\n"), "{project}");
    for secret in ["ghp_secret123", "lin_secret456"] {
        assert!(!project.contains(secret), "{project}");
    }
    let local = local_toml(None, &plan).unwrap().unwrap();
    assert!(local.contains("GITHUB_PERSONAL_ACCESS_TOKEN = \"ghp_secret123\""));
    assert!(local.contains("authorization = \"lin_secret456\""));
    assert!(local.contains("# NOTION_TOKEN = \"\"  # needs a value: the file had ${NOTION_TOKEN}"));
    // Only the reference is missing, and loading names it.
    let err = load(&project, Some(&local)).unwrap_err();
    assert!(err.contains("import.notion.NOTION_TOKEN"), "{err}");
    let filled = local.replace("# NOTION_TOKEN = \"\"", "NOTION_TOKEN = \"n\"\n#");
    let config = load(&project, Some(&filled)).unwrap();
    assert_eq!(config.project.servers.len(), 4);
    let gh = config.project.server("github-server").unwrap();
    let TransportConfig::Stdio(stdio) = &gh.transport else {
        panic!("stdio")
    };
    assert_eq!(stdio.env["NODE_ENV"], EnvValue::Plain("production".into()));
    assert_eq!(
        stdio.env["GITHUB_PERSONAL_ACCESS_TOKEN"].expose(),
        Some("ghp_secret123")
    );
    let linear = config.project.server("linear").unwrap();
    assert_eq!(linear.transport.name(), "streamable-http");
    assert_eq!(
        linear.auth.as_ref().unwrap().kind,
        crate::config::AuthKind::Bearer
    );
    assert_eq!(linear.transport.http().unwrap().headers.len(), 1);
}

#[test]
fn a_vscode_file_with_inputs_and_comments_is_read() {
    let vscode = r#"{
      // VS Code keeps comments
      "inputs": [{"type": "promptString", "id": "api-key", "description": "Perplexity API Key", "password": true}],
      "servers": {
        "perplexity": {"type": "stdio", "command": "npx", "args": ["-y", "server-perplexity-ask"],
                       "env": {"PERPLEXITY_API_KEY": "${input:api-key}"}},
        "fetch": {"type": "sse", "url": "http://localhost:3000/sse", "headers": {"X-API-Key": "k-123"}},
      },
    }"#;
    let plan = plan(vscode, ".vscode/mcp.json", &[]).unwrap();
    assert_eq!(plan.format, Format::VsCode);
    let perplexity = &plan.servers[1];
    assert_eq!(perplexity.key, "perplexity");
    assert_eq!(
        perplexity.secrets[0].references,
        ["${input:api-key} (Perplexity API Key)"]
    );
    let project = project_yaml(None, &plan).unwrap();
    let local = local_toml(None, &plan).unwrap().unwrap();
    assert!(!project.contains("k-123"));
    let err = load(&project, Some(&local)).unwrap_err();
    assert!(
        err.contains("import.perplexity.PERPLEXITY_API_KEY"),
        "{err}"
    );
    let fetch = plan.servers.iter().find(|s| s.key == "fetch").unwrap();
    let PlannedTransport::Http { sse, auth, .. } = &fetch.transport else {
        panic!("http")
    };
    assert!(sse);
    assert_eq!(
        auth.as_ref().unwrap().header_name.as_deref(),
        Some("X-API-Key")
    );
}

#[test]
fn a_codex_file_maps_its_bearer_variable_and_headers() {
    let codex = r#"
model = "o3"
[mcp_servers.docs]
command = "docs-mcp"
args = ["--stdio"]
env = { DOCS_API_KEY = "d-1", LOG_LEVEL = "debug" }
startup_timeout_sec = 20

[mcp_servers.figma]
url = "https://mcp.figma.com/mcp"
bearer_token_env_var = "FIGMA_TOKEN"
http_headers = { "X-Figma-Region" = "us-east-1" }
"#;
    let plan = plan(codex, "config.toml", &[]).unwrap();
    assert_eq!(plan.format, Format::Codex);
    let docs = &plan.servers[0];
    assert!(docs.notes.iter().any(|n| n.contains("startup_timeout_sec")));
    let figma = &plan.servers[1];
    assert_eq!(figma.secrets[0].references, ["${FIGMA_TOKEN}"]);
    let project = project_yaml(None, &plan).unwrap();
    assert!(project.contains("auth: { type: bearer, secret_ref: \"import.figma.authorization\" }"));
    assert!(project.contains("X-Figma-Region: \"us-east-1\""));
    let local = local_toml(None, &plan).unwrap().unwrap();
    let err = load(&project, Some(&local)).unwrap_err();
    assert!(err.contains("import.figma.authorization"), "{err}");
}

#[test]
fn a_second_credential_header_is_left_out_but_kept_in_local_toml() {
    let text = r#"{"mcpServers": {"api": {"type": "http", "url": "https://a.example/mcp",
        "headers": {"Authorization": "Basic dTpw", "X-Api-Key": "k", "Accept": "x"}}}}"#;
    let plan = plan(text, "mcp.json", &[]).unwrap();
    let api = &plan.servers[0];
    assert_eq!(api.secrets.len(), 2);
    assert!(api.secrets[0].used && !api.secrets[1].used);
    assert!(api
        .notes
        .iter()
        .any(|n| n.contains("X-Api-Key") && n.contains("left out")));
    let project = project_yaml(None, &plan).unwrap();
    assert!(project.contains("type: header, header_name: \"Authorization\""));
    let local = local_toml(None, &plan).unwrap().unwrap();
    load(&project, Some(&local)).unwrap();
    // Enabled, the server would be called without its `X-Api-Key`: it is imported disabled.
    assert!(api.is_disabled());
    assert!(
        api.disabled[0].contains("`X-Api-Key`"),
        "{:?}",
        api.disabled
    );
    assert!(local.contains("[mcp.api]\ndisabled = true\n"), "{local}");
    assert!(
        load(&project, Some(&local))
            .unwrap()
            .local
            .overrides("api")
            .disabled
    );
}

#[test]
fn unreadable_entries_are_skipped_without_showing_a_credential() {
    let text = r#"{"mcpServers": {
        "c": {"type": "ws", "url": "wss://u:c_pw@c?token=c_tok#access_token=c_frag"},
        "d": {"command": ""},
        "e": 3,
        "f": {"url": "https://${HOST}/mcp?api_key=f_key#access_token=f_frag"},
        "g": {"url": "not a url#access_token=g_frag"}
    }}"#;
    let plan = plan(text, "mcp.json", &[]).unwrap();
    assert!(plan.servers.is_empty());
    assert_eq!(plan.skipped.len(), 5);
    for s in &plan.skipped {
        for secret in ["c_pw", "c_tok", "c_frag", "f_key", "f_frag", "g_frag"] {
            assert!(!s.reason.contains(secret), "{}", s.reason);
        }
    }
}

/// Asserts that none of `secrets` is in `project` and each is in `local`.
fn assert_moved(project: &str, local: &str, secrets: &[&str]) {
    for secret in secrets {
        assert!(
            !project.contains(secret),
            "{secret} in project.yaml:\n{project}"
        );
        assert!(
            local.contains(secret),
            "{secret} not in local.toml:\n{local}"
        );
    }
}

#[test]
fn credentials_in_an_http_url_are_moved_and_what_cannot_be_sent_disables_the_server() {
    let text = r#"{"mcpServers": {
        "basic": {"url": "https://u%40x:p%40ss_1@a.example/mcp"},
        "query": {"type": "http", "url": "https://b.example/mcp?page=2&api_token=q_tok_2&client_secret=cs_3"},
        "fragment": {"type": "sse", "url": "https://c.example/sse#access_token=frag_tok_4&state=s"},
        "both": {"url": "https://v:pw_5@d.example/mcp", "headers": {"Authorization": "Bearer hdr_6"}}
    }}"#;
    let plan = plan(text, "mcp.json", &[]).unwrap();
    let keys: Vec<&str> = plan.servers.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["basic", "both", "fragment", "query"]);
    assert!(plan.skipped.is_empty(), "{:?}", plan.skipped);
    let enabled: Vec<&str> = plan
        .servers
        .iter()
        .filter(|s| !s.is_disabled())
        .map(|s| s.key.as_str())
        .collect();
    assert_eq!(enabled, ["basic"]);
    for s in &plan.servers {
        for line in s.notes.iter().chain(&s.disabled) {
            for secret in ["p%40ss_1", "q_tok_2", "cs_3", "frag_tok_4", "pw_5", "hdr_6"] {
                assert!(!line.contains(secret), "{line}");
            }
        }
    }
    let project = project_yaml(None, &plan).unwrap();
    let local = local_toml(None, &plan).unwrap().unwrap();
    // The user info is HTTP Basic, decoded: base64("u@x:p@ss_1").
    let basic = format!(
        "Basic {}",
        base64::Engine::encode(&base64::engine::general_purpose::STANDARD, "u@x:p@ss_1")
    );
    assert_moved(
        &project,
        &local,
        &[&basic, "q_tok_2", "cs_3", "frag_tok_4", "hdr_6"],
    );
    for secret in ["p%40ss_1", "pw_5", "u%40x:"] {
        assert!(!project.contains(secret), "{secret}:\n{project}");
    }
    assert!(
        project.contains("url: \"https://a.example/mcp\""),
        "{project}"
    );
    assert!(
        project.contains(
            "url: \"https://b.example/mcp?page=2&api_token=<import.query.url_api_token>&client_secret=<import.query.url_client_secret>\""
        ),
        "{project}"
    );
    assert!(
        project.contains("#access_token=<import.fragment.url_access_token>&state=s\""),
        "{project}"
    );
    for key in ["both", "fragment", "query"] {
        assert!(
            local.contains(&format!("[mcp.{key}]\ndisabled = true\n")),
            "{local}"
        );
    }
    let config = load(&project, Some(&local)).unwrap();
    let basic_server = config.project.server("basic").unwrap();
    let auth = basic_server.auth.as_ref().unwrap();
    assert_eq!(auth.kind, crate::config::AuthKind::Header);
    assert_eq!(auth.header_name.as_str(), "authorization");
    let secrets = config.resolve_secrets().unwrap();
    assert_eq!(secrets["basic"].expose(), basic);
    assert!(config.local.overrides("query").disabled);
    assert!(!config.local.overrides("basic").disabled);
}

#[test]
fn credentials_in_arguments_are_moved_and_the_server_imported_disabled() {
    let text = r#"{"mcpServers": {
        "postgres": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-postgres",
                     "postgresql://app:pg_pw_1@db.example:5432/app?sslmode=require"]},
        "remote": {"command": "npx", "args": ["mcp-remote", "https://r.example/sse",
                   "--header", "Authorization: Bearer hdr_tok_2", "-H", "X-Region: eu"]},
        "github": {"command": "docker", "args": ["run", "-i", "--rm", "-e",
                   "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_dock_3", "-e", "LOG_LEVEL=debug",
                   "ghcr.io/github/github-mcp-server"], "env": {"NODE_ENV": "production"}},
        "search": {"command": "search-mcp", "args": ["--api-key", "sk_flag_4",
                   "--endpoint=https://s.example/v1?access_token=q_tok_5", "--api-key-file", "/etc/k"]},
        "runner": {"command": "uvx", "args": ["runner", "-e", "SERVICE_TOKEN=env_tok_6"]},
        "plain": {"command": "x", "args": ["--port", "8080", "--token", "${TOKEN}"]}
    }}"#;
    let plan = plan(text, "claude_desktop_config.json", &[]).unwrap();
    assert_eq!(plan.format, Format::ClaudeDesktop);
    let disabled: Vec<&str> = plan
        .servers
        .iter()
        .filter(|s| s.is_disabled())
        .map(|s| s.key.as_str())
        .collect();
    assert_eq!(disabled, ["postgres", "remote", "runner", "search"]);
    let project = project_yaml(None, &plan).unwrap();
    let local = local_toml(None, &plan).unwrap().unwrap();
    let secrets = [
        "pg_pw_1",
        "hdr_tok_2",
        "ghp_dock_3",
        "sk_flag_4",
        "q_tok_5",
        "env_tok_6",
    ];
    assert_moved(&project, &local, &secrets);
    for s in &plan.servers {
        let PlannedTransport::Stdio { command, .. } = &s.transport else {
            panic!("stdio")
        };
        for line in s.notes.iter().chain(&s.disabled).chain(command) {
            for secret in secrets {
                assert!(!line.contains(secret), "{line}");
            }
        }
    }
    for expected in [
        "\"postgresql://app:<import.postgres.arg2_password>@db.example:5432/app?sslmode=require\"",
        "\"--header\", \"Authorization: <import.remote.arg3_authorization>\", \"-H\", \"X-Region: eu\"",
        "\"--api-key\", \"<import.search.arg1_api-key>\"",
        "\"--endpoint=https://s.example/v1?access_token=<import.search.arg2_access_token>\"",
        "\"--api-key-file\", \"/etc/k\"",
        "\"-e\", \"SERVICE_TOKEN=<import.runner.arg2_SERVICE_TOKEN>\"",
        "\"-e\", \"GITHUB_PERSONAL_ACCESS_TOKEN\", \"-e\", \"LOG_LEVEL=debug\"",
        "GITHUB_PERSONAL_ACCESS_TOKEN: { secret_ref: \"import.github.GITHUB_PERSONAL_ACCESS_TOKEN\" }",
        "\"--token\", \"${TOKEN}\"",
    ] {
        assert!(project.contains(expected), "{expected}:\n{project}");
    }
    let postgres = plan.servers.iter().find(|s| s.key == "postgres").unwrap();
    assert!(
        postgres.disabled[0].contains("args[2] has the password of a URL"),
        "{:?}",
        postgres.disabled
    );
    let config = load(&project, Some(&local)).unwrap();
    for key in disabled {
        assert!(config.local.overrides(key).disabled, "{key}");
    }
    let github = config.project.server("github").unwrap();
    assert!(!config.local.overrides("github").disabled);
    let TransportConfig::Stdio(stdio) = &github.transport else {
        panic!("stdio")
    };
    assert_eq!(
        stdio.env["GITHUB_PERSONAL_ACCESS_TOKEN"].expose(),
        Some("ghp_dock_3")
    );
    assert_eq!(stdio.env["NODE_ENV"], EnvValue::Plain("production".into()));
    assert!(!config.local.overrides("plain").disabled);
}

#[test]
fn a_plain_env_name_holding_a_url_with_a_password_becomes_a_secret() {
    let text = r#"{"mcpServers": {"db": {"command": "db-mcp",
        "env": {"HOST": "postgres://u:env_pw_1@h/db", "PORT": "5432"}}}}"#;
    let plan = plan(text, "mcp.json", &[]).unwrap();
    let project = project_yaml(None, &plan).unwrap();
    let local = local_toml(None, &plan).unwrap().unwrap();
    assert_moved(&project, &local, &["env_pw_1"]);
    assert!(project.contains("PORT: \"5432\""), "{project}");
    assert!(!plan.servers[0].is_disabled());
}

#[test]
fn a_disabled_server_with_an_mcp_table_in_local_toml_is_refused() {
    let plan = plan(
        r#"{"mcpServers": {"pg": {"command": "pg", "args": ["postgres://u:pw@h/d"]}}}"#,
        "a.json",
        &[],
    )
    .unwrap();
    let e = local_toml(Some("[mcp.pg]\ntimeout_ms = 5\n"), &plan).unwrap_err();
    assert!(e.contains("[mcp.pg]") && !e.contains("pw@"), "{e}");
}

#[test]
fn a_server_with_an_empty_argument_is_skipped_and_the_rest_load() {
    // Found by the `import_formats` fuzz target: planned, `"args": ["", "x"]` made a
    // project.yaml whose `command[1]` is empty, which the project refuses whole.
    let text = r#"{"mcpServers": {
        "pg": {"command": "npx", "args": ["", "x"]},
        "ok": {"command": "npx", "args": ["-y", "server"]}
    }}"#;
    let plan = plan(text, "mcp.json", &[]).unwrap();
    let keys: Vec<&str> = plan.servers.iter().map(|s| s.key.as_str()).collect();
    assert_eq!(keys, ["ok"]);
    assert_eq!(plan.skipped.len(), 1);
    assert!(
        plan.skipped[0].reason.contains("`args[0]` is empty"),
        "{}",
        plan.skipped[0].reason
    );
    let project = project_yaml(None, &plan).unwrap();
    load(&project, None).unwrap();
}

#[test]
fn names_that_meet_get_numbered_and_the_project_stays_within_its_limit() {
    let mut servers = String::from("{\"mcpServers\": {");
    for i in 0..3 {
        servers.push_str(&format!(
            "\"S {i}\": {{\"command\": \"x\"}}, \"s-{i}\": {{\"command\": \"y\"}},"
        ));
    }
    for i in 0..15 {
        servers.push_str(&format!("\"zz{i}\": {{\"command\": \"z\"}},"));
    }
    servers.push_str("\"zzz\": {\"command\": \"z\"}}}");
    let plan = plan(&servers, "mcp.json", &["keep"]).unwrap();
    assert_eq!(plan.servers.len(), MAX_SERVERS - 1);
    assert!(plan.servers.iter().any(|s| s.key == "s-0-2"));
    assert!(plan.skipped.iter().all(|s| s.reason.contains("at most 16")));
    let project = project_yaml(
        Some("mcp:\n    keep: {transport: stdio, command: [k]}\n"),
        &plan,
    )
    .unwrap();
    assert_eq!(
        load(&project, None).unwrap().project.servers.len(),
        MAX_SERVERS
    );
}

#[test]
fn an_empty_or_inline_mcp_block_is_handled() {
    let plan = plan(
        r#"{"mcpServers": {"one": {"command": "x"}}}"#,
        "a.json",
        &[],
    )
    .unwrap();
    for existing in [
        "mcp:\nother: 1\n",
        "mcp: {}  # none yet\n",
        "mcp: ~",
        "",
        "# only a comment",
    ] {
        let out = project_yaml(Some(existing), &plan).unwrap();
        assert_eq!(
            declared_keys(&out).unwrap(),
            ["one"],
            "{existing:?} → {out}"
        );
    }
    let e = project_yaml(Some("mcp: {db: {transport: stdio, command: [d]}}\n"), &plan).unwrap_err();
    assert!(e.contains("inline"), "{e}");
    assert!(project_yaml(Some("- a\n"), &plan).is_err());
    assert!(project_yaml(Some("mcp: [\n"), &plan).is_err());
}

#[test]
fn local_toml_is_appended_to_and_a_clash_is_refused() {
    let plan = plan(CLAUDE, ".mcp.json", &[]).unwrap();
    let existing = "[mcp.db]\ndisabled = true\n\n[secrets.api_keys]\nother = \"o\"";
    let out = local_toml(Some(existing), &plan).unwrap().unwrap();
    assert!(out.starts_with(existing));
    let clash = "[secrets.import.linear]\nx = \"1\"\n";
    assert!(local_toml(Some(clash), &plan)
        .unwrap_err()
        .contains("[secrets.import.linear]"));
    assert!(local_toml(Some("[broken"), &plan).is_err());
    let none = super::plan(
        r#"{"mcpServers": {"one": {"command": "x"}}}"#,
        "a.json",
        &[],
    )
    .unwrap();
    assert!(local_toml(Some(existing), &none).unwrap().is_none());
}

#[test]
fn awkward_values_are_quoted_so_they_read_back() {
    let text = r##"{"mcpServers": {"odd": {"command": "a \"b\" \\ c\u0007\u2028", "args": ["null", "#x", "- y", "{z}"],
        "env": {"true": "1", "NODE_ENV": "line\nbreak", "PATH": "p:q"}}}}"##;
    let plan = plan(text, "a.json", &[]).unwrap();
    let project = project_yaml(None, &plan).unwrap();
    let local = local_toml(None, &plan).unwrap().unwrap();
    let config = load(&project, Some(&local)).unwrap();
    let TransportConfig::Stdio(s) = &config.project.servers[0].transport else {
        panic!("stdio")
    };
    assert_eq!(
        s.command,
        ["a \"b\" \\ c\u{7}\u{2028}", "null", "#x", "- y", "{z}"]
    );
    assert_eq!(s.env["NODE_ENV"].expose(), Some("line\nbreak"));
    assert_eq!(s.env["PATH"], EnvValue::Plain("p:q".into()));
}

#[test]
fn names_too_long_for_a_yaml_key_line_are_written_as_explicit_keys() {
    // YAML reads `key: value` only when the key ends within 1024 characters; a control
    // character is written as six (`\u007F`), so 200 of them are well past it.
    let env_name = format!("PA{}TH", "\u{7f}".repeat(200));
    let header = format!("X-{}", "a".repeat(1100));
    let text = serde_json::json!({"mcpServers": {
        "pg": {"command": "pg-mcp", "env": {(env_name.clone()): "/bin", "PATH": "/usr/bin"}},
        "web": {"url": "https://example.com/mcp", "headers": {(header.clone()): "v"}}
    }})
    .to_string();
    let plan = plan(&text, ".mcp.json", &[]).unwrap();
    let project = project_yaml(None, &plan).unwrap();
    assert!(project.contains("\n      ? \"PA\\u007F"), "{project}");
    assert!(
        project.contains(&format!("\n      ? {header}\n      : \"v\"")),
        "{project}"
    );
    let local = local_toml(None, &plan).unwrap();
    let config = load(&project, local.as_deref()).unwrap();
    let servers = &config.project.servers;
    let TransportConfig::Stdio(s) = &servers[0].transport else {
        panic!("stdio")
    };
    assert!(s.env.contains_key(&env_name));
    assert_eq!(s.env["PATH"], EnvValue::Plain("/usr/bin".into()));
    let h = servers[1].transport.http().expect("http");
    assert!(h
        .headers
        .iter()
        .any(|(n, v)| n.as_str() == header.to_ascii_lowercase() && v == "v"));
}

#[test]
fn codex_timeouts_are_carried_over_to_local_toml() {
    let codex = r#"
[mcp_servers.slow]
command = "npx"
args = ["-y", "slow-mcp"]
tool_timeout_sec = 45.5
startup_timeout_sec = 60

[mcp_servers.odd]
command = "odd"
tool_timeout_sec = -1
startup_timeout_sec = "soon"
"#;
    let plan = plan(codex, "config.toml", &[]).unwrap();
    let odd = &plan.servers[0];
    assert_eq!((odd.timeout_ms, odd.probe_timeout_ms), (None, None));
    assert_eq!(
        odd.notes
            .iter()
            .filter(|n| n.contains("not carried over: not a number"))
            .count(),
        2,
        "{:?}",
        odd.notes
    );
    let slow = &plan.servers[1];
    assert_eq!(
        (slow.timeout_ms, slow.probe_timeout_ms),
        (Some(45_500), Some(60_000))
    );
    assert!(!slow.notes.iter().any(|n| n.contains("not carried over")));
    let project = project_yaml(None, &plan).unwrap();
    let local = local_toml(None, &plan).unwrap().unwrap();
    assert!(
        local.contains("[mcp.slow]\ntimeout_ms = 45500\nprobe_timeout_ms = 60000\n"),
        "{local}"
    );
    let config = load(&project, Some(&local)).unwrap();
    let o = config.local.overrides("slow");
    assert_eq!(o.timeout, Some(std::time::Duration::from_millis(45_500)));
    assert_eq!(o.probe_timeout, Some(std::time::Duration::from_secs(60)));
    assert!(!o.disabled);
    assert_eq!(config.timeout_for("slow").as_millis(), 45_500);
}

#[test]
fn invisible_and_bidi_code_points_are_written_escaped_and_read_back() {
    let text = r#"{"mcpServers": {"odd": {"command": "x\u202etxt.exe", "args": ["a\u200bb", "\udb40\udc68i"]}}}"#;
    let plan = plan(text, "a.json", &[]).unwrap();
    let project = project_yaml(None, &plan).unwrap();
    assert!(
        !project.lines().any(crate::escape::has_hidden),
        "{project:?}"
    );
    assert!(
        project.contains(r#"["x\u202Etxt.exe", "a\u200Bb", "\U000E0068i"]"#),
        "{project}"
    );
    let config = load(&project, None).unwrap();
    let TransportConfig::Stdio(s) = &config.project.servers[0].transport else {
        panic!("stdio")
    };
    assert_eq!(s.command, ["x\u{202e}txt.exe", "a\u{200b}b", "\u{e0068}i"]);
}
