//! The arguments of every command that talks to servers ([`ServerArgs`]): the project, or one
//! ad-hoc server given on the command line (`-- COMMAND ARGS…` over stdio, `--url URL` over
//! Streamable HTTP or legacy SSE), and the log level to ask the servers for.
//!
//! An ad-hoc server's configuration is built in memory: a `project.yaml` of one server (named
//! `adhoc` unless `--name` says otherwise) is generated as JSON (which YAML reads as it is, every
//! string quoted), and `--header` values are added afterwards as sensitive header values: they
//! are secrets, never printed (`Debug` shows `Sensitive`), never in a generated text.

use clap::{Args, ValueEnum};
use http::{HeaderName, HeaderValue};
use serde_json::json;

use crate::config::{self, is_valid_server_key, Config, TransportConfig};
use crate::protocol::LoggingLevel;

use super::output::Failure;
use super::{load_config, ProjectArgs};

/// The name of an ad-hoc server without `--name`.
pub(super) const ADHOC: &str = "adhoc";

/// Where the servers come from, and what they are asked for.
#[derive(Debug, Args)]
pub(crate) struct ServerArgs {
    /// Where the configuration is.
    #[command(flatten)]
    pub(crate) project: ProjectArgs,
    /// One server without a project.
    #[command(flatten)]
    pub(crate) adhoc: AdhocArgs,
    /// Ask each server to send its log messages at LEVEL and above, and show them on stderr,
    /// one line each: `SERVER: LEVEL: MESSAGE` (overrides `log_level` of local.toml).
    #[arg(long, value_name = "LEVEL", value_enum)]
    pub(crate) log_level: Option<LogLevel>,
}

/// An MCP log level, as `--log-level` takes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum LogLevel {
    /// `debug`
    Debug,
    /// `info`
    Info,
    /// `notice`
    Notice,
    /// `warning`
    Warning,
    /// `error`
    Error,
    /// `critical`
    Critical,
    /// `alert`
    Alert,
    /// `emergency`
    Emergency,
}

impl From<LogLevel> for LoggingLevel {
    fn from(l: LogLevel) -> Self {
        match l {
            LogLevel::Debug => Self::Debug,
            LogLevel::Info => Self::Info,
            LogLevel::Notice => Self::Notice,
            LogLevel::Warning => Self::Warning,
            LogLevel::Error => Self::Error,
            LogLevel::Critical => Self::Critical,
            LogLevel::Alert => Self::Alert,
            LogLevel::Emergency => Self::Emergency,
        }
    }
}

/// The transport of an ad-hoc `--url` server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum AdhocTransport {
    /// Streamable HTTP (the default).
    #[value(name = "streamable-http", alias = "http")]
    StreamableHttp,
    /// The legacy 2024-11-05 HTTP+SSE pair: URL is the event stream.
    Sse,
}

/// One server given on the command line instead of a project.
#[derive(Args)]
pub(crate) struct AdhocArgs {
    /// An ad-hoc remote server at URL, without a project (Streamable HTTP, or legacy SSE with
    /// `--transport sse`). An ad-hoc stdio server is the command after `--`:
    /// `kaged-mcp tools -- node server.js`.
    #[arg(long, value_name = "URL", help_heading = "Ad-hoc server")]
    pub(crate) url: Option<String>,
    /// A header sent on every request to the `--url` server, `'Name: value'` (repeatable);
    /// its value is treated as a secret and never printed.
    #[arg(
        long = "header",
        value_name = "NAME: VALUE",
        help_heading = "Ad-hoc server"
    )]
    pub(crate) headers: Vec<String>,
    /// The `--url` server's transport [default: streamable-http].
    #[arg(
        long,
        value_name = "TRANSPORT",
        value_enum,
        help_heading = "Ad-hoc server"
    )]
    pub(crate) transport: Option<AdhocTransport>,
    /// The ad-hoc server's key, as tool names say it (`mcp.NAME.tool`) [default: adhoc].
    #[arg(
        long = "name",
        id = "adhoc_name",
        value_name = "NAME",
        help_heading = "Ad-hoc server"
    )]
    pub(crate) name: Option<String>,
    /// An ad-hoc stdio server: every word after the command line's first `--`, the program
    /// and its arguments (taken apart before clap parses the rest, see [`split_command`]).
    #[arg(skip)]
    pub(crate) command: Vec<String>,
}

/// Header values are secrets: `Debug` shows their names only.
impl std::fmt::Debug for AdhocArgs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .headers
            .iter()
            .map(|h| h.split_once(':').map_or("(malformed)", |(n, _)| n.trim()))
            .collect();
        f.debug_struct("AdhocArgs")
            .field(
                "url",
                &self.url.as_deref().map(crate::protocol::uri::redact_uri),
            )
            .field("headers", &names)
            .field("transport", &self.transport)
            .field("name", &self.name)
            .field("command", &self.command)
            .finish()
    }
}

