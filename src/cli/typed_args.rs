//! `--arg key=value`: a tool's argument typed by the tool's input schema.
//!
//! A key may be a path, `a.b=1`: the value goes into the object `a` (made when `--args` did
//! not give one), typed by the schema of `a`'s property `b`. A key the schema lists whole, dot
//! included, is that one property. A property given as a `$ref` into the schema itself
//! (`#/$defs/Thing`, `#/definitions/Thing`) is typed by its target.
//!
//! The property's schema says the type: `type` (a name or a list of names), or the branches of
//! `anyOf`/`oneOf`, or the values of `enum`/`const`. When the types allow a string (or say
//! nothing), the text is the string as it is; otherwise it is parsed as JSON and must be one of
//! the types (`integer` a number without fraction, `number` any number, `boolean`, `null`,
//! `array`, `object`). A value that is not is a usage error naming the key and the expected
//! type. A key the schema does not list takes its `additionalProperties` schema, else is a
//! string. `--arg` and `--args` together merge, `--arg` winning for a key both give.

use serde_json::{Map, Value};

/// How deep `anyOf`/`oneOf` and `$ref` are followed.
const MAX_DEPTH: usize = 4;

/// How many parts a key path may have.
const MAX_PATH: usize = 16;

/// `key=value` split at its first `=`; the key must not be empty.
pub(super) fn split(text: &str) -> Result<(&str, &str), String> {
    match text.split_once('=') {
        Some((k, v)) if !k.is_empty() => Ok((k, v)),
        _ => Err(format!(
            "--arg `{}`: give `key=value`",
            crate::transport::text::clean(text, 100)
        )),
    }
}

/// `schema`, or what its `$ref` points at in `root` (a local JSON pointer, `#/…`), followed up
/// to [`MAX_DEPTH`] times; `None` for a reference that cannot be followed.
fn resolve<'a>(root: &'a Value, schema: &'a Value) -> Option<&'a Value> {
    let mut at = schema;
    for _ in 0..=MAX_DEPTH {
        match at.get("$ref").and_then(Value::as_str) {
            Some(r) => at = root.pointer(r.strip_prefix('#')?)?,
            None => return Some(at),
        }
    }
    None
}

/// The JSON types `schema` allows, or `None` when it does not say (or allows anything).
fn types(root: &Value, schema: &Value, depth: usize) -> Option<Vec<String>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let o = resolve(root, schema)?.as_object()?;
    match o.get("type") {
        Some(Value::String(t)) => return Some(vec![t.clone()]),
        Some(Value::Array(ts)) => {
            return Some(
                ts.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect(),
            )
        }
        _ => {}
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = o.get(key) {
            let mut all = Vec::new();
            for b in branches {
                // One branch that says nothing makes the whole say nothing.
                all.extend(types(root, b, depth + 1)?);
            }
            all.sort();
            all.dedup();
            return Some(all);
        }
    }
    let values: Vec<&Value> = match (o.get("enum"), o.get("const")) {
        (Some(Value::Array(vs)), _) => vs.iter().collect(),
        (_, Some(v)) => vec![v],
        _ => return None,
    };
    let mut all: Vec<String> = values.iter().map(|v| type_name(v).to_owned()).collect();
    all.sort();
    all.dedup();
    Some(all)
}

/// The JSON type name of `v` (`integer` for a whole number).
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// Whether `v` is of the schema type `t`.
fn is_type(v: &Value, t: &str) -> bool {
    match (t, v) {
        ("integer", Value::Number(n)) => {
            n.is_i64() || n.is_u64() || n.as_f64().is_some_and(|f| f.fract() == 0.0)
        }
        ("number", Value::Number(_)) => true,
        _ => type_name(v) == t,
    }
}

/// The schema of property `key` in an object schema (`$ref`s followed).
fn property<'a>(root: &'a Value, schema: &'a Value, key: &str) -> Option<&'a Value> {
    let schema = resolve(root, schema)?;
    let p = schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))?;
    resolve(root, p)
}

/// The parts of `key`: itself when the schema lists it whole, else split at each `.`.
fn path<'k>(schema: &Value, key: &'k str) -> Result<Vec<&'k str>, String> {
    let listed = resolve(schema, schema)
        .and_then(|s| s.get("properties"))
        .and_then(|p| p.get(key))
        .is_some();
    if listed || !key.contains('.') {
        return Ok(vec![key]);
    }
    let parts: Vec<&str> = key.split('.').collect();
    if parts.iter().any(|p| p.is_empty()) || parts.len() > MAX_PATH {
        return Err(format!(
            "--arg `{}`: a key path is names joined by `.`, none empty, at most {MAX_PATH}",
            crate::transport::text::clean(key, 100)
        ));
    }
    Ok(parts)
}

