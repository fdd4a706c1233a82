//! Schema validation as a layer: a call's arguments are checked against its tool's
//! `inputSchema` before they leave, and a structured result against the tool's `outputSchema`
//! when it comes back (the MCP specification says a client SHOULD do the latter).
//!
//! - **A layer of the layers crate.** The stack's [`kaged_mcp_layers::validate`] layer knows no
//!   schema: a [`ToolCall`](crate::client::ToolCall) carries its tool's compiled
//!   [`ToolSchemas`] and implements the layer's request trait with
//!   [`ToolSchemas::check_call`] (arguments now, a [`ResultCheck`] for the result).
//! - **Compiled once.** [`ToolSchemas::compile`] builds a tool's validators when its server's
//!   catalog is built or replaced (start, `list_changed`, a `ttlMs` re-read), never per call;
//!   the registry hands them to the stack on each call
//!   ([`ToolCall::schemas`](crate::client::ToolCall::schemas)), so the validators a call meets
//!   are those of the catalog that resolved its name, swapped atomically with it.
//! - **Drafts.** Draft 2020-12 unless the schema's `$schema` names draft 7 or 2019-09 (or 4,
//!   6). No `$ref` is ever fetched: the `jsonschema` crate is built without HTTP or file
//!   retrieval, so a schema that needs one does not compile. A schema that does not compile
//!   leaves that side of the tool unvalidated, with one WARN naming the server, the tool and
//!   the reason; [`ToolSchemas::unvalidated`] says so to `kaged-mcp tools` and `check`.
//! - **Defaults are not demanded.** A property the input schema lists as `required` but that
//!   declares a `default` may be left out: the server fills it in (zod's `.default()` lists
//!   such fields as required, and the servers built on it accept them missing).
//! - **Arguments.** A call whose arguments break the input schema is not sent: it fails with
//!   a [`SchemaViolation`] (every failure up to [`MAX_VIOLATIONS`]: JSON pointer, keyword,
//!   short message), which the registry turns into
//!   [`Error::InvalidArguments`](crate::Error::InvalidArguments): a caller's error, never
//!   retried, to hand back to the agent.
//! - **Results.** A result whose `structuredContent` breaks the output schema, or that has
//!   none although the tool declares one, fails with
//!   [`Error::InvalidResult`](crate::Error::InvalidResult), unless it is a tool error
//!   (`isError`). The check sees the whole result: the layer sits inside the truncation.
//! - **The knob.** `local.toml` `[mcp.<key>] validate = "both" | "arguments" | "results" |
//!   "off"` ([`Validation`], default `both`).
//!
//! Without the crate's `validate` feature no validator is compiled: every tool is left
//! unvalidated, and says why.

use std::fmt;
use std::sync::Arc;

use kaged_mcp_layers::validate::CheckResponse;
use serde_json::{Map, Value};
use tower::BoxError;

pub use crate::config::Validation;
use crate::protocol::{ToolInfo, ToolResult};

/// At most this many violations are reported for one call (the rest are counted).
pub const MAX_VIOLATIONS: usize = 16;
/// A violation's message is cut to this many bytes (it may quote the offending value).
#[cfg(feature = "validate")]
const MAX_MESSAGE: usize = 200;

/// One place where a value breaks its schema.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Violation {
    /// The JSON pointer of the offending value within the arguments or the
    /// `structuredContent` (`""` for the whole value, `/a`, `/items/0`).
    pub pointer: String,
    /// The schema keyword that failed (`type`, `required`, `enum`, `minimum`, …).
    pub keyword: String,
    /// A short human message (at most 200 bytes). It quotes the offending value for the
    /// arguments (the caller's own), never for a result (the server's).
    pub message: String,
}

impl fmt::Display for Violation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let at = if self.pointer.is_empty() {
            "(root)"
        } else {
            &self.pointer
        };
        write!(f, "{at}: {}: {}", self.keyword, self.message)
    }
}

