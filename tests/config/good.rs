//! Good configurations: every field of the `mcp:` block, the overlay rules, local.toml and
//! config.toml; and the file-level bounds (size, alias bombs, UTF-8) on real files.

use std::time::Duration;

use kaged_mcp::config::{
    load, resolve_cwd, AuthKind, ConfigPaths, EnvValue, GrantPattern, Sources, TransportConfig,
};

const FULL: &str = r#"
name: my-project          # belongs to the rest of kaged: left alone
cage: { net: { allow: [api.example.com] } }
mcp:
  github:
    transport: sse
    url: https://api.example.com/mcp
    auth:
      type: bearer
      secret_ref: api_keys.example
    headers:
      X-Feature-Flag: mcp-beta
    tools:
      allow: [repo.*, issue.*]
      deny: [repo.delete]
  database:
    transport: stdio
    command: ["bun", "run", "tools/mcp-db-server.ts"]
    cwd: ./tools
    env:
      DB_PATH: ./data/app.db
      PORT: 5432
    tools:
      enabled: true
  keyed:
    transport: sse
    url: http://127.0.0.1:8080/sse
    auth:
      type: header
      header_name: X-API-Key
      secret_ref: deep.nested.path.key
  off-tools:
    transport: stdio
    command: [x]
    tools: { enabled: false }
primary:
  model: whatever         # not ours
  tools:
    "mcp.github.issue.*": { enabled: true }
    "mcp.database": { enabled: true }
    "mcp.github.repo.delete": { enabled: false }
  subagents:
    researcher:
      tools:
        "mcp.github.issue.list": { enabled: true }
    writer:
      prompt: not ours
"#;

const LOCAL: &str = r#"
[mcp.github]
disabled = false
timeout_ms = 15000
trust_annotations = true
era = "legacy"

[mcp.keyed]
probe_timeout_ms = 25000

[mcp.database]
disabled = true

[mcp.ghost]
disabled = true

[secrets.api_keys]
example = "sk-live-abc123"

[secrets.deep.nested.path]
key = "k-123"

[providers]   # the rest of kaged's
anything = 1
"#;

