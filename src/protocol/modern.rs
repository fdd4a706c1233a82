//! The 2026-07-28 revision ("modern" era): `server/discover`, the per-request `_meta`, the
//! error codes that mark a modern server, and the multi round-trip answer of `tools/call`.
//!
//! A modern request carries, in `params._meta`, the protocol version it speaks, the client's
//! capabilities and the client's identity. The client writes those three entries from bytes
//! serialized once per server: a request without a progress token writes them as one prebuilt
//! object, one with a token writes the token and the three prebuilt values.
//!
//! A `tools/call` may be answered `resultType: "input_required"`: the server needs input
//! (an elicitation, a sampling, the roots) before it can finish, and the client retries the
//! call with the answers ([`CallAnswer`](super::CallAnswer), [`InputRequired`]; the client side is in
//! [`crate::client`]).

use serde::ser::SerializeMap;
use serde::{Deserialize, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::lifecycle::{Implementation, SUPPORTED_PROTOCOL_VERSIONS};
use super::notifications::LoggingLevel;

/// The modern revision this client speaks.
pub const MODERN_PROTOCOL_VERSION: &str = "2026-07-28";

/// The modern revisions this client speaks, newest first.
pub const SUPPORTED_MODERN_VERSIONS: &[&str] = &[MODERN_PROTOCOL_VERSION];

/// `HeaderMismatch`: the HTTP headers do not match the body, or a required one is missing.
pub const HEADER_MISMATCH: i64 = -32020;
/// `MissingRequiredClientCapability`: the request needs a capability the client did not declare.
pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
/// `UnsupportedProtocolVersion`: the server does not speak the request's version; its `data`
/// says which it does (`supported`).
pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;

/// `_meta` key: the request's protocol version.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's identity.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key: the level at or above which the server may send `notifications/message` for
/// this request (absent: none at all). It replaces `logging/setLevel` in 2026-07-28.
pub const META_LOG_LEVEL: &str = "io.modelcontextprotocol/logLevel";
/// `_meta` key (of a result): the server's identity.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";

/// Whether `code` is one of the errors only a modern server answers: such an answer to the
/// era probe means the server is modern (never a reason to fall back to `initialize`).
pub fn is_modern_error(code: i64) -> bool {
    matches!(
        code,
        HEADER_MISMATCH | MISSING_REQUIRED_CLIENT_CAPABILITY | UNSUPPORTED_PROTOCOL_VERSION
    )
}

/// Whether this client speaks the modern revision `version`.
pub fn is_supported_modern_version(version: &str) -> bool {
    SUPPORTED_MODERN_VERSIONS.contains(&version)
}

/// The revision to speak with a server that supports `supported` (from a `DiscoverResult` or
/// an `UnsupportedProtocolVersion` error): the newest modern one both sides speak, else the
/// newest legacy one (reached with `initialize`), else `None`.
pub fn choose_version<S: AsRef<str>>(supported: &[S]) -> Option<&'static str> {
    let has = |v: &str| supported.iter().any(|s| s.as_ref() == v);
    SUPPORTED_MODERN_VERSIONS
        .iter()
        .chain(SUPPORTED_PROTOCOL_VERSIONS.iter().rev())
        .copied()
        .find(|v| has(v))
}

/// The answer to `server/discover`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct DiscoverResult {
    /// The protocol versions the server speaks.
    #[serde(default)]
    pub supported_versions: Vec<String>,
    /// The server's capabilities.
    #[serde(default)]
    pub capabilities: Value,
    /// Guidance for the model, if any.
    #[serde(default)]
    pub instructions: Option<String>,
    /// `resultType`, when sent (`complete`).
    #[serde(default)]
    pub result_type: Option<String>,
    /// `_meta`, with `io.modelcontextprotocol/serverInfo` when the server names itself.
    #[serde(rename = "_meta", default)]
    pub meta: Option<Value>,
}

