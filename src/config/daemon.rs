//! `config.toml`: the daemon-level knobs of the MCP subsystem, `[mcp]`.

use std::path::Path;
use std::time::Duration;

use toml::de::DeValue;

use super::error::ConfigError;
use super::toml_doc::{integer, type_name, TomlDoc};

/// The daemon-level `[mcp]` knobs, one set for all servers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct DaemonConfig {
    /// `result_max_bytes`: the cap on a tool result as the agent receives it (default 65536).
    pub result_max_bytes: usize,
    /// `default_timeout_ms`: per-call timeout when a server has no `timeout_ms` (default 30000).
    pub default_timeout: Duration,
    /// `startup_timeout_ms`: how long session start waits for one server to spawn, initialize
    /// and list its tools (default 30000).
    pub startup_timeout: Duration,
    /// `progress_cap_ms`: the total cap of a call that reports progress or runs as a task,
    /// however often it reports (default 600000, 10 minutes; a server's `timeout_ms` above it
    /// is the cap instead). A person filling a form holds the call's `timeout_ms` but not this.
    pub progress_cap: Duration,
    /// `frame_limit_bytes`: the largest single message accepted from a server, a stdio line or
    /// an SSE event (default 16 MiB). Longer ones fail the affected call; memory stays bounded.
    pub frame_limit_bytes: usize,
    /// `max_in_flight`: calls in flight per server before further calls wait (default 64).
    pub max_in_flight: usize,
    /// `oauth_token_dir`: where OAuth token files live (default: the operator's state
    /// directory, `$XDG_STATE_HOME/kaged-mcp/oauth` or `~/.local/state/kaged-mcp/oauth`).
    pub oauth_token_dir: Option<std::path::PathBuf>,
    /// `pins = "enforce" | "warn" | "off"`: the default of every server's `pins` (see
    /// [`Config::pin_policy`](super::Config::pin_policy)); `None` leaves the default to
    /// whether the project has an `mcp.lock`.
    pub pins: Option<crate::pin::PinPolicy>,
}

impl Default for DaemonConfig {
    fn default() -> Self {
        Self {
            result_max_bytes: 65_536,
            default_timeout: Duration::from_millis(30_000),
            startup_timeout: Duration::from_millis(30_000),
            progress_cap: Duration::from_millis(600_000),
            frame_limit_bytes: 16 * 1024 * 1024,
            max_in_flight: 64,
            oauth_token_dir: None,
            pins: None,
        }
    }
}

/// The `[mcp]` keys (docs/configuration.md lists each; `tests/docs.rs` checks it does).
pub const KEYS: &[&str] = &[
    "result_max_bytes",
    "default_timeout_ms",
    "startup_timeout_ms",
    "progress_cap_ms",
    "frame_limit_bytes",
    "max_in_flight",
    "oauth_token_dir",
    "pins",
];

/// Parses `config.toml`; tables other than `[mcp]` belong to the rest of the daemon. One of
/// the `[mcp]` keys at the top level is not read, which is a warning (it looks meant for us).
pub(crate) fn parse(
    text: &str,
    file: &Path,
    errors: &mut Vec<ConfigError>,
    warnings: &mut Vec<ConfigError>,
) -> DaemonConfig {
    let mut out = DaemonConfig::default();
    let doc = match TomlDoc::parse(text, file) {
        Ok(d) => d,
        Err(e) => {
            errors.push(e);
            return out;
        }
    };
    for (k, v) in doc.root.get_ref().iter() {
        let key = k.get_ref().as_ref();
        if KEYS.contains(&key) {
            warnings.push(doc.err(
                v.span(),
                key,
                format!("`{key}` at the top level is not read; it belongs under [mcp]"),
            ));
        }
    }
    let Some(mcp) = doc.root.get_ref().get("mcp") else {
        return out;
    };
    let DeValue::Table(t) = mcp.get_ref() else {
        errors.push(doc.err(
            mcp.span(),
            "mcp",
            format!("expected a table, found {}", type_name(mcp.get_ref())),
        ));
        return out;
    };
    for (k, v) in t.iter() {
        let key = k.get_ref().as_ref();
        let p = format!("mcp.{key}");
        if key == "oauth_token_dir" {
            match v.get_ref() {
                DeValue::String(s) if std::path::Path::new(s.as_ref()).is_absolute() => {
                    out.oauth_token_dir = Some(std::path::PathBuf::from(s.as_ref() as &str));
                }
                DeValue::String(_) => errors.push(doc.err(
                    v.span(),
                    p,
                    "must be an absolute path (tokens never live in the project)",
                )),
                other => errors.push(doc.err(
                    v.span(),
                    p,
                    format!("expected a string, found {}", type_name(other)),
                )),
            }
            continue;
        }
        if key == "pins" {
            match v.get_ref() {
                DeValue::String(s) => match s.parse::<crate::pin::PinPolicy>() {
                    Ok(pins) => out.pins = Some(pins),
                    Err(problem) => errors.push(doc.err(v.span(), p, problem)),
                },
                other => errors.push(doc.err(
                    v.span(),
                    p,
                    format!(
                        "expected \"enforce\", \"warn\" or \"off\", found {}",
                        type_name(other)
                    ),
                )),
            }
            continue;
        }
        let (min, max): (i64, i64) = match key {
            "result_max_bytes" => (1, 1 << 30),
            "default_timeout_ms" | "startup_timeout_ms" | "progress_cap_ms" => {
                (1, 24 * 3600 * 1000)
            }
            "frame_limit_bytes" => (1024, 1 << 32),
            "max_in_flight" => (1, 65_536),
            other => {
                errors.push(doc.err(
                    k.span(),
                    p,
                    format!("unknown key `{other}`; [mcp] has {}", KEYS.join(", ")),
                ));
                continue;
            }
        };
        let n = match integer(v.get_ref()) {
            Some(n) if (min..=max).contains(&n) => n,
            Some(n) => {
                errors.push(doc.err(v.span(), p, format!("{n} is out of range {min}..={max}")));
                continue;
            }
            None => {
                errors.push(doc.err(
                    v.span(),
                    p,
                    format!("expected an integer, found {}", type_name(v.get_ref())),
                ));
                continue;
            }
        };
        let n = n as u64;
        match key {
            "result_max_bytes" => out.result_max_bytes = n as usize,
            "default_timeout_ms" => out.default_timeout = Duration::from_millis(n),
            "startup_timeout_ms" => out.startup_timeout = Duration::from_millis(n),
            "progress_cap_ms" => out.progress_cap = Duration::from_millis(n),
            "frame_limit_bytes" => out.frame_limit_bytes = n as usize,
            _ => out.max_in_flight = n as usize,
        }
    }
    out
}