#[test]
fn every_field_of_the_mcp_block_is_read() {
    let c = Sources::new(FULL).local(LOCAL).load().unwrap();
    let servers = &c.project.servers;
    assert_eq!(
        servers.iter().map(|s| s.key.as_str()).collect::<Vec<_>>(),
        ["github", "database", "keyed", "off-tools"]
    );

    let gh = c.project.server("github").unwrap();
    let TransportConfig::Sse(sse) = &gh.transport else {
        panic!("github is not sse")
    };
    assert_eq!(sse.url.as_str(), "https://api.example.com/mcp");
    assert_eq!(sse.headers.len(), 1);
    assert_eq!(sse.headers[0].0.as_str(), "x-feature-flag");
    assert_eq!(sse.headers[0].1, "mcp-beta");
    let auth = gh.auth.as_ref().unwrap();
    assert_eq!(auth.kind, AuthKind::Bearer);
    assert_eq!(auth.header_name, http::header::AUTHORIZATION);
    assert_eq!(
        auth.secret_ref.as_ref().unwrap().as_str(),
        "api_keys.example"
    );
    assert!(gh.tools.permits("repo.list"));
    assert!(gh.tools.permits("issue.create"));
    assert!(!gh.tools.permits("repo.delete"), "deny wins over allow");
    assert!(!gh.tools.permits("gist.create"), "not allowed");

    let db = c.project.server("database").unwrap();
    let TransportConfig::Stdio(stdio) = &db.transport else {
        panic!("database is not stdio")
    };
    assert_eq!(stdio.command, ["bun", "run", "tools/mcp-db-server.ts"]);
    assert_eq!(stdio.cwd.as_deref(), Some(std::path::Path::new("./tools")));
    assert_eq!(
        stdio.env["DB_PATH"],
        EnvValue::Plain("./data/app.db".into())
    );
    assert_eq!(stdio.env["PORT"], EnvValue::Plain("5432".into()));
    assert!(db.tools.permits("anything"), "no allow list means all");

    let keyed = c.project.server("keyed").unwrap();
    let auth = keyed.auth.as_ref().unwrap();
    assert_eq!(auth.kind, AuthKind::Header);
    assert_eq!(auth.header_name.as_str(), "x-api-key");

    assert!(!c.project.server("off-tools").unwrap().tools.permits("x"));

    // local.toml
    let o = c.local.overrides("github");
    assert!(!o.disabled && o.trust_annotations);
    assert_eq!(o.era, kaged_mcp::client::EraPreference::Legacy);
    assert_eq!(
        c.local.overrides("keyed").era,
        kaged_mcp::client::EraPreference::Auto
    );
    assert_eq!(
        c.local.overrides("keyed").probe_timeout,
        Some(Duration::from_millis(25000))
    );
    assert_eq!(o.probe_timeout, None);
    assert_eq!(o.timeout, Some(Duration::from_millis(15000)));
    assert!(c.local.overrides("database").disabled);
    assert_eq!(c.timeout_for("github"), Duration::from_millis(15000));
    assert_eq!(c.timeout_for("keyed"), Duration::from_millis(30000));
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    assert_eq!(c.warnings[0].key_path, "mcp.ghost");

    // secrets: the disabled server's are not needed
    let secrets = c.resolve_secrets().unwrap();
    assert_eq!(secrets["github"].expose(), "sk-live-abc123");
    assert_eq!(secrets["keyed"].expose(), "k-123");
    assert!(
        !format!("{c:?}").contains("sk-live"),
        "Debug leaks a secret"
    );

    // agents
    let primary = c.project.agents.for_agent("primary").unwrap();
    assert_eq!(primary.grants.len(), 3);
    assert!(matches!(primary.grants[0].kind, GrantPattern::Glob(_)));
    assert!(matches!(primary.grants[1].kind, GrantPattern::Name));
    assert!(!primary.grants[2].enabled);
    let researcher = c.project.agents.for_agent("researcher").unwrap();
    assert_eq!(researcher.grants[0].pattern, "mcp.github.issue.list");
    assert!(c.project.agents.for_agent("writer").is_none());
}

#[test]
fn config_toml_sets_the_daemon_knobs() {
    let c = Sources::new("mcp: {}\n")
        .config("[mcp]\nresult_max_bytes = 1024\ndefault_timeout_ms = 5000\nstartup_timeout_ms = 7000\nframe_limit_bytes = 2048\nmax_in_flight = 8\n[other]\nx = 1\n")
        .load()
        .unwrap();
    assert_eq!(c.daemon.result_max_bytes, 1024);
    assert_eq!(c.daemon.default_timeout, Duration::from_secs(5));
    assert_eq!(c.daemon.startup_timeout, Duration::from_secs(7));
    assert_eq!(c.daemon.frame_limit_bytes, 2048);
    assert_eq!(c.daemon.max_in_flight, 8);
}

/// `progress_cap_ms` is the total cap of a call that reports progress (before, 10 minutes
/// always) and the TTL the client asks for its tasks; out of range is an error naming it.
#[test]
fn config_toml_sets_the_progress_cap() {
    let project = "mcp:\n  srv:\n    transport: stdio\n    command: [x]\n";
    let c = Sources::new(project)
        .config("[mcp]\nprogress_cap_ms = 2000\n")
        .load()
        .unwrap();
    assert_eq!(c.daemon.progress_cap, Duration::from_secs(2));
    assert_eq!(
        kaged_mcp::assemble::stack_settings(&c, "srv").progress_cap,
        Duration::from_secs(2)
    );
    // The call's timeout (30 s by default) is above the cap, so it is the TTL.
    assert_eq!(
        kaged_mcp::assemble::client_options(&c, &c.project.servers[0]).task_ttl,
        Duration::from_secs(30)
    );
    let default = Sources::new(project).load().unwrap();
    assert_eq!(default.daemon.progress_cap, Duration::from_secs(600));
    let err = Sources::new(project)
        .config("[mcp]\nprogress_cap_ms = 0\n")
        .load()
        .unwrap_err()
        .to_string();
    assert!(err.contains("mcp.progress_cap_ms"), "{err}");
}

