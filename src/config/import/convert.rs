//! One foreign server entry into a [`PlannedServer`]: its transport, its command or URL, and
//! its secrets moved out (see the [module docs](super) for the rules).

use std::collections::BTreeMap;

use base64::Engine as _;
use http::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::config::secret::{Secret, SecretRef};

use super::credentials::{self, bounded, Found};
use super::formats::Foreign;
use super::names::{is_credential_header, is_plain_env, references, secret_segment};
use super::{MovedSecret, PlannedAuth, PlannedServer, PlannedTransport, PlannedValue};

/// The keys of an entry that are read.
const READ_KEYS: &[&str] = &[
    "type",
    "transport",
    "command",
    "args",
    "env",
    "url",
    "headers",
    "tool_timeout_sec",
    "startup_timeout_sec",
];

/// Codex's timeouts, in seconds, and the `[mcp.<key>]` keys of `local.toml` they become.
const TIMEOUTS: &[(&str, &str)] = &[
    ("tool_timeout_sec", "timeout_ms"),
    ("startup_timeout_sec", "probe_timeout_ms"),
];

/// The longest timeout carried over, in seconds (a day, as config.toml's own timeouts).
const MAX_TIMEOUT_SEC: f64 = 24.0 * 3600.0;

/// Headers the transports set themselves (`src/transport/http/config.rs`), left out of an
/// import; `mcp-param-*` too.
const TRANSPORT_HEADERS: &[&str] = &[
    "host",
    "content-length",
    "transfer-encoding",
    "connection",
    "content-type",
    "accept",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
    "mcp-method",
    "mcp-name",
];

/// The server `foreign` as `key`, or why it cannot be imported. `inputs` are VS Code's input
/// descriptions by id.
pub(super) fn server(
    foreign: &Foreign,
    key: &str,
    inputs: &BTreeMap<String, String>,
) -> Result<PlannedServer, String> {
    let Value::Object(entry) = &foreign.entry else {
        return Err(match &foreign.entry {
            Value::String(s) if s.starts_with("a TOML") => format!("the entry is {s}, not a table"),
            _ => "the entry is not an object".to_owned(),
        });
    };
    let mut out = PlannedServer {
        key: key.to_owned(),
        name: foreign.name.clone(),
        transport: PlannedTransport::Stdio {
            command: Vec::new(),
            env: Vec::new(),
        },
        secrets: Vec::new(),
        notes: Vec::new(),
        disabled: Vec::new(),
        timeout_ms: None,
        probe_timeout_ms: None,
    };
    let ignored: Vec<&str> = entry
        .keys()
        .map(String::as_str)
        .filter(|k| !READ_KEYS.contains(k))
        .collect();
    if !ignored.is_empty() {
        out.notes
            .push(format!("not carried over: {}", ignored.join(", ")));
    }
    let kind = entry
        .get("type")
        .or_else(|| entry.get("transport"))
        .map(|t| t.as_str().unwrap_or("?"));
    let has_command = entry.contains_key("command");
    let sse = match kind {
        Some("stdio") => None,
        None if has_command => None,
        Some("http" | "streamable-http" | "streamableHttp" | "streamable_http") => Some(false),
        Some("sse") => Some(true),
        None if entry.contains_key("url") => Some(guess_sse(entry, &mut out)),
        None => return Err("neither `command` nor `url`".to_owned()),
        Some(other) => {
            return Err(format!(
                "unknown type `{}`; expected stdio, http, streamable-http or sse",
                bounded(other)
            ))
        }
    };
    out.transport = match sse {
        None => stdio(entry, key, inputs, &mut out)?,
        Some(sse) => http(entry, sse, key, inputs, &mut out)?,
    };
    timeouts(entry, &mut out);
    Ok(out)
}

/// Codex's `tool_timeout_sec` and `startup_timeout_sec` as the server's `timeout_ms` and
/// `probe_timeout_ms`, each said in a note.
fn timeouts(entry: &Map<String, Value>, out: &mut PlannedServer) {
    for &(name, target) in TIMEOUTS {
        let Some(v) = entry.get(name) else { continue };
        let seconds = v
            .as_f64()
            .filter(|s| s.is_finite() && *s > 0.0 && *s <= MAX_TIMEOUT_SEC);
        let Some(ms) = seconds.map(|s| ((s * 1000.0).round() as u64).max(1)) else {
            out.notes.push(format!(
                "`{name}` not carried over: not a number of seconds above 0 and at most \
                 {MAX_TIMEOUT_SEC}"
            ));
            continue;
        };
        let field = if target == "timeout_ms" {
            &mut out.timeout_ms
        } else {
            &mut out.probe_timeout_ms
        };
        *field = Some(ms);
        out.notes.push(format!(
            "`{name} = {v}` carried over as `{target} = {ms}` under [mcp.{}] in local.toml{}",
            out.key,
            if target == "probe_timeout_ms" {
                " (config.toml's `startup_timeout_ms` still bounds the whole start)"
            } else {
                ""
            }
        ));
    }
}