/// The schema at `parts` under the input schema `root`, when it says.
fn schema_at<'a>(root: &'a Value, parts: &[&str]) -> Option<&'a Value> {
    let mut at = root;
    for part in parts {
        at = property(root, at, part)?;
    }
    Some(at)
}

/// The value of `--arg key=text` under `schema` (the tool's input schema).
#[cfg(test)]
fn typed(schema: &Value, key: &str, text: &str) -> Result<Value, String> {
    let parts = path(schema, key)?;
    typed_at(schema, &parts, key, text)
}

/// The value of `--arg key=text`, `key` being `parts` under `schema`.
fn typed_at(schema: &Value, parts: &[&str], key: &str, text: &str) -> Result<Value, String> {
    let key = crate::transport::text::clean(key, 100);
    let types = schema_at(schema, parts).and_then(|p| types(schema, p, 0));
    let Some(types) = types.filter(|t| !t.is_empty() && !t.iter().any(|t| t == "string")) else {
        return Ok(Value::String(text.to_owned()));
    };
    let expected = types.join(" or ");
    let parsed: Value = serde_json::from_str(text.trim()).map_err(|_| {
        format!(
            "--arg {key}: expected {expected}, got `{}`",
            crate::transport::text::clean(text, 100)
        )
    })?;
    if types.iter().any(|t| is_type(&parsed, t)) {
        Ok(parsed)
    } else {
        Err(format!(
            "--arg {key}: expected {expected}, got {} `{}`",
            type_name(&parsed),
            crate::transport::text::clean(text, 100)
        ))
    }
}

