//! `kaged-mcp tools` and `kaged-mcp describe`: the tools of the servers started, each with its
//! whole definition as its server listed it ([`McpTool::tool`](crate::registry::McpTool)).
//! In text, `tools` prints one line a tool, `name(param: type, optional?: type) [hints]` and
//! the description's first line; `describe` prints one tool's title, description, a table of
//! its parameters, its output schema and its annotations.

use std::collections::BTreeMap;
use std::io::Write;
use std::sync::Arc;

use serde_json::Value;

use crate::protocol::{ToolAnnotations, ToolInfo};
use crate::registry::ToolDefinition;
use crate::session::Session;
use crate::transport::text::clean;
use crate::Error;

use super::output::Failure;
use super::pin_notes::{all_held, all_held_line};
use super::start::{start, start_tools, Scope, Who};
use super::{ServerArgs, EXIT_FAILED, EXIT_OK};

/// How deep a schema is followed to name a parameter's type.
const MAX_TYPE_DEPTH: usize = 4;

/// The tools `who` may call.
pub(super) fn catalog(session: &Session, who: &Who<'_>) -> Result<Vec<ToolDefinition>, Error> {
    match who.agent {
        Some(a) => session.catalog_for(a),
        None => Ok(session.catalog()),
    }
}

/// Each MCP tool as its server listed it, by full name.
fn listed(session: &Session, tools: &[ToolDefinition]) -> BTreeMap<String, Arc<ToolInfo>> {
    let mut out = BTreeMap::new();
    let mut servers: Vec<&str> = tools
        .iter()
        .filter_map(|t| t.mcp_server.as_deref())
        .collect();
    servers.sort_unstable();
    servers.dedup();
    for server in servers {
        if let Some(catalog) = session.registry().server_catalog(server) {
            for (name, t) in &catalog.tools {
                out.insert(name.clone(), Arc::clone(&t.tool));
            }
        }
    }
    out
}

/// One tool's JSON: its [`ToolDefinition`] with `mcp_tool`, the tool as its server listed it.
fn tool_json(def: &ToolDefinition, tool: Option<&ToolInfo>) -> Value {
    let mut v = serde_json::to_value(def).unwrap_or(Value::Null);
    if let (Value::Object(m), Some(t)) = (&mut v, tool) {
        m.insert(
            "mcp_tool".into(),
            serde_json::to_value(t).unwrap_or(Value::Null),
        );
    }
    v
}

/// Writes the catalog: a JSON array of [`tool_json`], or one line a tool.
pub(super) fn print_catalog(
    session: &Session,
    tools: &[ToolDefinition],
    json: bool,
    out: &mut impl Write,
) -> std::io::Result<()> {
    let listed = listed(session, tools);
    if json {
        let all: Vec<Value> = tools
            .iter()
            .map(|t| tool_json(t, listed.get(&t.name).map(|t| &**t)))
            .collect();
        let text = serde_json::to_string(&all)?;
        out.write_all(crate::escape::json(&text).as_bytes())?;
        return writeln!(out);
    }
    for t in tools {
        let desc = t.description.lines().next().unwrap_or("");
        let hints = listed
            .get(&t.name)
            .map(|l| hints(l.annotations.as_ref()))
            .unwrap_or_default();
        let hints = if hints.is_empty() {
            String::new()
        } else {
            format!(" [{}]", hints.join(", "))
        };
        writeln!(
            out,
            "{}{hints}\t{}",
            signature(&t.name, &t.parameters),
            clean(desc, 4096)
        )?;
    }
    Ok(())
}

/// `name(required: type, optional?: type)`: the required parameters first, each group in the
/// schema's order.
fn signature(name: &str, schema: &Value) -> String {
    let params: Vec<String> = parameters(schema)
        .iter()
        .map(|p| {
            let mark = if p.required { "" } else { "?" };
            format!("{}{mark}: {}", p.name, p.ty)
        })
        .collect();
    format!("{name}({})", params.join(", "))
}

/// One parameter of a tool, read from its input schema.
struct Param {
    name: String,
    ty: String,
    required: bool,
    default: Option<String>,
    values: Option<String>,
    description: String,
}