impl DiscoverResult {
    /// The server's self-description from `_meta`, if it sent one.
    pub fn server_info(&self) -> Option<Implementation> {
        let info = self.meta.as_ref()?.get(META_SERVER_INFO)?;
        serde_json::from_value(info.clone()).ok()
    }
}

/// The `_meta` entries every modern request carries, serialized once per server.
#[derive(Debug)]
pub(crate) struct ModernMeta {
    version: &'static str,
    version_json: Box<RawValue>,
    capabilities: Box<RawValue>,
    client_info: Box<RawValue>,
    /// The operator's log level, when set.
    log_level: Option<LoggingLevel>,
    /// The whole `_meta` object of a request without a progress token: written with one copy.
    object: Box<RawValue>,
}

impl ModernMeta {
    /// The entries for `version`, `capabilities`, `client_info` and, when set, `log_level`.
    pub(crate) fn new(
        version: &'static str,
        capabilities: &Map<String, Value>,
        client_info: &Implementation,
        log_level: Option<LoggingLevel>,
    ) -> Result<Self, serde_json::Error> {
        let mut object = Map::new();
        object.insert(META_PROTOCOL_VERSION.into(), Value::from(version));
        object.insert(
            META_CLIENT_CAPABILITIES.into(),
            Value::Object(capabilities.clone()),
        );
        object.insert(META_CLIENT_INFO.into(), serde_json::to_value(client_info)?);
        if let Some(level) = log_level {
            object.insert(META_LOG_LEVEL.into(), serde_json::to_value(level)?);
        }
        Ok(Self {
            version,
            version_json: serde_json::value::to_raw_value(version)?,
            capabilities: serde_json::value::to_raw_value(capabilities)?,
            client_info: serde_json::value::to_raw_value(client_info)?,
            log_level,
            object: serde_json::value::to_raw_value(&object)?,
        })
    }

    /// The protocol version the entries declare.
    pub(crate) fn version(&self) -> &'static str {
        self.version
    }
}

/// A request's `_meta`: the progress token, if any, and the modern entries, if the session is
/// modern. Serializes as a map of those.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct RequestMeta<'a> {
    pub(crate) progress_token: Option<u64>,
    pub(crate) modern: Option<&'a ModernMeta>,
}

impl RequestMeta<'_> {
    /// Nothing to write: `_meta` is left out.
    pub(crate) fn is_empty(&self) -> bool {
        self.progress_token.is_none() && self.modern.is_none()
    }
}

impl Serialize for RequestMeta<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if let (None, Some(m)) = (self.progress_token, self.modern) {
            // The common case: the prebuilt object, one copy.
            return m.object.serialize(serializer);
        }
        let len = usize::from(self.progress_token.is_some())
            + self
                .modern
                .map_or(0, |m| 3 + usize::from(m.log_level.is_some()));
        let mut map = serializer.serialize_map(Some(len))?;
        if let Some(token) = self.progress_token {
            map.serialize_entry("progressToken", &token)?;
        }
        if let Some(m) = self.modern {
            map.serialize_entry(META_PROTOCOL_VERSION, &*m.version_json)?;
            map.serialize_entry(META_CLIENT_CAPABILITIES, &*m.capabilities)?;
            map.serialize_entry(META_CLIENT_INFO, &*m.client_info)?;
            if let Some(level) = &m.log_level {
                map.serialize_entry(META_LOG_LEVEL, level)?;
            }
        }
        map.end()
    }
}

/// `server/discover` parameters: `_meta` only.
#[derive(Debug, Serialize)]
pub(crate) struct DiscoverParams<'a> {
    #[serde(rename = "_meta")]
    pub(crate) meta: RequestMeta<'a>,
}

/// `resultType: "input_required"`: what the server asks for before it can answer.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct InputRequired {
    /// The requests to answer, by the server's key: `{"method": …, "params": …}` each.
    pub input_requests: Map<String, Value>,
    /// Opaque state to echo, unchanged, on the retry.
    pub request_state: Option<String>,
}