/// Which side of a call broke its tool's schema.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Side {
    /// The arguments, against `inputSchema`: the call was not sent.
    Arguments,
    /// The result's `structuredContent`, against `outputSchema`.
    Result,
}

/// A call whose arguments or result broke its tool's schema: the error the validation layer
/// returns (the registry turns it into [`Error::InvalidArguments`](crate::Error::InvalidArguments)
/// or [`Error::InvalidResult`](crate::Error::InvalidResult)).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct SchemaViolation {
    /// The server.
    pub server: Arc<str>,
    /// The tool, as the server knows it.
    pub tool: Arc<str>,
    /// Arguments or result.
    pub side: Side,
    /// The violations, at most [`MAX_VIOLATIONS`].
    pub violations: Vec<Violation>,
    /// How many more there were.
    pub more: usize,
}

impl fmt::Display for SchemaViolation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.side {
            Side::Arguments => "the arguments break the tool's inputSchema (not sent)",
            Side::Result => "the result breaks the tool's outputSchema",
        };
        write!(
            f,
            "server `{}`: tool `{}`: {what}: ",
            self.server, self.tool
        )?;
        write_violations(f, &self.violations, self.more)
    }
}

impl std::error::Error for SchemaViolation {}

/// `v1; v2; … (and N more)`.
pub(crate) fn write_violations(
    f: &mut fmt::Formatter<'_>,
    violations: &[Violation],
    more: usize,
) -> fmt::Result {
    for (i, v) in violations.iter().enumerate() {
        if i > 0 {
            f.write_str("; ")?;
        }
        write!(f, "{v}")?;
    }
    if more > 0 {
        write!(f, " (and {more} more)")?;
    }
    Ok(())
}

/// The violations found in one value, or none.
type Checked = Result<(), (Vec<Violation>, usize)>;

/// The compiled schemas of one tool: what the validation layer checks its calls against.
pub struct ToolSchemas {
    /// The server whose tool this is (named in a [`SchemaViolation`]).
    server: Arc<str>,
    input: Option<Compiled>,
    output: Option<Compiled>,
    /// The tool declares an `outputSchema` (compiled or not).
    output_declared: bool,
    unvalidated: Vec<String>,
}

impl fmt::Debug for ToolSchemas {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolSchemas")
            .field("input", &self.input.is_some())
            .field("output", &self.output.is_some())
            .field("output_declared", &self.output_declared)
            .field("unvalidated", &self.unvalidated)
            .finish()
    }
}

impl ToolSchemas {
    /// Compiles what `validation` checks of `tool` (its input schema, its output schema, both
    /// or neither). A schema that does not compile is left out, with one WARN naming `server`,
    /// the tool and the reason, which [`unvalidated`](Self::unvalidated) keeps.
    pub fn compile(server: &str, tool: &ToolInfo, validation: Validation) -> Self {
        let mut unvalidated = Vec::new();
        let mut build = |side: &str, schema: &Value| match Compiled::new(schema) {
            Ok(c) => Some(c),
            Err(why) => {
                tracing::warn!(server = %server, tool = %tool.name.escape_debug(), schema = side, reason = %why, "schema not compiled; the tool is not validated on that side");
                unvalidated.push(format!("{side}: {why}"));
                None
            }
        };
        let input = if validation.arguments() {
            build(
                "inputSchema",
                &without_defaulted_required(&tool.input_schema),
            )
        } else {
            None
        };
        let output = match &tool.output_schema {
            Some(schema) if validation.results() => build("outputSchema", schema),
            _ => None,
        };
        Self {
            server: Arc::from(server),
            input,
            output,
            output_declared: tool.output_schema.is_some(),
            unvalidated,
        }
    }

    /// The tool declares an `outputSchema` (compiled or not).
    pub fn declares_output(&self) -> bool {
        self.output_declared
    }