/// An `[mcp]` key written at the top level of `config.toml` is not read (the file is the
/// daemon's; only `[mcp]` is ours), which is a warning naming the key and its line; other
/// top-level keys belong to the rest of the daemon and pass silently.
#[test]
fn an_mcp_key_at_the_top_level_of_config_toml_is_a_warning() {
    let c = Sources::new("mcp: {}\n")
        .config("log_level = \"info\"\nstartup_timeout_ms = 5000\n[mcp]\nmax_in_flight = 8\n")
        .load()
        .unwrap();
    assert_eq!(c.daemon.startup_timeout, Duration::from_secs(30));
    assert_eq!(c.daemon.max_in_flight, 8);
    assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    let w = c.warnings[0].to_string();
    assert!(
        w.contains("startup_timeout_ms")
            && w.contains(":2:")
            && w.contains("it belongs under [mcp]"),
        "{w}"
    );
}

#[test]
fn defaults_apply_without_config_files() {
    let c = Sources::new("").load().unwrap();
    assert!(c.project.servers.is_empty());
    assert_eq!(c.daemon.result_max_bytes, 65536);
    assert_eq!(c.daemon.default_timeout, Duration::from_secs(30));
    assert_eq!(c.daemon.frame_limit_bytes, 16 * 1024 * 1024);
}

#[test]
fn overlay_null_removes_a_server_and_maps_merge() {
    let c = Sources::new(FULL)
        .overlay(
            "mcp:\n  github: null\n  database:\n    env:\n      EXTRA: '1'\n    command: [node, other.js]\n",
        )
        .local("[secrets.deep.nested.path]\nkey = \"k\"\n")
        .load()
        .unwrap();
    assert!(c.project.server("github").is_none());
    let TransportConfig::Stdio(db) = &c.project.server("database").unwrap().transport else {
        panic!()
    };
    assert_eq!(db.command, ["node", "other.js"], "lists replace");
    assert_eq!(db.env.len(), 3, "maps merge: {:?}", db.env);
}

#[test]
fn an_env_secret_ref_is_resolved_from_local_toml_and_never_printed() {
    let c = Sources::new(
        "mcp:\n  notion:\n    transport: stdio\n    command: [notion-mcp]\n    env:\n      NOTION_TOKEN: { secret_ref: api_keys.notion }\n      LOG_LEVEL: warn\n  off:\n    transport: stdio\n    command: [x]\n    env:\n      TOKEN:\n        secret_ref: api_keys.absent\n",
    )
    .local("[mcp.off]\ndisabled = true\n\n[secrets.api_keys]\nnotion = \"ntn_supersecret\"\n")
    .load()
    .unwrap();
    let TransportConfig::Stdio(notion) = &c.project.server("notion").unwrap().transport else {
        panic!("notion is not stdio")
    };
    let token = &notion.env["NOTION_TOKEN"];
    assert_eq!(token.expose(), Some("ntn_supersecret"));
    assert_eq!(token.secret_ref().unwrap().as_str(), "api_keys.notion");
    assert_eq!(token.to_string(), "***");
    assert_eq!(notion.env["LOG_LEVEL"], EnvValue::Plain("warn".into()));
    assert_eq!(notion.env["LOG_LEVEL"].to_string(), "warn");
    // A disabled server needs none of its secrets, as with `auth`.
    let TransportConfig::Stdio(off) = &c.project.server("off").unwrap().transport else {
        panic!("off is not stdio")
    };
    assert_eq!(off.env["TOKEN"].expose(), None);
    c.resolve_secrets().unwrap();

    let shown = format!("{c:?} {token:?} {token}");
    assert!(!shown.contains("ntn_"), "{shown}");
    assert!(shown.contains("api_keys.notion"), "{shown}");
    let notion = c.project.server("notion").unwrap();
    let Ok(transport) = kaged_mcp::assemble::transport(&c, notion, None, None) else {
        panic!("notion's transport is refused")
    };
    assert_eq!(transport.describe(), "stdio: notion-mcp");
    let off = c.project.server("off").unwrap();
    let Err(e) = kaged_mcp::assemble::transport(&c, off, None, None) else {
        panic!("a transport without its env secret was built")
    };
    assert!(
        e.to_string().contains(
            "the secret `api_keys.absent` of its environment variable `TOKEN` is not resolved"
        ),
        "{e}"
    );
}