/// A tool parameter the 2026-07-28 Streamable HTTP binding mirrors into a header
/// (`"x-mcp-header": "Region"` on a property of the tool's `inputSchema` sends
/// `Mcp-Param-Region: <value>` with each call).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ParamHeader {
    /// The name after `Mcp-Param-`, as the schema wrote it.
    pub name: String,
    /// The chain of `properties` keys from the schema's root to the parameter.
    pub path: Vec<String>,
}

/// The largest integer a mirrored parameter may hold (JavaScript's safe range).
const MAX_SAFE_INTEGER: u64 = (1 << 53) - 1;

/// The parameters of `schema` to mirror into headers, or why the tool definition is invalid
/// (an annotation that is empty, not an HTTP token, a case-insensitive duplicate, on a type
/// other than `integer`, `string` or `boolean`, or not reachable from the root through
/// `properties` alone): such a tool must not be offered.
pub fn param_headers(schema: &Value) -> Result<Vec<ParamHeader>, String> {
    let mut found = Vec::new();
    walk(schema, true, &mut Vec::new(), &mut found)?;
    let mut seen = std::collections::HashSet::with_capacity(found.len());
    for h in &found {
        if !seen.insert(h.name.to_ascii_lowercase()) {
            return Err(format!(
                "x-mcp-header {:?} is used twice (names are case-insensitive)",
                h.name
            ));
        }
    }
    Ok(found)
}

fn walk(
    node: &Value,
    reachable: bool,
    path: &mut Vec<String>,
    found: &mut Vec<ParamHeader>,
) -> Result<(), String> {
    match node {
        Value::Object(map) => {
            if let Some(name) = map.get("x-mcp-header") {
                let at = if path.is_empty() {
                    "the schema's root".to_owned()
                } else {
                    format!("`{}`", path.join("."))
                };
                if !reachable || path.is_empty() {
                    return Err(format!(
                        "x-mcp-header at {at} is not on a property reached from the root \
                         through `properties` alone"
                    ));
                }
                let Some(name) = name.as_str().filter(|n| is_token(n)) else {
                    return Err(format!(
                        "x-mcp-header {name} at {at} is not a non-empty HTTP token"
                    ));
                };
                match map.get("type").and_then(Value::as_str) {
                    Some("integer" | "string" | "boolean") => {}
                    other => {
                        return Err(format!(
                            "x-mcp-header {name:?} at {at} is on a parameter of type {}, not \
                             integer, string or boolean",
                            other.map_or_else(|| "(none)".to_owned(), str::to_owned)
                        ))
                    }
                }
                found.push(ParamHeader {
                    name: name.to_owned(),
                    path: path.clone(),
                });
            }
            for (key, value) in map {
                match key.as_str() {
                    // Instance values, not schemas.
                    "default" | "examples" | "const" | "enum" | "x-mcp-header" => {}
                    "properties" => {
                        if let Value::Object(props) = value {
                            for (prop, schema) in props {
                                path.push(prop.clone());
                                let r = walk(schema, reachable, path, found);
                                path.pop();
                                r?;
                            }
                        }
                    }
                    _ => walk(value, false, path, found)?,
                }
            }
            Ok(())
        }
        Value::Array(items) => items.iter().try_for_each(|v| walk(v, false, path, found)),
        _ => Ok(()),
    }
}

/// RFC 9110 `token`: one or more `tchar`.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b'!' | b'#'
                        | b'$'
                        | b'%'
                        | b'&'
                        | b'\''
                        | b'*'
                        | b'+'
                        | b'-'
                        | b'.'
                        | b'^'
                        | b'_'
                        | b'`'
                        | b'|'
                        | b'~'
                )
        })
}