/// The parameters of an input schema's `properties`, required first.
fn parameters(schema: &Value) -> Vec<Param> {
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut params: Vec<Param> = props
        .iter()
        .map(|(name, p)| Param {
            name: clean(name, 200),
            ty: type_of(p, 0),
            required: required.contains(&name.as_str()),
            default: p.get("default").map(|d| clean(&d.to_string(), 200)),
            values: p
                .get("enum")
                .and_then(Value::as_array)
                .map(|e| {
                    let shown: Vec<String> = e.iter().map(Value::to_string).collect();
                    clean(&shown.join("|"), 400)
                })
                .or_else(|| p.get("const").map(|c| clean(&c.to_string(), 200))),
            description: p
                .get("description")
                .and_then(Value::as_str)
                .map(|d| clean(d, 4096))
                .unwrap_or_default(),
        })
        .collect();
    params.sort_by_key(|p| !p.required);
    params
}

/// A schema's type in a word: `string`, `integer|null`, `string[]`, `object`, or `any`.
fn type_of(schema: &Value, depth: usize) -> String {
    if depth > MAX_TYPE_DEPTH {
        return "…".to_owned();
    }
    let array_of = |schema: &Value| match schema.get("items") {
        Some(items) => format!("{}[]", type_of(items, depth + 1)),
        None => "array".to_owned(),
    };
    match schema.get("type") {
        Some(Value::String(t)) if t == "array" => return array_of(schema),
        Some(Value::String(t)) => return clean(t, 40),
        Some(Value::Array(ts)) => {
            let ts: Vec<String> = ts
                .iter()
                .filter_map(Value::as_str)
                .map(|t| {
                    if t == "array" {
                        array_of(schema)
                    } else {
                        clean(t, 40)
                    }
                })
                .collect();
            if !ts.is_empty() {
                return ts.join("|");
            }
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(alts) = schema.get(key).and_then(Value::as_array) {
            let ts: Vec<String> = alts.iter().map(|a| type_of(a, depth + 1)).collect();
            return ts.join("|");
        }
    }
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        return clean(r.rsplit('/').next().unwrap_or(r), 80);
    }
    if schema.get("enum").is_some() {
        return "enum".to_owned();
    }
    "any".to_owned()
}

/// The hints a tool's annotations declare, as words: `read-only`, or `destructive` (or
/// `non-destructive`) and `idempotent`, which the spec gives meaning only for a tool that is
/// not read-only; then `open-world` (or `closed-world`). An absent hint is not shown (the
/// spec's default applies; `describe` shows every hint).
fn hints(a: Option<&ToolAnnotations>) -> Vec<&'static str> {
    let Some(a) = a else { return Vec::new() };
    let mut out = Vec::new();
    if a.read_only_hint == Some(true) {
        out.push("read-only");
    } else {
        match a.destructive_hint {
            Some(true) => out.push("destructive"),
            Some(false) => out.push("non-destructive"),
            None => {}
        }
        if a.idempotent_hint == Some(true) {
            out.push("idempotent");
        }
    }
    match a.open_world_hint {
        Some(true) => out.push("open-world"),
        Some(false) => out.push("closed-world"),
        None => {}
    }
    out
}

/// `kaged-mcp tools [SERVER…]`: the catalog of the servers that started (only those named,
/// when any are); exit 1 when any of them did not (its `error:` line says why), when pinning
/// holds every tool of a server named (the last `error:` line says which and why), or when
/// no tool is left because pinning holds them all; 0 otherwise. With `json`, a failure that
/// leaves nothing listed is the one error object on stdout instead of an empty array.
pub(super) fn tools(
    args: &ServerArgs,
    who: Who<'_>,
    servers: &[String],
    json: bool,
    verbose: bool,
) -> u8 {
    super::interrupt::block_on(async {
        let (session, _) = match start_tools(args, servers, verbose).await {
            Ok(s) => s,
            Err(f) => return f.exit(json, verbose),
        };
        let code = match catalog(&session, &who) {
            Ok(tools) => {
                let failure = tools_failure(&session, servers, &tools);
                match (&failure, json) {
                    // Nothing listed and a failure: the failure, not `[]` (the start failures
                    // were told on stderr as they were found). Some listed: the array.
                    (Some(f), true) if tools.is_empty() => {
                        println!("{}", crate::escape::json(&f.json().to_string()));
                    }
                    _ => {
                        let _ =
                            print_catalog(&session, &tools, json, &mut std::io::stdout().lock());
                    }
                }
                notes(&session, &tools);
                match failure {
                    Some(f) => {
                        for line in f.lines.iter().skip(f.told) {
                            eprintln!("error: {}", super::hints::line(line));
                        }
                        f.failure.code
                    }
                    None => EXIT_OK,
                }
            }
            Err(e) => Failure::of(&e).exit(json, verbose),
        };
        super::interrupt::end(session).await;
        code
    })
}