/// Sets `value` at `parts` in `map`, making each object on the way that is not there; a part
/// on the way that holds something else than an object is an error naming it.
fn insert(
    map: &mut Map<String, Value>,
    parts: &[&str],
    key: &str,
    value: Value,
) -> Result<(), String> {
    let Some((last, on_the_way)) = parts.split_last() else {
        return Ok(());
    };
    let mut at = map;
    for (i, part) in on_the_way.iter().enumerate() {
        let slot = at
            .entry((*part).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        at = match slot {
            Value::Object(m) => m,
            other => {
                return Err(format!(
                    "--arg {}: `{}` is {}, not an object",
                    crate::transport::text::clean(key, 100),
                    crate::transport::text::clean(&parts[..=i].join("."), 100),
                    type_name(other)
                ))
            }
        };
    }
    at.insert((*last).to_owned(), value);
    Ok(())
}

/// `base` (from `--args`) with each `--arg key=value` of `pairs` set, typed by `schema`.
pub(super) fn merge(
    base: Option<Map<String, Value>>,
    pairs: &[String],
    schema: &Value,
) -> Result<Option<Map<String, Value>>, String> {
    if pairs.is_empty() {
        return Ok(base);
    }
    let mut map = base.unwrap_or_default();
    for pair in pairs {
        let (key, text) = split(pair)?;
        let parts = path(schema, key)?;
        let value = typed_at(schema, &parts, key, text)?;
        insert(&mut map, &parts, key, value)?;
    }
    Ok(Some(map))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "n": {"type": "integer"}, "x": {"type": "number"}, "b": {"type": "boolean"},
            "s": {"type": "string"}, "a": {"type": "array"}, "o": {"type": "object"},
            "ns": {"type": ["number", "string"]}, "nn": {"type": ["integer", "null"]},
            "any": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
            "e": {"enum": [1, 2, 3]}, "free": {}
        }})
    }

    #[test]
    fn values_are_typed_by_their_property_schema() {
        let s = schema();
        assert_eq!(typed(&s, "n", "42").unwrap(), json!(42));
        assert_eq!(typed(&s, "x", "2.5").unwrap(), json!(2.5));
        assert_eq!(typed(&s, "b", "true").unwrap(), json!(true));
        assert_eq!(typed(&s, "s", "42").unwrap(), json!("42"));
        assert_eq!(typed(&s, "a", "[1, \"x\"]").unwrap(), json!([1, "x"]));
        assert_eq!(typed(&s, "o", r#"{"k": 1}"#).unwrap(), json!({"k": 1}));
        assert_eq!(typed(&s, "nn", "null").unwrap(), Value::Null);
        assert_eq!(typed(&s, "any", "false").unwrap(), json!(false));
        assert_eq!(typed(&s, "e", "2").unwrap(), json!(2));
    }

    #[test]
    fn a_union_with_string_an_untyped_or_unknown_key_keeps_the_text() {
        let s = schema();
        assert_eq!(typed(&s, "ns", "7").unwrap(), json!("7"));
        assert_eq!(typed(&s, "free", "7").unwrap(), json!("7"));
        assert_eq!(typed(&s, "nope", "true").unwrap(), json!("true"));
        assert_eq!(typed(&json!({}), "k", "a=b").unwrap(), json!("a=b"));
    }

    #[test]
    fn a_value_not_of_the_type_names_the_key_and_the_type() {
        let s = schema();
        assert_eq!(
            typed(&s, "n", "abc").unwrap_err(),
            "--arg n: expected integer, got `abc`"
        );
        assert_eq!(
            typed(&s, "n", "1.5").unwrap_err(),
            "--arg n: expected integer, got number `1.5`"
        );
        assert_eq!(
            typed(&s, "any", "\"x\"").unwrap_err(),
            "--arg any: expected boolean or integer, got string `\"x\"`"
        );
        assert!(typed(&s, "b", "yes")
            .unwrap_err()
            .contains("expected boolean"));
    }

    #[test]
    fn arg_pairs_merge_over_args_and_need_an_equals_sign() {
        let base = json!({"n": 1, "s": "kept"}).as_object().cloned();
        let merged = merge(base, &["n=2".into(), "s=a=b".into()], &schema()).unwrap();
        assert_eq!(Value::Object(merged.unwrap()), json!({"n": 2, "s": "a=b"}));
        assert_eq!(merge(None, &[], &schema()).unwrap(), None);
        assert!(merge(None, &["=1".into()], &schema()).is_err());
        assert!(merge(None, &["n".into()], &schema())
            .unwrap_err()
            .contains("key=value"));
    }

    #[test]
    fn a_key_path_goes_into_nested_objects_typed_by_their_schema() {
        let s = json!({"type": "object", "properties": {
            "opts": {"type": "object", "properties": {
                "depth": {"type": "integer"}, "deep": {"type": "object", "properties": {"on": {"type": "boolean"}}}}},
            "a.b": {"type": "integer"}, "n": {"type": "integer"}
        }});
        let base = json!({"opts": {"kept": "x"}}).as_object().cloned();
        let merged = merge(
            base,
            &[
                "opts.depth=2".into(),
                "opts.deep.on=true".into(),
                "a.b=3".into(),
                "new.k=1".into(),
            ],
            &s,
        )
        .unwrap();
        assert_eq!(
            Value::Object(merged.unwrap()),
            json!({"opts": {"kept": "x", "depth": 2, "deep": {"on": true}}, "a.b": 3, "new": {"k": "1"}})
        );
        assert_eq!(
            merge(None, &["opts.depth=deep".into()], &s).unwrap_err(),
            "--arg opts.depth: expected integer, got `deep`"
        );
        assert_eq!(
            merge(None, &["n=1".into(), "n.x=2".into()], &s).unwrap_err(),
            "--arg n.x: `n` is integer, not an object"
        );
        assert!(merge(None, &["opts..depth=1".into()], &s)
            .unwrap_err()
            .contains("none empty"));
    }

    #[test]
    fn a_ref_property_is_typed_by_its_target() {
        let s = json!({"type": "object",
            "$defs": {"Count": {"type": "integer"}, "Opts": {"type": "object", "properties": {"on": {"$ref": "#/$defs/Flag"}}},
                      "Flag": {"type": "boolean"}, "Loop": {"$ref": "#/$defs/Loop"}},
            "definitions": {"Name": {"type": "string"}},
            "properties": {"n": {"$ref": "#/$defs/Count"}, "o": {"$ref": "#/$defs/Opts"},
                           "name": {"$ref": "#/definitions/Name"}, "loop": {"$ref": "#/$defs/Loop"},
                           "gone": {"$ref": "#/$defs/Nope"}, "far": {"$ref": "https://example.com/s.json"},
                           "maybe": {"anyOf": [{"$ref": "#/$defs/Count"}, {"type": "null"}]}}});
        assert_eq!(typed(&s, "n", "7").unwrap(), json!(7));
        assert_eq!(
            typed(&s, "n", "x").unwrap_err(),
            "--arg n: expected integer, got `x`"
        );
        assert_eq!(typed(&s, "o.on", "false").unwrap(), json!(false));
        assert_eq!(typed(&s, "name", "7").unwrap(), json!("7"));
        assert_eq!(typed(&s, "maybe", "null").unwrap(), Value::Null);
        // A reference that cannot be followed (a loop, a missing or remote target) types
        // nothing: the text is kept.
        for key in ["loop", "gone", "far"] {
            assert_eq!(typed(&s, key, "7").unwrap(), json!("7"), "{key}");
        }
    }
}
