//! `local.toml`: the operator's overrides (`[mcp.<key>]`) and secrets (`[secrets.<path>]`),
//! ADR-0043 §7. Never part of the project; never printed.

use crate::protocol::LoggingLevel;
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use toml::de::{DeTable, DeValue};

use super::era::EraPreference;
use super::error::ConfigError;
use super::secret::{Secret, SecretRef};
use super::tasks::TaskMode;
use super::toml_doc::{integer, type_name, TomlDoc};
use super::validation::Validation;

/// `[mcp.<key>]`: one server's operator overrides.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct ServerOverrides {
    /// `disabled = true`: the server is never contacted and none of its tools registered.
    pub disabled: bool,
    /// `timeout_ms`: per-call timeout for this server (else the daemon default).
    pub timeout: Option<Duration>,
    /// `trust_annotations = true`: retry calls of tools this server declares idempotent or
    /// read-only (`annotations.idempotentHint` / `readOnlyHint`). Default `false`: a server's
    /// own claims are not trusted to make a repeated call safe.
    pub trust_annotations: bool,
    /// `era = "auto" | "legacy" | "modern"`: which protocol era to speak (default `auto`:
    /// probe with `server/discover`, fall back to `initialize`; see [`crate::client::era`]).
    pub era: EraPreference,
    /// `probe_timeout_ms`: how long `server/discover` may go unanswered before `auto` falls
    /// back to `initialize` (else [`ClientOptions::probe_timeout`], 10 s). It includes a stdio
    /// server's start-up: raise it for one that starts slowly (`npx` fetching a package), or
    /// the server is spoken to in the legacy era. No effect with `era = "legacy"`; the
    /// daemon's `startup_timeout_ms` still bounds the whole start.
    ///
    /// [`ClientOptions::probe_timeout`]: crate::client::ClientOptions::probe_timeout
    pub probe_timeout: Option<Duration>,
    /// `validate = "both" | "arguments" | "results" | "off"`: what the validation layer checks
    /// against the tools' JSON Schemas (default `both`; see [`crate::validate`]).
    pub validate: Validation,
    /// `tasks = "required" | "prefer" | "off"`: which calls run as MCP tasks (default
    /// `required`: only the tools that require it; see [`TaskMode`]).
    pub tasks: TaskMode,
    /// `log_level = "debug" | "info" | "notice" | "warning" | "error" | "critical" | "alert" |
    /// "emergency"`: the level the server is asked to log at (`logging/setLevel` at each start
    /// of a legacy session whose server offers `logging`; the `_meta` log level of every
    /// 2026-07-28 request). Default none: the server decides.
    pub log_level: Option<LoggingLevel>,
    /// `pins = "enforce" | "warn" | "off"`: how this server's catalog is held to `mcp.lock`
    /// (default: config.toml's `[mcp] pins`, else `enforce` with a lock and `off` without;
    /// see [`crate::pin`]).
    pub pins: Option<crate::pin::PinPolicy>,
}

/// The parsed `local.toml`.
#[derive(Clone, Default)]
#[non_exhaustive]
pub struct LocalConfig {
    /// Overrides by server key.
    pub servers: BTreeMap<String, ServerOverrides>,
    secrets: BTreeMap<String, Secret>,
}

impl std::fmt::Debug for LocalConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LocalConfig")
            .field("servers", &self.servers)
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl LocalConfig {
    /// The overrides of `server`, or the defaults.
    pub fn overrides(&self, server: &str) -> ServerOverrides {
        self.servers.get(server).cloned().unwrap_or_default()
    }

    /// The secret a reference points to: `a.b.c` is `[secrets.a.b] c`.
    pub fn secret(&self, r: &SecretRef) -> Option<&Secret> {
        self.secrets.get(r.as_str())
    }

    /// Adds a secret, as if `[secrets]` held it (for embedders and tests).
    pub fn insert_secret(&mut self, r: &SecretRef, value: Secret) {
        self.secrets.insert(r.as_str().to_owned(), value);
    }
}

/// Parses `local.toml`. Tables other than `[mcp]` and `[secrets]` belong to the rest of kaged.
pub(crate) fn parse(text: &str, file: &Path, errors: &mut Vec<ConfigError>) -> LocalConfig {
    let doc = match TomlDoc::parse(text, file) {
        Ok(d) => d,
        Err(e) => {
            errors.push(e);
            return LocalConfig::default();
        }
    };
    let mut out = LocalConfig::default();
    let root = doc.root.get_ref();
    if let Some(mcp) = root.get("mcp") {
        match mcp.get_ref() {
            DeValue::Table(t) => {
                for (k, v) in t.iter() {
                    let path = format!("mcp.{}", k.get_ref());
                    match v.get_ref() {
                        DeValue::Table(fields) => {
                            if let Some(o) = overrides(&doc, fields, &path, errors) {
                                out.servers.insert(k.get_ref().to_string(), o);
                            }
                        }
                        other => errors.push(doc.err(
                            v.span(),
                            path,
                            format!("expected a table, found {}", type_name(other)),
                        )),
                    }
                }
            }
            other => errors.push(doc.err(
                mcp.span(),
                "mcp",
                format!("expected a table, found {}", type_name(other)),
            )),
        }
    }
    if let Some(s) = root.get("secrets") {
        match s.get_ref() {
            DeValue::Table(t) => secrets(&doc, t, "secrets", "", &mut out.secrets, errors),
            other => errors.push(doc.err(
                s.span(),
                "secrets",
                format!("expected a table, found {}", type_name(other)),
            )),
        }
    }
    out
}

