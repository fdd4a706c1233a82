//! Telling the formats apart and reading each into one shape: a list of named JSON objects
//! with `type`, `command`, `args`, `env`, `url` and `headers`, as Claude Code writes them.
//! VS Code's `mcp.json` may hold comments and trailing commas (JSONC), which are dropped
//! first; Codex's TOML keys are renamed to that shape (`http_headers` as `headers`,
//! `bearer_token_env_var` as an `Authorization: Bearer ${VAR}` header).

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{Format, ImportError};

/// One server entry of the file, in the common shape. `Debug` shows its name only: the entry
/// holds the file's secrets (`env` values, headers).
#[derive(Clone)]
pub(super) struct Foreign {
    /// Its name in the file.
    pub(super) name: String,
    /// Its entry (anything: checked by the converter).
    pub(super) entry: Value,
}

impl std::fmt::Debug for Foreign {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Foreign")
            .field("name", &self.name)
            .finish_non_exhaustive()
    }
}

/// What a file holds.
#[derive(Debug)]
pub(super) struct Read {
    pub(super) format: Format,
    pub(super) servers: Vec<Foreign>,
    /// VS Code's `inputs`: id → description.
    pub(super) inputs: BTreeMap<String, String>,
}

/// What an unknown file should have been.
const EXPECTED: &str = "expected a JSON object with `mcpServers` (Claude Code's .mcp.json, \
    Claude Desktop's claude_desktop_config.json, Cursor's mcp.json) or `servers` (VS Code's \
    mcp.json), or a TOML file with [mcp_servers.NAME] tables (Codex's config.toml)";

/// Reads `text`; `file_name` names the format among those of the same shape and decides
/// which parse error is reported when nothing reads it.
pub(super) fn read(text: &str, file_name: &str) -> Result<Read, ImportError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let lower = file_name.to_ascii_lowercase();
    let json = serde_json::from_str::<Value>(text)
        .or_else(|e| serde_json::from_str::<Value>(&strip_jsonc(text)).map_err(|_| e));
    match json {
        Ok(Value::Object(root)) => return from_json(root, &lower),
        Ok(other) => {
            return Err(ImportError::new(format!(
                "the file is JSON but not an object (found {}); {EXPECTED}",
                json_type(&other)
            )))
        }
        Err(e) if !lower.ends_with(".toml") && looks_like_json(text) => {
            return Err(ImportError::new(format!("not valid JSON: {e}; {EXPECTED}")))
        }
        Err(_) => {}
    }
    match text.parse::<toml::Table>() {
        Ok(root) => from_toml(root),
        Err(e) if lower.ends_with(".toml") => Err(ImportError::new(format!(
            "not valid TOML: {}; {EXPECTED}",
            e.message()
        ))),
        Err(_) => Err(ImportError::new(format!(
            "neither JSON nor TOML; {EXPECTED}"
        ))),
    }
}

/// Whether the text starts as JSON would (`{` or `[` after blanks and comments).
fn looks_like_json(text: &str) -> bool {
    strip_jsonc(text).trim_start().starts_with(['{', '['])
}

fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn from_json(mut root: Map<String, Value>, file_name: &str) -> Result<Read, ImportError> {
    if let Some(servers) = root.remove("mcpServers") {
        let format = if file_name.ends_with("claude_desktop_config.json") {
            Format::ClaudeDesktop
        } else if file_name.contains(".cursor") {
            Format::Cursor
        } else if file_name.ends_with(".mcp.json") {
            Format::ClaudeCode
        } else {
            Format::McpServers
        };
        return Ok(Read {
            format,
            servers: entries(servers, "mcpServers")?,
            inputs: BTreeMap::new(),
        });
    }
    // VS Code: `mcp.json` has `servers` at the top, `settings.json` under `mcp`.
    let block = match root.remove("servers") {
        Some(s) => Some((s, root.remove("inputs"))),
        None => match root.remove("mcp") {
            Some(Value::Object(mut mcp)) => {
                mcp.remove("servers").map(|s| (s, mcp.remove("inputs")))
            }
            _ => None,
        },
    };
    let Some((servers, inputs)) = block else {
        let keys: Vec<&str> = root.keys().map(String::as_str).take(8).collect();
        return Err(ImportError::new(format!(
            "no MCP servers in this JSON (its keys: {}); {EXPECTED}",
            if keys.is_empty() {
                "none".to_owned()
            } else {
                keys.join(", ")
            }
        )));
    };
    Ok(Read {
        format: Format::VsCode,
        servers: entries(servers, "servers")?,
        inputs: inputs.map(vscode_inputs).unwrap_or_default(),
    })
}

/// The named entries of a servers object.
fn entries(servers: Value, key: &str) -> Result<Vec<Foreign>, ImportError> {
    match servers {
        Value::Object(map) => Ok(map
            .into_iter()
            .map(|(name, entry)| Foreign { name, entry })
            .collect()),
        other => Err(ImportError::new(format!(
            "`{key}` must be an object of servers by name, found {}",
            json_type(&other)
        ))),
    }
}

/// VS Code's `inputs`: `[{id, type, description, password}]`, as id → description.
fn vscode_inputs(inputs: Value) -> BTreeMap<String, String> {
    let Value::Array(items) = inputs else {
        return BTreeMap::new();
    };
    items
        .iter()
        .filter_map(|i| {
            let id = i.get("id")?.as_str()?;
            let desc = i.get("description").and_then(Value::as_str).unwrap_or("");
            Some((id.to_owned(), desc.to_owned()))
        })
        .collect()
}

