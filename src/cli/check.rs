//! `kaged-mcp check`: validate the configuration and print the resolved servers.

use std::fmt::Write as _;

use crate::client::EraPreference;
use crate::config::{
    AuthConfig, AuthKind, Config, McpServerConfig, ServerOverrides, TaskMode, ToolFilter,
    TransportConfig, Validation,
};
use crate::protocol::LoggingLevel;
use crate::transport::text::redact_uri;

use super::{load_config, ProjectArgs, EXIT_CONFIG, EXIT_OK};

/// `kaged-mcp check`: one line per server, or (`verbose`) each server's whole settings.
pub(super) fn run(args: &ProjectArgs, verbose: bool) -> u8 {
    let config = match load_config(args) {
        Ok(c) => c,
        Err(f) => return f.exit(false, false),
    };
    let secrets_ok = match config.resolve_secrets() {
        Ok(_) => true,
        Err(errs) => {
            for e in &errs {
                eprintln!("error: {e}");
            }
            false
        }
    };
    if verbose {
        print!("{}", describe(&config));
    } else {
        print!("{}", summary(&config));
    }
    // The roots are resolved as a start resolves them: a missing directory or a symlink out
    // of the project is found here, not only when the server starts.
    let mut roots_ok = true;
    for server in &config.project.servers {
        if let Err(e) = crate::assemble::roots(&config, server) {
            eprintln!("error: {}", super::hints::line(&e.to_string()));
            roots_ok = false;
        }
    }
    match &config.lock {
        None if !config.project.servers.is_empty() => println!(
            "{}",
            super::hints::fix(
                "no mcp.lock: tool definitions are not pinned; `kaged-mcp lock` writes one (see \
                 Pinning in docs/operations.md)"
            )
        ),
        None => {}
        Some(lock) => {
            let tools: usize = lock.servers.values().map(|s| s.tools.len()).sum();
            let line = format!(
                "mcp.lock: {} server(s), {tools} pinned tool(s); `kaged-mcp lock --check` compares \
                 them with what the servers list",
                lock.servers.len()
            );
            println!("{}", super::hints::line(&line));
        }
    }
    if secrets_ok && roots_ok {
        EXIT_OK
    } else {
        EXIT_CONFIG
    }
}

/// The human-readable description of the resolved servers. Never contains a secret value.
pub(crate) fn describe(config: &Config) -> String {
    let mut out = String::new();
    let d = &config.daemon;
    let _ = writeln!(
        out,
        "project {}: {} server(s); result cap {} bytes, default timeout {} ms",
        config.project_root.display(),
        config.project.servers.len(),
        d.result_max_bytes,
        d.default_timeout.as_millis()
    );
    for s in &config.project.servers {
        describe_server(&mut out, config, s);
    }
    let agents = config.project.agents.agent_names();
    if !agents.is_empty() {
        let _ = writeln!(out, "\nagents with tool grants: {}", agents.join(", "));
    }
    out
}

/// One line for the project, then one per server: key, transport, command or URL, state.
/// Never contains a secret value (a URL's credentials and query values are hidden).
pub(crate) fn summary(config: &Config) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "project {}: {} server(s) (-v for each one's settings)",
        config.project_root.display(),
        config.project.servers.len()
    );
    for s in &config.project.servers {
        let target = match &s.transport {
            TransportConfig::Stdio(st) => shell_words(&st.command),
            TransportConfig::Sse(http) | TransportConfig::StreamableHttp(http) => {
                redact_uri(http.url.as_str()).into_owned()
            }
        };
        let _ = writeln!(
            out,
            "{}\t{}\t{target}\t{}",
            s.key,
            s.transport.name(),
            state(config, s)
        );
    }
    out
}

/// The refs of a stdio server's `env` secrets that `local.toml` does not hold.
fn env_secrets_missing(s: &McpServerConfig) -> impl Iterator<Item = &str> {
    let env = match &s.transport {
        TransportConfig::Stdio(st) => Some(&st.env),
        _ => None,
    };
    env.into_iter()
        .flat_map(|env| env.values())
        .filter(|v| v.expose().is_none())
        .filter_map(|v| v.secret_ref().map(|r| r.as_str()))
}

/// A server's state as the configuration decides it: `disabled (local.toml)`, `secret
/// MISSING: <refs>` when a secret it names is not set, `no tools (tools.enabled: false)`, or
/// `ok`.
fn state(config: &Config, s: &McpServerConfig) -> String {
    if config.local.overrides(&s.key).disabled {
        return "disabled (local.toml)".to_owned();
    }
    let missing: Vec<&str> = s
        .auth
        .iter()
        .flat_map(|a| {
            [
                a.secret_ref.as_ref(),
                a.oauth.as_ref().and_then(|o| o.private_key_ref.as_ref()),
            ]
        })
        .flatten()
        .filter(|r| config.local.secret(r).is_none())
        .map(|r| r.as_str())
        .chain(env_secrets_missing(s))
        .collect();
    if !missing.is_empty() {
        return format!("secret MISSING: {}", missing.join(", "));
    }
    if !s.tools.enabled {
        return "no tools (tools.enabled: false)".to_owned();
    }
    "ok".to_owned()
}