fn overrides(
    doc: &TomlDoc<'_>,
    fields: &DeTable<'_>,
    path: &str,
    errors: &mut Vec<ConfigError>,
) -> Option<ServerOverrides> {
    let mut o = ServerOverrides::default();
    let before = errors.len();
    for (k, v) in fields.iter() {
        let key = k.get_ref().as_ref();
        let p = format!("{path}.{key}");
        match (key, v.get_ref()) {
            ("disabled", DeValue::Boolean(b)) => o.disabled = *b,
            ("trust_annotations", DeValue::Boolean(b)) => o.trust_annotations = *b,
            ("disabled" | "trust_annotations", other) => errors.push(doc.err(
                v.span(),
                p,
                format!("expected true or false, found {}", type_name(other)),
            )),
            ("era", DeValue::String(text)) => match text.parse::<EraPreference>() {
                Ok(era) => o.era = era,
                Err(problem) => errors.push(doc.err(v.span(), p, problem)),
            },
            ("era", other) => errors.push(doc.err(
                v.span(),
                p,
                format!(
                    "expected \"auto\", \"legacy\" or \"modern\", found {}",
                    type_name(other)
                ),
            )),
            ("validate", DeValue::String(text)) => match text.parse::<Validation>() {
                Ok(validate) => o.validate = validate,
                Err(problem) => errors.push(doc.err(v.span(), p, problem)),
            },
            ("validate", other) => errors.push(doc.err(
                v.span(),
                p,
                format!(
                    "expected \"both\", \"arguments\", \"results\" or \"off\", found {}",
                    type_name(other)
                ),
            )),
            ("tasks", DeValue::String(text)) => match text.parse::<TaskMode>() {
                Ok(tasks) => o.tasks = tasks,
                Err(problem) => errors.push(doc.err(v.span(), p, problem)),
            },
            ("tasks", other) => errors.push(doc.err(
                v.span(),
                p,
                format!(
                    "expected \"required\", \"prefer\" or \"off\", found {}",
                    type_name(other)
                ),
            )),
            ("log_level", value) => {
                let level = match value {
                    DeValue::String(text) => LoggingLevel::from_name(text),
                    _ => None,
                };
                match level {
                    Some(level) => o.log_level = Some(level),
                    None => errors.push(doc.err(
                        v.span(),
                        p,
                        format!(
                            "expected one of {}, found {}",
                            LoggingLevel::NAMES
                                .iter()
                                .map(|n| format!("\"{n}\""))
                                .collect::<Vec<_>>()
                                .join(", "),
                            match value {
                                DeValue::String(text) => format!("\"{text}\""),
                                other => type_name(other).to_owned(),
                            }
                        ),
                    )),
                }
            }
            ("pins", DeValue::String(text)) => match text.parse::<crate::pin::PinPolicy>() {
                Ok(pins) => o.pins = Some(pins),
                Err(problem) => errors.push(doc.err(v.span(), p, problem)),
            },
            ("pins", other) => errors.push(doc.err(
                v.span(),
                p,
                format!(
                    "expected \"enforce\", \"warn\" or \"off\", found {}",
                    type_name(other)
                ),
            )),
            ("timeout_ms", value) => o.timeout = milliseconds(doc, v.span(), value, p, errors),
            ("probe_timeout_ms", value) => {
                o.probe_timeout = milliseconds(doc, v.span(), value, p, errors);
            }
            (other, _) => errors.push(doc.err(
                k.span(),
                p,
                format!(
                    "unknown key `{other}`; [mcp.<server>] has {}",
                    SERVER_KEYS.join(", ")
                ),
            )),
        }
    }
    (errors.len() == before).then_some(o)
}

/// The keys of an `[mcp.<server>]` table (docs/configuration.md lists each; `tests/docs.rs`
/// checks it does).
pub const SERVER_KEYS: &[&str] = &[
    "disabled",
    "era",
    "log_level",
    "pins",
    "probe_timeout_ms",
    "tasks",
    "timeout_ms",
    "trust_annotations",
    "validate",
];
/// A positive number of milliseconds at `path`, or `None` with the problem in `errors`.
fn milliseconds(
    doc: &TomlDoc<'_>,
    span: std::ops::Range<usize>,
    value: &DeValue<'_>,
    path: String,
    errors: &mut Vec<ConfigError>,
) -> Option<Duration> {
    match integer(value) {
        Some(ms) if ms > 0 => Some(Duration::from_millis(ms as u64)),
        Some(ms) => {
            errors.push(doc.err(
                span,
                path,
                format!("must be a positive number of milliseconds, found {ms}"),
            ));
            None
        }
        None => {
            errors.push(doc.err(
                span,
                path,
                format!(
                    "expected a positive integer (milliseconds), found {}",
                    type_name(value)
                ),
            ));
            None
        }
    }
}

fn secrets(
    doc: &TomlDoc<'_>,
    table: &DeTable<'_>,
    path: &str,
    prefix: &str,
    out: &mut BTreeMap<String, Secret>,
    errors: &mut Vec<ConfigError>,
) {
    for (k, v) in table.iter() {
        let key = k.get_ref().as_ref();
        let full = if prefix.is_empty() {
            key.to_owned()
        } else {
            format!("{prefix}.{key}")
        };
        let p = format!("{path}.{key}");
        match v.get_ref() {
            DeValue::String(s) => {
                out.insert(full, Secret::new(s.as_ref()));
            }
            DeValue::Table(t) => secrets(doc, t, &p, &full, out, errors),
            // The value is never shown: only its type.
            other => errors.push(doc.err(
                v.span(),
                p,
                format!("a secret must be a string, found {}", type_name(other)),
            )),
        }
    }
}