fn from_toml(mut root: toml::Table) -> Result<Read, ImportError> {
    let Some(servers) = root.remove("mcp_servers") else {
        return Err(ImportError::new(format!(
            "no [mcp_servers] in this TOML; {EXPECTED}"
        )));
    };
    let toml::Value::Table(servers) = servers else {
        return Err(ImportError::new(format!(
            "`mcp_servers` must be a table of servers by name, found {}",
            servers.type_str()
        )));
    };
    let servers = servers
        .into_iter()
        .map(|(name, entry)| Foreign {
            name,
            entry: match entry {
                toml::Value::Table(t) => codex_entry(t),
                other => Value::String(format!("a TOML {}", other.type_str())),
            },
        })
        .collect();
    Ok(Read {
        format: Format::Codex,
        servers,
        inputs: BTreeMap::new(),
    })
}

/// One Codex `[mcp_servers.NAME]` table in the common shape. Codex has no `type`: a `url`
/// is a Streamable HTTP server.
fn codex_entry(table: toml::Table) -> Value {
    let mut out = Map::new();
    let mut headers = Map::new();
    for (k, v) in table {
        let v = toml_to_json(v);
        match k.as_str() {
            "http_headers" => {
                if let Value::Object(h) = v {
                    headers.extend(h);
                }
            }
            "env_http_headers" => {
                if let Value::Object(h) = v {
                    for (name, var) in h {
                        let var = var.as_str().unwrap_or("").to_owned();
                        headers.insert(name, Value::String(format!("${{{var}}}")));
                    }
                }
            }
            "bearer_token_env_var" => {
                let var = v.as_str().unwrap_or("").to_owned();
                headers.insert(
                    "Authorization".into(),
                    Value::String(format!("Bearer ${{{var}}}")),
                );
            }
            "bearer_token" => {
                let token = v.as_str().unwrap_or("").to_owned();
                headers.insert(
                    "Authorization".into(),
                    Value::String(format!("Bearer {token}")),
                );
            }
            _ => {
                out.insert(k, v);
            }
        }
    }
    if !headers.is_empty() {
        out.insert("headers".into(), Value::Object(headers));
    }
    Value::Object(out)
}

/// A TOML value as JSON (a date as its text).
fn toml_to_json(v: toml::Value) -> Value {
    match v {
        toml::Value::String(s) => Value::String(s),
        toml::Value::Integer(i) => Value::from(i),
        toml::Value::Float(f) => serde_json::Number::from_f64(f).map_or(Value::Null, Value::Number),
        toml::Value::Boolean(b) => Value::Bool(b),
        toml::Value::Datetime(d) => Value::String(d.to_string()),
        toml::Value::Array(a) => Value::Array(a.into_iter().map(toml_to_json).collect()),
        toml::Value::Table(t) => {
            Value::Object(t.into_iter().map(|(k, v)| (k, toml_to_json(v))).collect())
        }
    }
}

/// `text` without `//` and `/* */` comments and without a comma before `}` or `]` (outside
/// strings), as VS Code reads its JSONC files.
fn strip_jsonc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut in_string = false;
    while let Some(c) = chars.next() {
        if in_string {
            out.push(c);
            match c {
                '\\' => {
                    if let Some(n) = chars.next() {
                        out.push(n);
                    }
                }
                '"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_string = true;
                out.push(c);
            }
            ('/', Some('/')) => {
                for n in chars.by_ref() {
                    if n == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for n in chars.by_ref() {
                    if prev == '*' && n == '/' {
                        break;
                    }
                    prev = n;
                }
                out.push(' ');
            }
            (c @ ('}' | ']'), _) => {
                let trimmed = out.trim_end().len();
                if out[..trimmed].ends_with(',') {
                    out.truncate(trimmed - 1);
                }
                out.push(c);
            }
            _ => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jsonc_loses_comments_and_trailing_commas_but_not_strings() {
        let text = "{ // c\n \"a\": \"//x,}\", /* b */ \"c\": [1, 2,],\n}";
        let v: Value = serde_json::from_str(&strip_jsonc(text)).unwrap();
        assert_eq!(v["a"], "//x,}");
        assert_eq!(v["c"], serde_json::json!([1, 2]));
    }

    #[test]
    fn the_format_is_told_by_the_content_and_named_by_the_file() {
        let claude = r#"{"mcpServers": {}}"#;
        assert_eq!(
            read(claude, ".mcp.json").unwrap().format,
            Format::ClaudeCode
        );
        assert_eq!(
            read(claude, "/home/u/.cursor/mcp.json").unwrap().format,
            Format::Cursor
        );
        assert_eq!(read(claude, "x.json").unwrap().format, Format::McpServers);
        let vscode = r#"{"servers": {}, "inputs": [{"id": "pat", "description": "PAT"}]}"#;
        let r = read(vscode, "mcp.json").unwrap();
        assert_eq!(
            (r.format, r.inputs["pat"].as_str()),
            (Format::VsCode, "PAT")
        );
        let codex = "[mcp_servers.docs]\ncommand = \"docs\"\n";
        assert_eq!(read(codex, "config.toml").unwrap().format, Format::Codex);
    }

    #[test]
    fn an_unknown_shape_names_what_was_expected() {
        for (text, name) in [
            ("{\"other\": 1}", "a.json"),
            ("[1]", "a.json"),
            ("{", "a.json"),
            ("x = 1", "config.toml"),
            ("x = ", "config.toml"),
            ("hello", "notes.txt"),
        ] {
            let e = read(text, name).unwrap_err().to_string();
            assert!(e.contains("mcpServers") && e.contains("mcp_servers"), "{e}");
        }
    }
}