#[test]
fn overlay_can_switch_a_server_to_sse_by_removing_stdio_fields() {
    let c = Sources::new("mcp:\n  db:\n    transport: stdio\n    command: [x]\n")
        .overlay(
            "mcp:\n  db:\n    transport: sse\n    command: null\n    url: http://127.0.0.1:1/sse\n",
        )
        .load()
        .unwrap();
    assert_eq!(c.project.servers[0].transport.name(), "sse");
}

fn write(dir: &std::path::Path, name: &str, text: &[u8]) {
    std::fs::write(dir.join(name), text).unwrap();
}

#[test]
fn loads_from_a_directory_with_default_local_toml() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "project.yaml", FULL.as_bytes());
    write(d.path(), "local.toml", LOCAL.as_bytes());
    let c = load(&ConfigPaths::new(d.path())).unwrap();
    assert_eq!(c.project.servers.len(), 4);
    assert!(c.local.overrides("database").disabled);
}

#[test]
fn a_missing_project_file_is_an_error_naming_it() {
    let d = tempfile::tempdir().unwrap();
    let e = load(&ConfigPaths::new(d.path())).unwrap_err();
    assert!(e.to_string().contains("project.yaml"), "{e}");
}

#[test]
fn a_huge_file_is_refused_by_its_size_before_it_is_read() {
    let d = tempfile::tempdir().unwrap();
    let f = std::fs::File::create(d.path().join("project.yaml")).unwrap();
    f.set_len(100 * 1024 * 1024).unwrap();
    let e = load(&ConfigPaths::new(d.path())).unwrap_err();
    // Refused on the size its metadata gives, so none of its 100 MiB is read.
    assert!(
        e.to_string()
            .contains("is 104857600 bytes; configuration files are limited to 1048576 bytes"),
        "{e}"
    );
}