    /// Why a side of the tool is not validated (`"inputSchema: <reason>"`), if one is not.
    pub fn unvalidated(&self) -> &[String] {
        &self.unvalidated
    }

    /// Checks `arguments` (none counts as `{}`) against the input schema, if compiled.
    ///
    /// The arguments are moved into a JSON value and back, not cloned: only an `Arc` shared
    /// with another owner is copied first.
    pub fn check_arguments(&self, arguments: &mut Option<Arc<Map<String, Value>>>) -> Checked {
        let Some(input) = &self.input else {
            return Ok(());
        };
        match arguments {
            None => input.check(&Value::Object(Map::new()), Quote::Values),
            Some(shared) => {
                let map = Arc::make_mut(shared);
                let value = Value::Object(std::mem::take(map));
                let checked = input.check(&value, Quote::Values);
                if let Value::Object(back) = value {
                    *map = back;
                }
                checked
            }
        }
    }

    /// Checks a result against the output schema, if compiled: its `structuredContent` must
    /// be there and conform. A tool error (`isError`) is not checked.
    pub fn check_result(&self, result: &ToolResult) -> Checked {
        let Some(output) = &self.output else {
            return Ok(());
        };
        if result.is_error {
            return Ok(());
        }
        match &result.structured_content {
            Some(value) => output.check(value, Quote::Not),
            None => Err((
                vec![Violation {
                    pointer: String::new(),
                    keyword: "structuredContent".into(),
                    message: "the result has no structuredContent, though the tool declares an \
                              outputSchema (the MCP specification requires it then)"
                        .into(),
                }],
                0,
            )),
        }
    }
}

/// `schema` with every property that declares a `default` taken out of its object's `required`
/// list, at any depth: servers built on zod list `.default()` fields as required (the
/// `@playwright/mcp` tools do) and accept them missing, filling in the default; the client
/// does not demand locally what the server itself does not. Borrowed when nothing changes.
fn without_defaulted_required(schema: &Value) -> std::borrow::Cow<'_, Value> {
    fn relax(value: &mut Value) -> bool {
        let mut changed = false;
        match value {
            Value::Object(map) => {
                let defaulted: Vec<String> = match map.get("properties") {
                    Some(Value::Object(props)) => props
                        .iter()
                        .filter(|(_, p)| p.get("default").is_some())
                        .map(|(name, _)| name.clone())
                        .collect(),
                    _ => Vec::new(),
                };
                if let Some(Value::Array(required)) = map.get_mut("required") {
                    let before = required.len();
                    required
                        .retain(|r| !r.as_str().is_some_and(|n| defaulted.iter().any(|d| d == n)));
                    changed |= required.len() != before;
                }
                // Into subschemas only: a `default`, `const`, `enum` or `examples` value is
                // data, and stays as the tool listed it.
                for (key, v) in map.iter_mut() {
                    if !matches!(key.as_str(), "default" | "const" | "enum" | "examples") {
                        changed |= relax(v);
                    }
                }
            }
            Value::Array(items) => {
                for v in items {
                    changed |= relax(v);
                }
            }
            _ => {}
        }
        changed
    }
    let mut relaxed = schema.clone();
    if relax(&mut relaxed) {
        std::borrow::Cow::Owned(relaxed)
    } else {
        std::borrow::Cow::Borrowed(schema)
    }
}

/// Whether a violation's message may quote the offending value: the caller's own arguments
/// yes (the agent sees what to fix); a server's result no (it may hold what the server should
/// not have sent, and errors reach logs).
#[derive(Clone, Copy)]
enum Quote {
    Values,
    Not,
}

/// One compiled schema.
struct Compiled {
    #[cfg(feature = "validate")]
    validator: jsonschema::Validator,
}