/// Appends one server's section: its transport, auth, tool filter, local.toml settings and
/// roots.
fn describe_server(out: &mut String, config: &Config, s: &McpServerConfig) {
    let o = config.local.overrides(&s.key);
    let _ = writeln!(out, "\n{} ({})", s.key, s.transport.name());
    describe_transport(out, &s.transport);
    let _ = writeln!(out, "{}", auth_line(config, s.auth.as_ref()));
    let _ = writeln!(out, "  tools: {}", filter_line(&s.tools));
    describe_overrides(out, config, s, &o);
    if let Some(roots) = &s.roots {
        let shown: Vec<String> = roots.iter().map(|r| r.display().to_string()).collect();
        let _ = writeln!(out, "  roots: [{}]", shown.join(", "));
    }
}

/// Appends the transport's lines: the command, cwd and env of a stdio server, the URL and
/// header names of an HTTP one.
fn describe_transport(out: &mut String, transport: &TransportConfig) {
    match transport {
        TransportConfig::Stdio(st) => {
            let _ = writeln!(out, "  command: {}", shell_words(&st.command));
            if let Some(cwd) = &st.cwd {
                let _ = writeln!(out, "  cwd: {}", cwd.display());
            }
            if !st.env.is_empty() {
                // `EnvValue` displays a secret as `***`.
                let env: Vec<String> = st.env.iter().map(|(k, v)| format!("{k}={v}")).collect();
                let _ = writeln!(out, "  env: {}", env.join(" "));
            }
        }
        TransportConfig::Sse(http) | TransportConfig::StreamableHttp(http) => {
            let _ = writeln!(out, "  url: {}", redact_uri(http.url.as_str()));
            if !http.headers.is_empty() {
                let names: Vec<&str> = http.headers.iter().map(|(n, _)| n.as_str()).collect();
                let _ = writeln!(out, "  headers: {}", names.join(", "));
            }
        }
    }
}

/// The `  auth:` line: the kind, whether each secret it names is set, and the OAuth settings.
fn auth_line(config: &Config, auth: Option<&AuthConfig>) -> String {
    let Some(a) = auth else {
        return "  auth: none".to_owned();
    };
    let kind = match a.kind {
        AuthKind::Bearer => "bearer".to_owned(),
        AuthKind::Header => format!("header {}", a.header_name),
        AuthKind::OAuth => "oauth".to_owned(),
    };
    let mut line = format!("  auth: {kind}");
    let refs = [
        ("secret_ref", a.secret_ref.as_ref()),
        (
            "private_key_ref",
            a.oauth.as_ref().and_then(|o| o.private_key_ref.as_ref()),
        ),
    ];
    for (what, r) in refs {
        let Some(r) = r else { continue };
        let state = if config.local.secret(r).is_some() {
            "set"
        } else {
            "MISSING"
        };
        let _ = write!(line, ", {what} {r} ({state})");
    }
    if let Some(o) = &a.oauth {
        let grant = o.grant.as_str();
        let client = o.client_id.as_deref().map_or_else(
            || {
                if o.grant == crate::config::OAuthGrant::JwtBearer {
                    return "no client id".to_owned();
                }
                o.client_metadata_url
                    .as_ref()
                    .map_or("registered at login".to_owned(), |u| {
                        format!("metadata document {u}")
                    })
            },
            |id| format!("client_id {id}"),
        );
        let _ = write!(line, ", grant {grant}, {client}");
        if let Some(issuer) = &o.issuer {
            let _ = write!(
                line,
                ", issuer {}",
                crate::transport::http::redacted(issuer)
            );
        }
        if let Some(scopes) = &o.scopes {
            let _ = write!(line, ", scopes [{}]", scopes.join(" "));
        }
        workload_note(&mut line, o);
    }
    line
}

/// The files a workload grant reads at each grant, each said to be there or missing (never
/// read: they hold tokens), the IdP of SEP-990, and DPoP.
fn workload_note(line: &mut String, o: &crate::config::OAuthConfig) {
    let there = |p: &std::path::Path| if p.is_file() { "present" } else { "MISSING" };
    if let Some(f) = &o.assertion_file {
        let _ = write!(line, ", assertion_file {} ({})", f.display(), there(f));
    }
    if let Some(i) = &o.identity_provider {
        let f = &i.id_token_file;
        let _ = write!(
            line,
            ", identity provider {}, id_token_file {} ({})",
            crate::transport::http::redacted(&i.token_endpoint),
            f.display(),
            there(f)
        );
    }
    if o.dpop {
        line.push_str(", DPoP");
    }
}