/// The command line split at its first `--`: what clap parses, and an ad-hoc stdio server's
/// program and arguments (empty without `--`). A `--` is never a value clap would need: no
/// option of `kaged-mcp` takes one.
pub(super) fn split_command(
    args: Vec<std::ffi::OsString>,
) -> Result<(Vec<std::ffi::OsString>, Vec<String>), Failure> {
    let Some(at) = args.iter().position(|a| a == "--") else {
        return Ok((args, Vec::new()));
    };
    let mut args = args;
    let command: Vec<std::ffi::OsString> = args.split_off(at).into_iter().skip(1).collect();
    let command = command
        .into_iter()
        .map(|w| {
            w.into_string().map_err(|w| {
                Failure::usage(format!(
                    "the ad-hoc server's command after `--` is not UTF-8: {}",
                    w.to_string_lossy()
                ))
            })
        })
        .collect::<Result<Vec<_>, _>>()?;
    if command.is_empty() {
        return Err(Failure::usage(
            "nothing follows `--`: give the ad-hoc server's program and its arguments",
        ));
    }
    Ok((args, command))
}

impl AdhocArgs {
    /// Whether a server is given on the command line.
    pub(crate) fn given(&self) -> bool {
        self.url.is_some() || !self.command.is_empty()
    }

    /// Whether any ad-hoc option is present (`--name` alone included).
    fn any(&self) -> bool {
        self.given() || !self.headers.is_empty() || self.transport.is_some() || self.name.is_some()
    }
}

impl ServerArgs {
    /// Whether the server is given on the command line instead of a project.
    pub(super) fn is_adhoc(&self) -> bool {
        self.adhoc.given()
    }

    /// The configuration: the project's, or the ad-hoc server's; with `--log-level`, every
    /// server asked for that level. Its warnings are `warning:` lines on stderr.
    pub(super) fn load(&self) -> Result<Config, Failure> {
        let mut config = if self.adhoc.any() {
            let config = adhoc_config(&self.adhoc, &self.project)?;
            let a = &self.adhoc;
            super::hints::set_context(super::hints::Context::adhoc(
                a.url.as_deref(),
                a.transport == Some(AdhocTransport::Sse),
                a.name.as_deref(),
                &a.command,
                self.project.config.as_deref(),
            ));
            config
        } else {
            load_config(&self.project)?
        };
        if let Some(level) = self.log_level {
            for s in &config.project.servers {
                config
                    .local
                    .servers
                    .entry(s.key.clone())
                    .or_default()
                    .log_level = Some(level.into());
            }
        }
        Ok(config)
    }

    /// The usage error of a command that needs a project directory (`lock`), when given an
    /// ad-hoc server.
    pub(super) fn refuse_adhoc(&self, verb: &str) -> Result<(), Failure> {
        if self.adhoc.any() {
            return Err(Failure::usage(format!(
                "`{verb}` needs a project directory (it writes or reads its mcp.lock); an ad-hoc \
                 server (`-- COMMAND`, `--url`) has none: declare it in project.yaml"
            )));
        }
        Ok(())
    }
}

/// `Name: value` of `--header`.
fn header(text: &str) -> Result<(HeaderName, HeaderValue), Failure> {
    let bad = |why: &str| {
        // The value is a secret: only the name is told.
        let name = text.split_once(':').map_or("", |(n, _)| n.trim());
        Failure::usage(format!(
            "--header `{}`: {why}; give `--header 'Name: value'`",
            crate::transport::text::clean(name, 100)
        ))
    };
    let (name, value) = text.split_once(':').ok_or_else(|| bad("no `:`"))?;
    let name =
        HeaderName::from_bytes(name.trim().as_bytes()).map_err(|_| bad("not a header name"))?;
    let mut value = HeaderValue::from_str(value.trim())
        .map_err(|_| bad("the value has a character a header cannot carry"))?;
    value.set_sensitive(true);
    Ok((name, value))
}