/// Why `tools` fails: its servers that did not start (already told), then those named whose
/// tools pinning holds, every one, or the catalog pinning left empty.
struct ToolsFailure {
    failure: Failure,
    /// The operator's lines, the start failures' first.
    lines: Vec<String>,
    /// How many of `lines` were told already (the start failures).
    told: usize,
}

impl ToolsFailure {
    fn json(&self) -> Value {
        self.failure.json()
    }
}

/// The failure of `tools` on a started session, if it fails.
fn tools_failure(
    session: &Session,
    named: &[String],
    tools: &[ToolDefinition],
) -> Option<ToolsFailure> {
    let mut lines = Vec::new();
    let mut servers = Vec::new();
    let mut kind = None;
    for f in session.start_failures() {
        lines.push(format!("server `{}`: {}", f.server, f.reason));
        servers.push(f.server);
        kind.get_or_insert("server_not_ready");
    }
    let told = lines.len();
    let catalogs: Vec<(String, Arc<crate::registry::ServerCatalog>)> = session
        .config()
        .project
        .servers
        .iter()
        .filter_map(|s| Some((s.key.clone(), session.registry().server_catalog(&s.key)?)))
        .collect();
    for (server, catalog) in &catalogs {
        if named.contains(server) && all_held(catalog) {
            lines.push(all_held_line(server, catalog));
            servers.push(server.clone());
            kind.get_or_insert("tools_held");
        }
    }
    if named.is_empty() && tools.is_empty() && catalogs.iter().any(|(_, c)| !c.held.is_empty()) {
        lines.push(
            "no tool is registered: pinning holds every tool the servers list (the warnings \
             above say which and why)"
                .to_owned(),
        );
        kind.get_or_insert("tools_held");
    }
    let kind = kind?;
    let mut failure = Failure::config(lines.clone()).code(EXIT_FAILED);
    failure.kind = kind;
    failure = match servers.as_slice() {
        [one] => failure.with("server", one.as_str()),
        _ => failure.with("servers", servers.clone()),
    };
    Some(ToolsFailure {
        failure,
        lines,
        told,
    })
}

/// The notes of `tools` on stderr: tools left unvalidated, tools a server offers that were not
/// registered.
fn notes(session: &Session, tools: &[ToolDefinition]) {
    for (tool, why) in session.registry().unvalidated() {
        if tools.iter().any(|t| t.name == tool) {
            let why = crate::escape::visible(&why.join("; ")).into_owned();
            eprintln!("note: {tool} is not validated: {why}");
        }
    }
    for server in &session.config().project.servers {
        let Some(catalog) = session.registry().server_catalog(&server.key) else {
            continue;
        };
        for (name, why) in &catalog.skipped {
            eprintln!(
                "note: server `{}` offers a tool `{}` that is not registered: {}",
                server.key,
                crate::escape::visible(name),
                crate::escape::visible(why)
            );
        }
    }
}

/// `kaged-mcp describe TOOL`: starts the tool's server, describes the tool. Exit 1 when the
/// tool is not registered (its server did not start, or has no such tool).
pub(super) fn describe(
    args: &ServerArgs,
    who: Who<'_>,
    tool: &str,
    json: bool,
    verbose: bool,
) -> u8 {
    super::interrupt::block_on(async {
        let (session, _) = match start(args, Scope::ToolOf(tool), true, verbose).await {
            Ok(s) => s,
            Err(f) => return f.exit(json, verbose),
        };
        let code = match describe_on(&session, &who, tool, json, &mut std::io::stdout().lock()) {
            Ok(()) => EXIT_OK,
            Err(f) => f.exit(json, verbose),
        };
        super::interrupt::end(session).await;
        code
    })
}

