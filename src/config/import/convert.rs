//! One foreign server entry into a [`PlannedServer`]: its transport, its command or URL, and
//! its secrets moved out (see the [module docs](super) for the rules).

use std::collections::BTreeMap;

use http::{HeaderName, HeaderValue};
use serde_json::{Map, Value};

use crate::config::secret::{Secret, SecretRef};

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
];

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

/// Query parameters that carry a credential in a URL.
const SECRET_PARAMS: &[&str] = &[
    "key",
    "apikey",
    "api_key",
    "api-key",
    "token",
    "access_token",
    "auth",
    "secret",
    "password",
    "sig",
    "signature",
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
                printable(other)
            ))
        }
    };
    out.transport = match sse {
        None => stdio(entry, key, inputs, &mut out)?,
        Some(sse) => http(entry, sse, key, inputs, &mut out)?,
    };
    Ok(out)
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
    if let Some(flag) = secret_flag(&command) {
        out.notes.push(format!(
            "the argument after `{flag}` may be a secret, and it is in project.yaml's `command`: \
             pass it in `env` if the server can read it from there"
        ));
    }
    let mut env = Vec::new();
    for (name, value) in string_map(entry.get("env"), "env")? {
        if name.is_empty() || name.contains(['=', '\0']) {
            out.notes.push(format!(
                "env `{}` left out: not a variable name",
                printable(&name)
            ));
            continue;
        }
        if value.contains('\0') {
            out.notes.push(format!(
                "env `{}` left out: its value has a NUL byte",
                printable(&name)
            ));
            continue;
        }
        let refs = references(&value);
        let plain = is_plain_env(&name) && refs.is_empty() && !value.chars().any(char::is_control);
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
    Ok(PlannedTransport::Stdio { command, env })
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
        let shown = printable(&name);
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
            out.notes.push(format!(
                "header `{shown}` left out: a server carries one credential header (`auth:`); \
                 its value is kept in local.toml as `{secret_ref}` for reference"
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
    Ok(PlannedTransport::Http {
        sse,
        url: url.clone(),
        headers,
        auth,
    })
}

/// A URL kaged-mcp can use and that carries no credential (user info or a key in the query).
fn check_url(url: &str) -> Result<(), String> {
    let shown = crate::protocol::uri::redact_uri(url);
    if !references(url).is_empty() {
        return Err(format!(
            "the URL `{}` has a `${{…}}` reference, which kaged-mcp does not expand",
            printable(&shown)
        ));
    }
    let parsed = url::Url::parse(url)
        .map_err(|e| format!("`{}` is not an absolute URL: {e}", printable(&shown)))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host().is_none() {
        return Err(format!(
            "`{}` is not an http or https URL with a host",
            printable(&shown)
        ));
    }
    let secret_param = parsed
        .query_pairs()
        .any(|(k, _)| SECRET_PARAMS.contains(&k.to_ascii_lowercase().as_str()));
    if parsed.password().is_some() || secret_param {
        return Err(format!(
            "the URL `{}` carries a credential (user info or a key in the query), which would \
             land in project.yaml: declare this server by hand with an `auth:` block",
            printable(&shown)
        ));
    }
    Ok(())
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
                Some(desc) if !desc.is_empty() => format!("${{{r}}} ({})", printable(desc)),
                _ => format!("${{{r}}}"),
            },
        )
        .collect();
    MovedSecret {
        what: printable(&what),
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
                    .ok_or_else(|| format!("`{key}.{}` is not a string", printable(k)))
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

/// The first flag of `command` that names a secret (`--api-key`, `--token=…`) and is
/// followed by, or holds, a value.
fn secret_flag(command: &[String]) -> Option<String> {
    command.iter().enumerate().skip(1).find_map(|(i, a)| {
        let flag = a.strip_prefix('-')?;
        let (name, inline) = match flag.split_once('=') {
            Some((n, _)) => (n, true),
            None => (flag, false),
        };
        let lower = name.to_ascii_lowercase();
        let secretish = ["key", "token", "secret", "password"]
            .iter()
            .any(|w| lower.contains(w))
            || lower.split(['-', '_']).any(|p| p == "pat");
        (secretish && (inline || i + 1 < command.len())).then(|| printable(&format!("-{name}")))
    })
}

/// `s` for a message: control characters as `?`, at most 200 characters.
pub(super) fn printable(s: &str) -> String {
    let mut out: String = s
        .chars()
        .take(200)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if s.chars().count() > 200 {
        out.push('…');
    }
    out
}