/// The tool filter: enabled or disabled, then its allow and deny lists.
fn filter_line(t: &ToolFilter) -> String {
    let mut filter = String::from(if t.enabled { "enabled" } else { "disabled" });
    if !t.allow.is_empty() {
        let _ = write!(filter, ", allow [{}]", t.allow.join(", "));
    }
    if !t.deny.is_empty() {
        let _ = write!(filter, ", deny [{}]", t.deny.join(", "));
    }
    filter
}

/// Appends the server's settings from local.toml (or their defaults): disabled, timeout,
/// annotations, era, validation, tasks, probe timeout and log level.
fn describe_overrides(out: &mut String, config: &Config, s: &McpServerConfig, o: &ServerOverrides) {
    let _ = writeln!(
        out,
        "  disabled: {}",
        if o.disabled { "yes (local.toml)" } else { "no" }
    );
    let _ = writeln!(
        out,
        "  timeout: {} ms{}",
        config.timeout_for(&s.key).as_millis(),
        if o.timeout.is_some() {
            " (local.toml)"
        } else {
            ""
        }
    );
    if o.trust_annotations {
        let _ = writeln!(out, "  trust_annotations: yes");
    }
    let _ = writeln!(out, "  era: {}", era_line(o.era, &s.transport));
    let _ = writeln!(out, "  validate: {}", validate_line(o.validate));
    let _ = writeln!(out, "  tasks: {}", tasks_line(o.tasks));
    if let Some(t) = o.probe_timeout {
        let _ = writeln!(out, "  probe timeout: {} ms (local.toml)", t.as_millis());
    }
    let _ = writeln!(
        out,
        "  log level: {}",
        o.log_level.map_or(
            "none: the server decides (set `log_level` under [mcp.<key>] in local.toml)",
            LoggingLevel::name
        )
    );
}

/// What the `validate` knob means for this server (`[mcp.<key>] validate` in local.toml).
fn validate_line(validate: Validation) -> String {
    let what = match validate {
        Validation::Both => {
            "both: arguments against inputSchema, structured results against outputSchema"
        }
        Validation::Arguments => "arguments: arguments against inputSchema; results unchecked",
        Validation::Results => {
            "results: structured results against outputSchema; arguments unchecked"
        }
        Validation::Off => "off: no schema is checked",
    };
    let source = if validate == Validation::default() {
        "default; set `validate` under [mcp.<key>] in local.toml"
    } else {
        "local.toml"
    };
    let unbuilt = if cfg!(feature = "validate") || validate == Validation::Off {
        ""
    } else {
        "; this build has no `validate` feature, so nothing is checked"
    };
    format!("{what} ({source}{unbuilt})")
}

/// What the `tasks` knob means for this server (`[mcp.<key>] tasks` in local.toml).
fn tasks_line(tasks: TaskMode) -> String {
    let what = match tasks {
        TaskMode::Required => "required: tools that require it run as tasks",
        TaskMode::Prefer => "prefer: tools that allow it run as tasks too",
        TaskMode::Off => "off: no call runs as a task; tools that require one are not registered",
    };
    let source = if tasks == TaskMode::default() {
        "default; set `tasks` under [mcp.<key>] in local.toml"
    } else {
        "local.toml"
    };
    format!("{what} ({source})")
}

/// What the `era` knob means for this server (`[mcp.<key>] era` in local.toml). An `sse`
/// server speaks only the legacy era, and `era` accepts only the values that say so.
fn era_line(era: EraPreference, transport: &TransportConfig) -> String {
    if let TransportConfig::Sse(_) = transport {
        let source = if era == EraPreference::Auto {
            "default"
        } else {
            "local.toml"
        };
        return format!(
            "legacy: initialize, the only era the sse transport carries ({source}; `era` may be \"auto\" or \"legacy\" here, both mean this)"
        );
    }
    let source = if era == EraPreference::Auto {
        "default; set `era` under [mcp.<key>] in local.toml"
    } else {
        "local.toml"
    };
    let what = match era {
        EraPreference::Auto => {
            "auto: server/discover first; 2026-07-28 if the server answers it, else initialize"
        }
        EraPreference::Legacy => "legacy: initialize (2024-11-05 … 2025-11-25), no probe",
        EraPreference::Modern => {
            "modern: 2026-07-28 only (server/discover, _meta on every request)"
        }
    };
    format!("{what} ({source})")
}

fn shell_words(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty()
                && w.chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@+".contains(c))
            {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