/// Describes `tool` of a started session to `out` (as JSON with `json`); the failure when it
/// is not registered. What `describe` prints, and the shell's `describe`.
pub(super) fn describe_on(
    session: &Session,
    who: &Who<'_>,
    tool: &str,
    json: bool,
    out: &mut dyn Write,
) -> Result<(), Failure> {
    let tools = catalog(session, who).map_err(|e| Failure::of(&e))?;
    let Some(def) = tools.iter().find(|t| t.name == tool) else {
        return Err(held(session, tool).unwrap_or_else(|| unknown(tool, &tools)));
    };
    let listed = listed(session, std::slice::from_ref(def));
    let info = listed.get(&def.name).map(|t| &**t);
    let _ = if json {
        writeln!(
            out,
            "{}",
            crate::escape::json(&tool_json(def, info).to_string())
        )
    } else {
        write_description(def, info, out)
    };
    Ok(())
}

/// The failure of `describe` for a tool its server lists but pinning holds: held, and why.
fn held(session: &Session, tool: &str) -> Option<Failure> {
    let server = super::start::server_of(tool)?;
    let name = tool.strip_prefix(&format!("mcp.{server}."))?;
    let catalog = session.registry().server_catalog(server)?;
    let verdict = catalog.held.get(name)?;
    let e = Error::ToolHeld {
        server: server.to_owned(),
        tool: name.to_owned(),
        reason: verdict.reason(server),
    };
    Some(Failure::of(&e).with("tool", tool))
}

/// The failure of `describe` for a tool that is not registered.
fn unknown(tool: &str, tools: &[ToolDefinition]) -> Failure {
    let server = super::start::server_of(tool);
    let hint = match server {
        Some(s) if tools.iter().any(|t| t.mcp_server.as_deref() == Some(s)) => {
            format!("`kaged-mcp tools {s}` lists the tools of `{s}`")
        }
        _ => "`kaged-mcp tools` lists the tools".to_owned(),
    };
    let mut f = Failure::new(
        EXIT_FAILED,
        "unknown_tool",
        format!("no tool `{}` is registered; {hint}", clean(tool, 200)),
    )
    .with("tool", tool);
    if let Some(s) = server {
        f = f.with("server", s);
    }
    f
}

/// The text of `describe`: title, description, parameters, output schema, annotations.
fn write_description(
    def: &ToolDefinition,
    tool: Option<&ToolInfo>,
    out: &mut dyn Write,
) -> std::io::Result<()> {
    let title = tool.and_then(|t| {
        t.title
            .as_deref()
            .or(t.annotations.as_ref()?.title.as_deref())
    });
    match title {
        Some(title) => writeln!(out, "{} — {}", def.name, clean(title, 400))?,
        None => writeln!(out, "{}", def.name)?,
    }
    if !def.description.is_empty() {
        writeln!(out)?;
        for line in def.description.lines() {
            writeln!(out, "  {}", clean(line, 4096))?;
        }
    }
    writeln!(out, "\nparameters:")?;
    write_params(&parameters(&def.parameters), out)?;
    writeln!(out, "\noutput schema:")?;
    match tool.and_then(|t| t.output_schema.as_ref()) {
        Some(schema) => write_json(schema, out)?,
        None => writeln!(out, "  none (the result is content blocks only)")?,
    }
    if let Some(t) = tool {
        write_annotations(t, out)?;
    }
    Ok(())
}

/// The parameter table, aligned in columns (or `none`).
fn write_params(params: &[Param], out: &mut dyn Write) -> std::io::Result<()> {
    if params.is_empty() {
        return writeln!(out, "  none");
    }
    let dash = |v: &Option<String>| v.clone().unwrap_or_else(|| "-".to_owned());
    let mut rows = vec![[
        "NAME".to_owned(),
        "TYPE".to_owned(),
        "REQUIRED".to_owned(),
        "DEFAULT".to_owned(),
        "VALUES".to_owned(),
        "DESCRIPTION".to_owned(),
    ]];
    for p in params {
        let required = if p.required { "yes" } else { "no" };
        rows.push([
            p.name.clone(),
            p.ty.clone(),
            required.to_owned(),
            dash(&p.default),
            dash(&p.values),
            p.description.clone(),
        ]);
    }
    let mut widths = [0usize; 5];
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    for row in &rows {
        let mut line = String::from("  ");
        for (w, cell) in widths.iter().zip(row) {
            line.push_str(&format!("{cell:<w$}  "));
        }
        line.push_str(&row[5]);
        writeln!(out, "{}", line.trim_end())?;
    }
    Ok(())
}