#[test]
fn an_alias_bomb_file_is_refused_where_it_exhausts_the_node_budget() {
    let d = tempfile::tempdir().unwrap();
    let mut s = String::from(
        "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    let mut prev = 'a';
    for c in 'b'..='i' {
        s.push_str(&format!(
            "{c}: &{c} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
        prev = c;
    }
    write(d.path(), "project.yaml", s.as_bytes());
    let e = load(&ConfigPaths::new(d.path())).unwrap_err();
    // `a` is 9 values and each next line 9 times the last: the budget of 100 000 values is
    // spent on line 6 (`f`, 531 441), so the 9^9 values of `i` are never built.
    assert!(
        e.to_string()
            .contains("expands to more than 100000 values (an alias bomb?)"),
        "{e}"
    );
    assert_eq!(e.errors()[0].location.map(|l| l.line), Some(6), "{e}");
}

#[test]
fn invalid_utf8_is_an_error_with_a_line() {
    let d = tempfile::tempdir().unwrap();
    write(d.path(), "project.yaml", b"mcp:\n  db: \xff\xfe\n");
    let e = load(&ConfigPaths::new(d.path())).unwrap_err();
    let err = &e.errors()[0];
    assert!(err.message.contains("UTF-8"), "{e}");
    assert_eq!(err.location.unwrap().line, 2);
}

#[test]
fn cwd_through_a_symlink_out_of_the_project_is_refused() {
    let d = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::create_dir(d.path().join("tools")).unwrap();
    std::os::unix::fs::symlink(outside.path(), d.path().join("escape")).unwrap();
    assert!(resolve_cwd(d.path(), std::path::Path::new("tools")).is_ok());
    let e = resolve_cwd(d.path(), std::path::Path::new("escape")).unwrap_err();
    assert!(e.contains("outside the project root"), "{e}");
}

#[test]
fn streamable_http_servers_read_url_headers_and_auth_and_http_is_the_same_transport() {
    let yaml = r#"
mcp:
  remote:
    transport: streamable-http
    url: https://mcp.example.com/mcp
    headers: { X-Feature-Flag: beta }
    auth: { type: bearer, secret_ref: api_keys.remote }
  short:
    transport: http
    url: http://127.0.0.1:3000/mcp
"#;
    let c = Sources::new(yaml)
        .local("[secrets.api_keys]\nremote = \"tok-1\"\n")
        .load()
        .unwrap();
    for (key, url) in [
        ("remote", "https://mcp.example.com/mcp"),
        ("short", "http://127.0.0.1:3000/mcp"),
    ] {
        let server = c.project.server(key).unwrap();
        assert_eq!(server.transport.name(), "streamable-http", "{key}");
        let TransportConfig::StreamableHttp(http) = &server.transport else {
            panic!("{key} is not streamable-http")
        };
        assert_eq!(http.url.as_str(), url);
    }
    let remote = c.project.server("remote").unwrap();
    assert_eq!(
        remote.transport.http().unwrap().headers[0].0.as_str(),
        "x-feature-flag"
    );
    assert_eq!(
        remote
            .auth
            .as_ref()
            .unwrap()
            .secret_ref
            .as_ref()
            .unwrap()
            .as_str(),
        "api_keys.remote"
    );
    let secrets = c.resolve_secrets().unwrap();
    assert!(secrets.contains_key("remote"));
}

#[test]
fn an_oauth_block_is_read_with_every_setting() {
    let project = "mcp:\n  remote:\n    transport: streamable-http\n    url: https://mcp.example.com/mcp\n    auth:\n      type: oauth\n      client_id: kaged-prod\n      secret_ref: oauth.remote\n      token_endpoint_auth_method: client_secret_post\n      scopes: [files:read, offline_access]\n      grant: client_credentials\n  open:\n    transport: sse\n    url: https://open.example.com/sse\n    auth:\n      type: oauth\n      client_metadata_url: https://kaged.example/client.json\n";
    let local = "[secrets.oauth]\nremote = \"cs-1\"\n";
    let c = Sources::new(project).local(local).load().unwrap();
    let remote = c.project.server("remote").unwrap().auth.as_ref().unwrap();
    assert_eq!(remote.kind, AuthKind::OAuth);
    assert_eq!(remote.header_name, http::header::AUTHORIZATION);
    assert_eq!(remote.secret_ref.as_ref().unwrap().as_str(), "oauth.remote");
    let o = remote.oauth.as_ref().unwrap();
    assert_eq!(o.client_id.as_deref(), Some("kaged-prod"));
    assert_eq!(
        o.token_endpoint_auth_method,
        Some(kaged_mcp::config::ClientAuthMethod::ClientSecretPost)
    );
    assert_eq!(
        o.scopes.as_deref(),
        Some(&["files:read".to_owned(), "offline_access".to_owned()][..])
    );
    assert_eq!(o.grant, kaged_mcp::config::OAuthGrant::ClientCredentials);
    let secrets = c.resolve_secrets().unwrap();
    assert_eq!(secrets["remote"].expose(), "cs-1");

    let open = c.project.server("open").unwrap().auth.as_ref().unwrap();
    let o = open.oauth.as_ref().unwrap();
    assert!(open.secret_ref.is_none() && o.client_id.is_none());
    assert_eq!(
        o.client_metadata_url.as_ref().unwrap().as_str(),
        "https://kaged.example/client.json"
    );
    assert_eq!(o.grant, kaged_mcp::config::OAuthGrant::AuthorizationCode);
    assert!(!secrets.contains_key("open"));
}

#[test]
fn a_workload_block_reads_the_jwt_bearer_grant_its_assertion_file_and_dpop() {
    let project = "mcp:\n  remote:\n    transport: streamable-http\n    url: https://mcp.example.com/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n      assertion_file: /var/run/secrets/tokens/mcp-token\n      client_id: workload-1\n      dpop: true\n  plain:\n    transport: streamable-http\n    url: https://plain.example.com/mcp\n    auth:\n      type: oauth\n";
    let c = Sources::new(project).load().unwrap();
    let o = c.project.server("remote").unwrap().auth.as_ref().unwrap();
    let o = o.oauth.as_ref().unwrap();
    assert_eq!(o.grant, kaged_mcp::config::OAuthGrant::JwtBearer);
    assert_eq!(o.grant.as_str(), "jwt_bearer");
    assert_eq!(
        o.assertion_file.as_deref(),
        Some(std::path::Path::new("/var/run/secrets/tokens/mcp-token"))
    );
    assert!(o.dpop);
    let plain = c.project.server("plain").unwrap().auth.as_ref().unwrap();
    let plain = plain.oauth.as_ref().unwrap();
    assert!(!plain.dpop && plain.assertion_file.is_none());
}

#[test]
fn an_oauth_block_reads_the_issuer_the_operator_names() {
    let project = "mcp:\n  remote:\n    transport: streamable-http\n    url: https://mcp.example.com/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n      assertion_file: /run/token\n      issuer: https://sts.example.com/tenant-1\n  local:\n    transport: streamable-http\n    url: http://10.1.2.3:3000/mcp\n    auth:\n      type: oauth\n      issuer: http://127.0.0.1:8080/as\n";
    let c = Sources::new(project).load().unwrap();
    let issuer = |server: &str| {
        let a = c.project.server(server).unwrap().auth.as_ref().unwrap();
        a.oauth
            .as_ref()
            .unwrap()
            .issuer
            .as_ref()
            .map(|u| u.to_string())
    };
    assert_eq!(
        issuer("remote").as_deref(),
        Some("https://sts.example.com/tenant-1")
    );
    assert_eq!(issuer("local").as_deref(), Some("http://127.0.0.1:8080/as"));
}

#[test]
fn an_enterprise_block_reads_the_identity_provider() {
    let project = "mcp:\n  remote:\n    transport: streamable-http\n    url: https://mcp.example.com/mcp\n    auth:\n      type: oauth\n      grant: jwt_bearer\n      client_id: agent\n      secret_ref: oauth.agent\n      identity_provider:\n        token_endpoint: https://idp.example.com/oauth2/token\n        id_token_file: /run/kaged/id-token\n        client_id: kaged-at-idp\n        secret_ref: idp.kaged\n";
    let local = "[secrets.oauth]\nagent = \"s1\"\n[secrets.idp]\nkaged = \"s2\"\n";
    let c = Sources::new(project).local(local).load().unwrap();
    let a = c.project.server("remote").unwrap().auth.as_ref().unwrap();
    let idp = a
        .oauth
        .as_ref()
        .unwrap()
        .identity_provider
        .as_ref()
        .unwrap();
    assert_eq!(
        idp.token_endpoint.as_str(),
        "https://idp.example.com/oauth2/token"
    );
    assert_eq!(
        idp.id_token_file,
        std::path::Path::new("/run/kaged/id-token")
    );
    assert_eq!(idp.client_id.as_deref(), Some("kaged-at-idp"));
    assert_eq!(idp.secret_ref.as_ref().unwrap().as_str(), "idp.kaged");
}