/// The value of parameter `header` in a call's `arguments`, as its header's text (before the
/// Base64 sentinel encoding): a string as is, an integer in decimal, a boolean as
/// `true`/`false`; `None` (no header) when it is absent, `null`, or of another type.
pub fn param_header_value(arguments: &Map<String, Value>, header: &ParamHeader) -> Option<String> {
    let (last, parents) = header.path.split_last()?;
    let mut object = arguments;
    for key in parents {
        object = object.get(key)?.as_object()?;
    }
    match object.get(last)? {
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => n
            .as_i64()
            .filter(|i| i.unsigned_abs() <= MAX_SAFE_INTEGER)
            .map(|i| i.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::lifecycle::client_capabilities;

    #[test]
    fn the_log_level_rides_every_modern_request_when_set() {
        let info = Implementation::this_client();
        let caps = client_capabilities(false, true);
        let meta = ModernMeta::new(
            MODERN_PROTOCOL_VERSION,
            &caps,
            &info,
            Some(LoggingLevel::Warning),
        )
        .unwrap();
        for token in [None, Some(3)] {
            let written = serde_json::to_value(RequestMeta {
                progress_token: token,
                modern: Some(&meta),
            })
            .unwrap();
            assert_eq!(written[META_LOG_LEVEL], "warning", "{written}");
            assert_eq!(
                written[META_CLIENT_CAPABILITIES],
                serde_json::json!({"roots": {"listChanged": false}})
            );
        }
        let without = ModernMeta::new(MODERN_PROTOCOL_VERSION, &caps, &info, None).unwrap();
        let written = serde_json::to_value(RequestMeta {
            progress_token: Some(1),
            modern: Some(&without),
        })
        .unwrap();
        assert!(written.get(META_LOG_LEVEL).is_none(), "{written}");
    }

    fn meta() -> ModernMeta {
        let info = Implementation {
            name: "kaged-mcp".into(),
            version: "1".into(),
            title: None,
            extra: Map::new(),
        };
        ModernMeta::new(
            MODERN_PROTOCOL_VERSION,
            &client_capabilities(false, false),
            &info,
            None,
        )
        .unwrap()
    }

    #[test]
    fn request_meta_writes_the_progress_token_and_the_three_entries() {
        let m = meta();
        let both = RequestMeta {
            progress_token: Some(7),
            modern: Some(&m),
        };
        assert_eq!(
            serde_json::to_string(&both).unwrap(),
            r#"{"progressToken":7,"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"kaged-mcp","version":"1"}}"#
        );
        assert!(RequestMeta::default().is_empty());
        // Without a progress token: the prebuilt object, the same entries.
        let alone = RequestMeta {
            progress_token: None,
            modern: Some(&m),
        };
        let alone: Value = serde_json::from_str(&serde_json::to_string(&alone).unwrap()).unwrap();
        let mut with: Value = serde_json::from_str(&serde_json::to_string(&both).unwrap()).unwrap();
        with.as_object_mut().unwrap().remove("progressToken");
        assert_eq!(alone, with);
        assert_eq!(
            serde_json::to_string(&RequestMeta {
                progress_token: Some(1),
                modern: None
            })
            .unwrap(),
            r#"{"progressToken":1}"#
        );
    }

    #[test]
    fn the_newest_common_version_is_chosen_modern_first() {
        assert_eq!(choose_version(&["2026-07-28"]), Some("2026-07-28"));
        assert_eq!(
            choose_version(&["2024-11-05", "2025-06-18", "2026-07-28"]),
            Some("2026-07-28")
        );
        assert_eq!(
            choose_version(&["2025-06-18", "2025-03-26"]),
            Some("2025-06-18")
        );
        assert_eq!(choose_version(&["2027-01-01"]), None);
        assert_eq!(choose_version::<&str>(&[]), None);
    }

    #[test]
    fn only_the_spec_defined_codes_mark_a_modern_server() {
        for code in [-32020, -32021, -32022] {
            assert!(is_modern_error(code));
        }
        for code in [-32601, -32602, -32600, -32000, -32603] {
            assert!(!is_modern_error(code));
        }
    }

    #[test]
    fn annotated_parameters_are_found_on_properties_chains() {
        let schema = serde_json::json!({
            "type": "object",
            "properties": {
                "region": {"type": "string", "x-mcp-header": "Region"},
                "query": {"type": "string"},
                "opts": {"type": "object", "properties": {
                    "n": {"type": "integer", "x-mcp-header": "N"},
                    "flag": {"type": "boolean", "x-mcp-header": "Method",
                             "default": {"x-mcp-header": "not a schema"}}
                }}
            }
        });
        let mut found = param_headers(&schema).unwrap();
        found.sort_by_key(|h| h.path.join("."));
        let names: Vec<&str> = found.iter().map(|h| h.name.as_str()).collect();
        assert_eq!(names, ["Method", "N", "Region"]);
        assert_eq!(found[1].path, ["opts", "n"]);
        let args = serde_json::json!({"region": "us-west1", "opts": {"n": 42, "flag": false}});
        let args = args.as_object().unwrap();
        let values: Vec<Option<String>> =
            found.iter().map(|h| param_header_value(args, h)).collect();
        assert_eq!(
            values,
            [
                Some("false".into()),
                Some("42".into()),
                Some("us-west1".into())
            ]
        );
        let none = serde_json::json!({"region": null});
        assert_eq!(
            param_header_value(none.as_object().unwrap(), &found[2]),
            None
        );
        // Outside JavaScript's safe range (and i64::MIN, whose abs overflows): no header.
        for n in [i64::MIN, -(1 << 53), 1 << 53] {
            let big = serde_json::json!({"opts": {"n": n}});
            assert_eq!(
                param_header_value(big.as_object().unwrap(), &found[1]),
                None
            );
        }
        let edge = serde_json::json!({"opts": {"n": -((1_i64 << 53) - 1)}});
        assert_eq!(
            param_header_value(edge.as_object().unwrap(), &found[1]).as_deref(),
            Some("-9007199254740991")
        );
    }

    #[test]
    fn invalid_annotations_make_the_tool_invalid() {
        let bad = [
            serde_json::json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}),
            serde_json::json!({"properties": {"a": {"type": "string", "x-mcp-header": "A B"}}}),
            serde_json::json!({"properties": {"a": {"type": "string", "x-mcp-header": "A:B"}}}),
            serde_json::json!({"properties": {"a": {"type": "string", "x-mcp-header": "Ä"}}}),
            serde_json::json!({"properties": {"a": {"type": "number", "x-mcp-header": "A"}}}),
            serde_json::json!({"properties": {"a": {"type": "object", "x-mcp-header": "A"}}}),
            serde_json::json!({"properties": {"a": {"type": "array", "x-mcp-header": "A"}}}),
            serde_json::json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"},
                                              "b": {"type": "string", "x-mcp-header": "x"}}}),
            serde_json::json!({"properties": {"a": {"type": "array",
                               "items": {"type": "string", "x-mcp-header": "A"}}}}),
            serde_json::json!({"properties": {"a": {"oneOf": [
                               {"type": "string", "x-mcp-header": "A"}]}}}),
            serde_json::json!({"$defs": {"d": {"type": "string", "x-mcp-header": "A"}}}),
        ];
        for schema in bad {
            assert!(param_headers(&schema).is_err(), "{schema}");
        }
        assert!(param_headers(&serde_json::json!({"type": "object"}))
            .unwrap()
            .is_empty());
    }

    #[test]
    fn discover_results_name_the_server() {
        let d: DiscoverResult = serde_json::from_str(
            r#"{"resultType":"complete","supportedVersions":["2026-07-28"],"capabilities":{"tools":{}},
               "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"rmcp","version":"3.11.0"}},"ttlMs":0}"#,
        )
        .unwrap();
        assert_eq!(d.supported_versions, ["2026-07-28"]);
        assert_eq!(d.server_info().unwrap().name, "rmcp");
    }
}