/// A `url` without a `type`: Streamable HTTP, unless the path ends in `/sse`.
fn guess_sse(entry: &Map<String, Value>, out: &mut PlannedServer) -> bool {
    let sse = entry
        .get("url")
        .and_then(Value::as_str)
        .and_then(|u| url::Url::parse(u).ok())
        .is_some_and(|u| u.path().trim_end_matches('/').ends_with("/sse"));
    out.notes.push(format!(
        "no `type`: taken as {} {}",
        if sse { "sse" } else { "streamable-http" },
        if sse {
            "from the URL's /sse path"
        } else {
            "(the current transport)"
        }
    ));
    sse
}

fn stdio(
    entry: &Map<String, Value>,
    key: &str,
    inputs: &BTreeMap<String, String>,
    out: &mut PlannedServer,
) -> Result<PlannedTransport, String> {
    let program = match entry.get("command") {
        Some(Value::String(s)) if !s.trim().is_empty() => s.clone(),
        Some(Value::String(_)) | None => return Err("no `command`".to_owned()),
        Some(_) => return Err("`command` is not a string".to_owned()),
    };
    let mut command = vec![program];
    match entry.get("args") {
        None | Some(Value::Null) => {}
        Some(Value::Array(args)) => {
            for (i, a) in args.iter().enumerate() {
                let arg = scalar(a).ok_or("`args` holds something other than strings")?;
                if arg.is_empty() {
                    // project.yaml's `command` takes no empty string: planned, the server
                    // would make the whole project fail to load.
                    return Err(format!(
                        "`args[{i}]` is empty, and a project.yaml `command` takes no empty \
                         argument: add the server by hand"
                    ));
                }
                command.push(arg);
            }
        }
        Some(_) => return Err("`args` is not a list".to_owned()),
    }
    let refs: Vec<String> = command.iter().flat_map(|a| references(a)).collect();
    if !refs.is_empty() {
        out.notes.push(format!(
            "the command has {}, which kaged-mcp does not expand: edit it in project.yaml",
            refs.iter()
                .map(|r| format!("`${{{r}}}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    let mut env = Vec::new();
    for (name, value) in string_map(entry.get("env"), "env")? {
        if name.is_empty() || name.contains(['=', '\0']) {
            out.notes.push(format!(
                "env `{}` left out: not a variable name",
                bounded(&name)
            ));
            continue;
        }
        if value.contains('\0') {
            out.notes.push(format!(
                "env `{}` left out: its value has a NUL byte",
                bounded(&name)
            ));
            continue;
        }
        let refs = references(&value);
        let plain = is_plain_env(&name)
            && refs.is_empty()
            && !value.chars().any(char::is_control)
            && credentials::in_url(&value).is_empty();
        if plain {
            env.push((name, PlannedValue::Plain(value)));
            continue;
        }
        let secret_ref = secret_ref(key, &name, out);
        out.secrets.push(moved(
            format!("env {name}"),
            &secret_ref,
            &value,
            refs,
            inputs,
            true,
        ));
        env.push((name, PlannedValue::Secret(secret_ref)));
    }
    arg_credentials(&mut command, &mut env, key, inputs, out);
    Ok(PlannedTransport::Stdio { command, env })
}

/// Programs that pass `-e NAME` (without a value) on from their own environment.
const CONTAINER_RUNNERS: &[&str] = &["docker", "podman", "nerdctl"];

/// Moves the credentials of `command`'s arguments to the server's secrets. The value of
/// `-e NAME=VALUE` given to a container runner becomes `-e NAME` and an `env` secret, which
/// the runner passes on; any other is replaced by `<its secret_ref>`, and the server is
/// imported disabled with what to move.
fn arg_credentials(
    command: &mut [String],
    env: &mut Vec<(String, PlannedValue)>,
    key: &str,
    inputs: &BTreeMap<String, String>,
    out: &mut PlannedServer,
) {
    let program = command[0].rsplit('/').next().unwrap_or_default();
    let runner = CONTAINER_RUNNERS.contains(&program);
    let mut edits: Vec<(usize, std::ops::Range<usize>, String)> = Vec::new();
    for (i, f) in credentials::in_args(&command[1..]) {
        let arg = i + 1;
        let value = &command[arg][f.span.clone()];
        let free = |name: &String| !env.iter().any(|(n, _)| n == name);
        if let Some(name) = f.env.as_ref().filter(|n| runner && free(n)) {
            let r = secret_ref(key, name, out);
            let what = format!("`-e {name}` in args[{i}]");
            out.secrets
                .push(moved(what, &r, value, Vec::new(), inputs, true));
            edits.push((arg, f.span.start - 1..f.span.end, String::new()));
            env.push((name.clone(), PlannedValue::Secret(r)));
            continue;
        }
        let r = secret_ref(key, &format!("arg{i}_{}", f.leaf), out);
        let what = format!("{} in args[{i}]", f.what);
        out.secrets
            .push(moved(what, &r, value, Vec::new(), inputs, false));
        let marker = format!("<{r}>");
        out.disabled.push(format!(
            "args[{i}] has {}: project.yaml has `{marker}` in its place",
            f.what
        ));
        edits.push((arg, f.span, marker));
    }
    // Later spans first, so that the earlier ones still point at their bytes.
    for (arg, span, text) in edits.into_iter().rev() {
        command[arg].replace_range(span, &text);
    }
    env.sort_by(|a, b| a.0.cmp(&b.0));
}

fn http(
    entry: &Map<String, Value>,
    sse: bool,
    key: &str,
    inputs: &BTreeMap<String, String>,
    out: &mut PlannedServer,
) -> Result<PlannedTransport, String> {
    let Some(Value::String(url)) = entry.get("url") else {
        return Err("no `url`".to_owned());
    };
    check_url(url)?;
    let mut headers = Vec::new();
    let mut auth = None;
    for (name, value) in string_map(entry.get("headers"), "headers")? {
        let shown = bounded(&name);
        if HeaderName::from_bytes(name.as_bytes()).is_err() {
            out.notes.push(format!(
                "header `{shown}` left out: not a valid header name"
            ));
            continue;
        }
        let lower = name.to_ascii_lowercase();
        if TRANSPORT_HEADERS.contains(&lower.as_str()) || lower.starts_with("mcp-param-") {
            out.notes
                .push(format!("header `{shown}` left out: the transport sets it"));
            continue;
        }
        let refs = references(&value);
        if refs.is_empty() && HeaderValue::from_str(&value).is_err() {
            out.notes.push(format!(
                "header `{shown}` left out: not a valid header value"
            ));
            continue;
        }
        if !is_credential_header(&name) && refs.is_empty() {
            headers.push((name, value));
            continue;
        }
        let secret_ref = secret_ref(key, &lower, out);
        let bearer = name.eq_ignore_ascii_case("authorization")
            && value
                .get(..7)
                .is_some_and(|p| p.eq_ignore_ascii_case("bearer "));
        let secret = if bearer {
            value[7..].trim()
        } else {
            value.as_str()
        };
        let first = auth.is_none();
        if first {
            auth = Some(PlannedAuth {
                header_name: (!bearer).then(|| name.clone()),
                secret_ref: secret_ref.clone(),
            });
        } else {
            // Left out and enabled, the server would start without it and fail its calls.
            out.notes.push(format!(
                "header `{shown}` left out: a server carries one credential header (`auth:`)"
            ));
            out.disabled.push(format!(
                "header `{shown}` is a second credential header, which kaged-mcp does not send \
                 (a server sends one, its `auth:`): its value is in local.toml as `{secret_ref}`"
            ));
        }
        out.secrets.push(moved(
            format!("header {name}"),
            &secret_ref,
            secret,
            refs,
            inputs,
            first,
        ));
    }
    let url = url_credentials(url, &mut auth, key, inputs, out);
    Ok(PlannedTransport::Http {
        sse,
        url,
        headers,
        auth,
    })
}

/// `url` with its credentials moved to the server's secrets: its user info becomes the
/// `auth:` header `Authorization: Basic …` (HTTP's meaning of it) when the server has no other
/// credential header; a credential among its query or fragment parameters, which kaged-mcp
/// cannot send from a secret, is replaced by `<its secret_ref>`, and the server is imported
/// disabled with what to move.
fn url_credentials(
    url: &str,
    auth: &mut Option<PlannedAuth>,
    key: &str,
    inputs: &BTreeMap<String, String>,
    out: &mut PlannedServer,
) -> String {
    let mut url = url.to_owned();
    let user = credentials::user_info(&url);
    let params: Vec<Found> = credentials::in_url(&url)
        .into_iter()
        .filter(|f| user.as_ref().is_none_or(|u| f.span.start > u.end))
        .collect();
    let mut edits = Vec::new();
    for f in params {
        let r = secret_ref(key, &format!("url_{}", f.leaf), out);
        let what = format!("{} of the URL", f.what);
        let value = &url[f.span.clone()];
        out.secrets
            .push(moved(what, &r, value, Vec::new(), inputs, false));
        let marker = format!("<{r}>");
        out.disabled.push(format!(
            "the URL has {}: project.yaml has `{marker}` in its place",
            f.what
        ));
        edits.push((f.span, marker));
    }
    for (span, text) in edits.into_iter().rev() {
        url.replace_range(span, &text);
    }
    let Some(user) = user else {
        return url;
    };
    let info = url[user.clone()].to_owned();
    url.replace_range(user.start..=user.end, "");
    let (name, password) = info.split_once(':').unwrap_or((&info, ""));
    let basic = format!(
        "Basic {}",
        base64::engine::general_purpose::STANDARD.encode(format!(
            "{}:{}",
            credentials::percent_decoded(name),
            credentials::percent_decoded(password)
        ))
    );
    let r = secret_ref(key, "authorization", out);
    let first = auth.is_none();
    if first {
        *auth = Some(PlannedAuth {
            header_name: Some("Authorization".to_owned()),
            secret_ref: r.clone(),
        });
        out.notes.push(format!(
            "the URL's user info became `auth:` header Authorization (HTTP Basic), its value in \
             local.toml as `{r}`"
        ));
    } else {
        out.disabled.push(format!(
            "the URL's user info (an HTTP Basic credential) is left out of project.yaml, its \
             value kept in local.toml as `{r}`: the server's `auth:` already sends another \
             credential header"
        ));
    }
    out.secrets.push(moved(
        "the user info of the URL".to_owned(),
        &r,
        &basic,
        Vec::new(),
        inputs,
        first,
    ));
    url
}

/// A URL kaged-mcp can use: absolute, `http` or `https`, with a host, and no `${…}`.
fn check_url(url: &str) -> Result<(), String> {
    let shown = shown_url(url);
    if !references(url).is_empty() {
        return Err(format!(
            "the URL `{shown}` has a `${{…}}` reference, which kaged-mcp does not expand"
        ));
    }
    let parsed =
        url::Url::parse(url).map_err(|e| format!("`{shown}` is not an absolute URL: {e}"))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(format!("`{shown}` is not an http or https URL with a host"));
    }
    Ok(())
}

/// `url` for a message: without its user info, query and fragment, which may hold a
/// credential ([`redact_uri`](crate::protocol::uri::redact_uri), then `#…`), bounded.
fn shown_url(url: &str) -> String {
    let redacted = crate::protocol::uri::redact_uri(url);
    match redacted.split_once('#') {
        Some((head, _)) => bounded(&format!("{head}#…")),
        None => bounded(&redacted),
    }
}

/// `import.<key>.<name>`, made unique among the server's secrets.
fn secret_ref(key: &str, name: &str, out: &PlannedServer) -> SecretRef {
    let base = secret_segment(name);
    let mut leaf = base.clone();
    let mut n = 2;
    while out
        .secrets
        .iter()
        .any(|s| s.secret_ref.as_str().rsplit('.').next() == Some(leaf.as_str()))
    {
        leaf = format!("{base}_{n}");
        n += 1;
    }
    SecretRef::parse(&format!("import.{key}.{leaf}"))
        .unwrap_or_else(|_| unreachable!("server keys and secret segments are dotted-path safe"))
}

/// The secret `value` of `what`, or (with `${…}` references) the placeholder naming them.
fn moved(
    what: String,
    secret_ref: &SecretRef,
    value: &str,
    refs: Vec<String>,
    inputs: &BTreeMap<String, String>,
    used: bool,
) -> MovedSecret {
    let references: Vec<String> = refs
        .into_iter()
        .map(
            |r| match r.strip_prefix("input:").and_then(|id| inputs.get(id)) {
                Some(desc) if !desc.is_empty() => format!("${{{r}}} ({})", bounded(desc)),
                _ => format!("${{{r}}}"),
            },
        )
        .collect();
    MovedSecret {
        what: bounded(&what),
        secret_ref: secret_ref.clone(),
        value: references.is_empty().then(|| Secret::new(value)),
        references,
        used,
    }
}

/// The string values of an object (`env`, `headers`); numbers and booleans as their text.
fn string_map(v: Option<&Value>, key: &str) -> Result<Vec<(String, String)>, String> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(map)) => map
            .iter()
            .map(|(k, v)| {
                scalar(v)
                    .map(|s| (k.clone(), s))
                    .ok_or_else(|| format!("`{key}.{}` is not a string", bounded(k)))
            })
            .collect(),
        Some(_) => Err(format!("`{key}` is not an object")),
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}