impl Compiled {
    #[cfg(feature = "validate")]
    fn new(schema: &Value) -> Result<Self, String> {
        // No draft is forced: `$schema` picks draft 7, 2019-09 (or 4, 6), else 2020-12.
        jsonschema::options()
            .build(schema)
            .map(|validator| Self { validator })
            .map_err(|e| cut(&e.to_string()))
    }

    #[cfg(not(feature = "validate"))]
    fn new(_schema: &Value) -> Result<Self, String> {
        Err("kaged-mcp was built without its `validate` feature".into())
    }

    #[cfg(feature = "validate")]
    fn check(&self, value: &Value, quote: Quote) -> Checked {
        if self.validator.is_valid(value) {
            return Ok(());
        }
        let mut kept = Vec::new();
        let mut more = 0;
        for e in self.validator.iter_errors(value) {
            if kept.len() < MAX_VIOLATIONS {
                kept.push(Violation {
                    pointer: e.instance_path().as_str().to_owned(),
                    keyword: e.kind().keyword().to_owned(),
                    message: cut(&match quote {
                        Quote::Values => e.to_string(),
                        Quote::Not => e.masked_with("the value").to_string(),
                    }),
                });
            } else {
                more += 1;
            }
        }
        if kept.is_empty() {
            kept.push(Violation {
                pointer: String::new(),
                keyword: "schema".into(),
                message: "the value does not conform".into(),
            });
        }
        Err((kept, more))
    }

    #[cfg(not(feature = "validate"))]
    fn check(&self, _value: &Value, _quote: Quote) -> Checked {
        Ok(())
    }
}

/// `text` on one line, at most [`MAX_MESSAGE`] bytes (cut at a character boundary, `…` added).
#[cfg(feature = "validate")]
fn cut(text: &str) -> String {
    let line: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    if line.len() <= MAX_MESSAGE {
        return line;
    }
    let mut end = MAX_MESSAGE;
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &line[..end])
}

/// What checks a tool call's result on its way back ([`ToolSchemas::check_call`]): its tool's
/// output schema.
#[derive(Debug, Clone)]
pub struct ResultCheck {
    schemas: Arc<ToolSchemas>,
    tool: Arc<str>,
}

impl CheckResponse<ToolResult> for ResultCheck {
    fn check(&self, result: &ToolResult) -> Result<(), BoxError> {
        self.schemas.check_result(result).map_err(|found| {
            self.schemas
                .violation(&self.tool, Side::Result, found)
                .into()
        })
    }
}

impl ToolSchemas {
    /// Checks the arguments of a call of `tool` (see
    /// [`check_arguments`](Self::check_arguments)) and says what checks its result, if this
    /// tool's results are checked, each side only as `validation` says (the stack's knob,
    /// beside the one the schemas were compiled with): what the validation layer
    /// ([`kaged_mcp_layers::validate`]) asks of a [`ToolCall`](crate::client::ToolCall)
    /// carrying these schemas.
    ///
    /// # Errors
    /// A [`SchemaViolation`] of the arguments: the call is not sent.
    pub fn check_call(
        self: &Arc<Self>,
        tool: &Arc<str>,
        arguments: &mut Option<Arc<Map<String, Value>>>,
        validation: Validation,
    ) -> Result<Option<ResultCheck>, SchemaViolation> {
        if validation.arguments() {
            self.check_arguments(arguments)
                .map_err(|found| self.violation(tool, Side::Arguments, found))?;
        }
        Ok(
            (validation.results() && self.output.is_some()).then(|| ResultCheck {
                schemas: Arc::clone(self),
                tool: Arc::clone(tool),
            }),
        )
    }

    fn violation(
        &self,
        tool: &Arc<str>,
        side: Side,
        found: (Vec<Violation>, usize),
    ) -> SchemaViolation {
        SchemaViolation {
            server: Arc::clone(&self.server),
            tool: Arc::clone(tool),
            side,
            violations: found.0,
            more: found.1,
        }
    }
}

#[cfg(all(test, feature = "validate"))]
mod tests;