/// A schema, pretty-printed and indented.
fn write_json(v: &Value, out: &mut dyn Write) -> std::io::Result<()> {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    for line in text.lines() {
        // The indentation stays; the rest is cleaned (JSON escapes C0 controls, not C1).
        let body = line.trim_start();
        let indent = &line[..line.len() - body.len()];
        writeln!(out, "  {indent}{}", clean(body, 4096))?;
    }
    Ok(())
}

/// The annotations, each hint with whether the server declared it, and how the tool runs as a
/// task.
fn write_annotations(t: &ToolInfo, out: &mut dyn Write) -> std::io::Result<()> {
    writeln!(
        out,
        "\nannotations (hints from the server, trusted only with trust_annotations):"
    )?;
    let a = t.annotations.clone().unwrap_or_default();
    let rows = [
        ("read-only", a.read_only_hint, a.read_only()),
        ("destructive", a.destructive_hint, a.destructive()),
        ("idempotent", a.idempotent_hint, a.idempotent()),
        ("open-world", a.open_world_hint, a.open_world()),
    ];
    for (name, declared, value) in rows {
        let yes = if value { "yes" } else { "no" };
        // The spec gives these two meaning only for a tool that is not read-only.
        let moot = a.read_only() && matches!(name, "destructive" | "idempotent");
        let source = match (declared.is_some(), moot) {
            (_, true) => " (moot: the tool is read-only)",
            (true, false) => "",
            (false, false) => " (not declared: the default)",
        };
        writeln!(out, "  {name:<12} {yes}{source}")?;
    }
    for (k, v) in &a.extra {
        writeln!(out, "  {:<12} {}", clean(k, 80), clean(&v.to_string(), 400))?;
    }
    let task = t
        .extra
        .get("execution")
        .and_then(|e| e.get("taskSupport"))
        .and_then(Value::as_str)
        .unwrap_or("forbidden");
    writeln!(out, "\ntask support: {}", clean(task, 40))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_signature_names_each_parameter_with_its_type_required_first() {
        let schema = json!({"type": "object", "required": ["b"], "properties": {
            "a": {"type": "integer"}, "b": {"type": "string"},
            "c": {"type": "array", "items": {"type": "number"}},
            "d": {"type": ["string", "null"]}, "e": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/Thing"}]},
            "f": {}}});
        assert_eq!(
            signature("mcp.s.t", &schema),
            "mcp.s.t(b: string, a?: integer, c?: number[], d?: string|null, e?: string|Thing, f?: any)"
        );
        assert_eq!(
            signature("mcp.s.t", &json!({"type": "object"})),
            "mcp.s.t()"
        );
    }

    #[test]
    fn a_deep_schema_ends_in_an_ellipsis() {
        let mut s = json!({"type": "string"});
        for _ in 0..100 {
            s = json!({"type": "array", "items": s});
        }
        assert!(type_of(&s, 0).starts_with("…[]"));
    }

    #[test]
    fn only_declared_hints_are_shown() {
        let a: ToolAnnotations =
            serde_json::from_value(json!({"readOnlyHint": true, "destructiveHint": false,
                                          "openWorldHint": false}))
            .unwrap();
        assert_eq!(hints(Some(&a)), ["read-only", "closed-world"]);
        let a: ToolAnnotations =
            serde_json::from_value(json!({"destructiveHint": false, "idempotentHint": true}))
                .unwrap();
        assert_eq!(hints(Some(&a)), ["non-destructive", "idempotent"]);
        assert!(hints(None).is_empty());
    }

    #[test]
    fn the_parameter_table_has_every_column() {
        let schema = json!({"type": "object", "required": ["op"], "properties": {
            "op": {"type": "string", "enum": ["add", "sub"], "description": "What\tto do"},
            "n": {"type": "integer", "default": 3}}});
        let mut out = Vec::new();
        write_params(&parameters(&schema), &mut out).unwrap();
        let text = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0],
            "  NAME  TYPE     REQUIRED  DEFAULT  VALUES       DESCRIPTION"
        );
        assert_eq!(
            lines[1],
            "  op    string   yes       -        \"add\"|\"sub\"  What to do"
        );
        assert_eq!(lines[2], "  n     integer  no        3        -");
    }
}
