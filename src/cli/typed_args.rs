//! `--arg key=value`: a tool's argument typed by the tool's input schema.
//!
//! The property's schema says the type: `type` (a name or a list of names), or the branches of
//! `anyOf`/`oneOf`, or the values of `enum`/`const`. When the types allow a string (or say
//! nothing), the text is the string as it is; otherwise it is parsed as JSON and must be one of
//! the types (`integer` a number without fraction, `number` any number, `boolean`, `null`,
//! `array`, `object`). A value that is not is a usage error naming the key and the expected
//! type. A key the schema does not list takes its `additionalProperties` schema, else is a
//! string. `--arg` and `--args` together merge, `--arg` winning for a key both give.

use serde_json::{Map, Value};

/// How deep `anyOf`/`oneOf` are followed.
const MAX_DEPTH: usize = 4;

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

/// The JSON types `schema` allows, or `None` when it does not say (or allows anything).
fn types(schema: &Value, depth: usize) -> Option<Vec<String>> {
    if depth > MAX_DEPTH {
        return None;
    }
    let o = schema.as_object()?;
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
                all.extend(types(b, depth + 1)?);
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

/// The schema of property `key` in an object schema.
fn property<'a>(schema: &'a Value, key: &str) -> Option<&'a Value> {
    schema
        .get("properties")
        .and_then(|p| p.get(key))
        .or_else(|| schema.get("additionalProperties").filter(|a| a.is_object()))
}

/// The value of `--arg key=text` under `schema` (the tool's input schema).
pub(super) fn typed(schema: &Value, key: &str, text: &str) -> Result<Value, String> {
    let types = property(schema, key).and_then(|p| types(p, 0));
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
        map.insert(key.to_owned(), typed(schema, key, text)?);
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
}
