//! `config_project` and `config_toml`: configuration texts loaded through
//! [`Sources`](kaged_mcp::config::Sources), as the daemon loads the files.

use std::borrow::Cow;

use kaged_mcp::config::{Config, ConfigErrors, Sources};

/// The byte that separates the files packed into one fuzz input. It never occurs in UTF-8, so
/// a seed made of valid files splits where it was joined.
pub const SEPARATOR: u8 = 0xFF;

/// The project `config_toml` loads its `local.toml` and `config.toml` against: two servers
/// with secrets (one of them nested), one without.
pub const FIXED_PROJECT: &str = r#"mcp:
  github:
    transport: sse
    url: https://api.example.com/mcp
    auth:
      type: bearer
      secret_ref: api_keys.example
  keyed:
    transport: sse
    url: http://127.0.0.1:8080/sse
    auth:
      type: header
      header_name: X-API-Key
      secret_ref: deep.nested.key
  database:
    transport: stdio
    command: ["bun", "run", "db.ts"]
primary:
  tools:
    "mcp.github.issue.*": { enabled: true }
"#;

/// Splits `data` at each [`SEPARATOR`] into at most `n` parts (the last part keeps any further
/// separators), each decoded as UTF-8 with invalid sequences replaced.
pub fn split(data: &[u8], n: usize) -> Vec<Cow<'_, str>> {
    data.splitn(n, |b| *b == SEPARATOR)
        .map(String::from_utf8_lossy)
        .collect()
}

/// `config_project`: `project.yaml`, then optionally `project.local.yaml` and `local.toml`,
/// separated by [`SEPARATOR`].
///
/// Loading never panics; an error list is never empty and each error names a file and says
/// something; a loaded configuration answers `timeout_for` and `resolve_secrets` for every
/// server.
pub fn config_project(data: &[u8]) {
    let parts = split(data, 3);
    let mut sources = Sources::new(parts[0].as_ref());
    if let Some(overlay) = parts.get(1) {
        sources = sources.overlay(overlay.as_ref());
    }
    if let Some(local) = parts.get(2) {
        sources = sources.local(local.as_ref());
    }
    check_load(&sources);
}

/// `config_toml`: `local.toml`, then optionally `config.toml`, separated by [`SEPARATOR`],
/// loaded with [`FIXED_PROJECT`]. Same checks as [`config_project`].
pub fn config_toml(data: &[u8]) {
    let parts = split(data, 2);
    let mut sources = Sources::new(FIXED_PROJECT).local(parts[0].as_ref());
    if let Some(config) = parts.get(1) {
        sources = sources.config(config.as_ref());
    }
    check_load(&sources);
}

fn check_load(sources: &Sources) {
    match sources.load() {
        Ok(config) => check_config(&config),
        Err(errors) => check_errors(&errors),
    }
}

fn check_config(config: &Config) {
    for server in &config.project.servers {
        let _ = config.timeout_for(&server.key);
    }
    for warning in &config.warnings {
        assert!(!warning.message.is_empty(), "empty warning: {warning:?}");
    }
    match config.resolve_secrets() {
        Ok(secrets) => {
            for key in secrets.keys() {
                assert!(
                    config.project.server(key).is_some(),
                    "a secret for the undeclared server {key:?}"
                );
            }
        }
        Err(errors) => check_errors(&errors),
    }
    // Debug output must work (and never show a secret: checked by the security tests).
    let _ = format!("{config:?}");
}

fn check_errors(errors: &ConfigErrors) {
    assert!(!errors.errors().is_empty(), "an empty error list");
    for e in errors {
        assert!(
            !e.message.trim().is_empty(),
            "an error without a message: {e:?}"
        );
        assert!(
            !e.file.as_os_str().is_empty(),
            "an error without a file: {e:?}"
        );
        if let Some(loc) = e.location {
            assert!(
                loc.line >= 1 && loc.column >= 1,
                "a 0-based location: {e:?}"
            );
        }
    }
    assert!(!errors.to_string().is_empty());
}