/// The configuration of one ad-hoc server: refused together with a project's files, with
/// `--header` or `--transport` but no `--url`, with `--name` alone, or a name that is not a
/// server key.
fn adhoc_config(a: &AdhocArgs, project: &ProjectArgs) -> Result<Config, Failure> {
    if let Some(flag) = [
        project.project.as_ref().map(|_| "--project"),
        project.local.as_ref().map(|_| "--local"),
    ]
    .into_iter()
    .flatten()
    .next()
    {
        return Err(Failure::usage(format!(
            "an ad-hoc server (`-- COMMAND` or `--url`) is used without a project: drop {flag}, \
             or declare the server in project.yaml"
        )));
    }
    if a.url.is_some() && !a.command.is_empty() {
        return Err(Failure::usage(
            "give one ad-hoc server: `--url URL` or `-- COMMAND ARGS…`, not both",
        ));
    }
    if a.url.is_none() && (!a.headers.is_empty() || a.transport.is_some()) {
        return Err(Failure::usage(
            "--header and --transport are for an ad-hoc remote server: add --url URL",
        ));
    }
    if !a.given() {
        return Err(Failure::usage(
            "--name names an ad-hoc server: add `--url URL` or `-- COMMAND ARGS…`",
        ));
    }
    let name = a.name.as_deref().unwrap_or(ADHOC);
    if !is_valid_server_key(name) {
        return Err(Failure::usage(format!(
            "--name `{}` is not a server key: lowercase letters, digits, `-` and `_`, starting \
             with a letter, 2 to 32 characters",
            crate::transport::text::clean(name, 100)
        )));
    }
    let headers = a
        .headers
        .iter()
        .map(|h| header(h))
        .collect::<Result<Vec<_>, _>>()?;
    let server = match &a.url {
        Some(url) => {
            let transport = match a.transport {
                Some(AdhocTransport::Sse) => "sse",
                _ => "streamable-http",
            };
            json!({"transport": transport, "url": url})
        }
        None => json!({"transport": "stdio", "command": a.command}),
    };
    let yaml = json!({"mcp": {name: server}}).to_string();
    let mut sources = config::Sources::new(yaml);
    sources.project.0 = "(ad-hoc server)".into();
    if let Some(path) = &project.config {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Failure::config(vec![format!("{}: cannot read: {e}", path.display())]))?;
        sources.config = Some((path.clone(), text));
    }
    let mut config = sources
        .load()
        .map_err(|errs| Failure::config(errs.iter().map(ToString::to_string).collect()))?;
    if let Some(TransportConfig::StreamableHttp(http) | TransportConfig::Sse(http)) =
        config.project.servers.first_mut().map(|s| &mut s.transport)
    {
        http.headers.extend(headers);
    }
    for w in &config.warnings {
        eprintln!("warning: {w}");
    }
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adhoc(url: Option<&str>, headers: &[&str], command: &[&str]) -> AdhocArgs {
        AdhocArgs {
            url: url.map(str::to_owned),
            headers: headers.iter().map(|h| (*h).to_owned()).collect(),
            transport: None,
            name: None,
            command: command.iter().map(|c| (*c).to_owned()).collect(),
        }
    }

    fn no_project() -> ProjectArgs {
        ProjectArgs {
            project: None,
            local: None,
            config: None,
        }
    }

    #[test]
    fn a_command_after_two_dashes_is_one_stdio_server_named_adhoc() {
        let c = adhoc_config(&adhoc(None, &[], &["node", "s p.js"]), &no_project()).unwrap();
        let s = &c.project.servers[0];
        assert_eq!(s.key, "adhoc");
        assert!(
            matches!(&s.transport, TransportConfig::Stdio(st) if st.command == ["node", "s p.js"])
        );
    }

    #[test]
    fn header_values_are_sensitive_and_never_in_debug_or_errors() {
        let c = adhoc_config(
            &adhoc(
                Some("http://127.0.0.1:1/mcp"),
                &["Authorization: Bearer s3cr3t-token"],
                &[],
            ),
            &no_project(),
        )
        .unwrap();
        let TransportConfig::StreamableHttp(http) = &c.project.servers[0].transport else {
            panic!("not streamable-http");
        };
        assert!(http.headers[0].1.is_sensitive());
        assert!(!format!("{c:?}").contains("s3cr3t"));
        let Err(f) = header("X-Key s3cr3t") else {
            panic!("accepted")
        };
        assert!(!f.message().contains("s3cr3t"), "{}", f.message());
    }

    #[test]
    fn an_adhoc_server_with_a_project_or_without_its_url_is_a_usage_error() {
        let mut p = no_project();
        p.project = Some("proj".into());
        let f = adhoc_config(&adhoc(None, &[], &["node"]), &p).unwrap_err();
        assert!(f.message().contains("--project"), "{}", f.message());
        let f = adhoc_config(&adhoc(None, &["A: b"], &["node"]), &no_project()).unwrap_err();
        assert!(f.message().contains("--url"), "{}", f.message());
        let mut a = adhoc(None, &[], &["node"]);
        a.name = Some("Bad Name".into());
        let f = adhoc_config(&a, &no_project()).unwrap_err();
        assert!(f.message().contains("server key"), "{}", f.message());
    }
}

#[cfg(test)]
mod debug_tests {
    use super::*;

    #[test]
    fn debug_shows_header_names_never_values() {
        let args = AdhocArgs {
            url: Some("https://u:pw@example.com/mcp?key=k1".into()),
            headers: vec![
                "Authorization: Bearer sk-secret-1".into(),
                "X-Api-Key:k2".into(),
            ],
            transport: None,
            name: None,
            command: Vec::new(),
        };
        let shown = format!("{args:?}");
        for secret in ["sk-secret-1", "k2", "pw", "k1"] {
            assert!(!shown.contains(secret), "{shown}");
        }
        assert!(
            shown.contains("Authorization") && shown.contains("X-Api-Key"),
            "{shown}"
        );
    }
}
