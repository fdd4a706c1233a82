//! The pinned form of a tool's definition and its digest: the fields an agent reads as
//! instructions, canonicalized by RFC 8785 (JSON Canonicalization Scheme) and hashed with
//! SHA-256, so that the same definition has the same digest whatever order or spacing the
//! server sent it in.
//!
//! RFC 8785 writes every number as an IEEE double, so two integers beyond ±2^53 that differ
//! (`9007199254740993` and `9007199254740992`) would canonicalize alike and a schema could
//! change without changing its digest. A value holding such an integer is digested over its
//! exact form instead ([`canonical_bytes`]): sorted keys, integers digit for digit, behind a
//! prefix no RFC 8785 text starts with.

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::{ToolAnnotations, ToolInfo};

/// The pinned fields of a tool, borrowed: [`tool_digest`] canonicalizes them without copying
/// a schema.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Pinned<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    title: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    input_schema: &'a Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    output_schema: Option<&'a Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    annotations: Option<&'a ToolAnnotations>,
    #[serde(skip_serializing_if = "Option::is_none")]
    execution: Option<&'a Value>,
}

/// The digest of `tool`'s pinned form: the same as `digest(&definition_of(tool))`, without
/// building the copy (what a session start pays per tool).
pub fn tool_digest(tool: &ToolInfo) -> String {
    let inexact = !exact_in_jcs(&tool.input_schema)
        || tool
            .output_schema
            .as_ref()
            .is_some_and(|s| !exact_in_jcs(s))
        || tool
            .extra
            .get("execution")
            .is_some_and(|e| !exact_in_jcs(e))
        // The typed annotations are strings and booleans: only the others can hold a number
        // (read in place, no copy of the annotations per tool at every listing).
        || tool
            .annotations
            .as_ref()
            .is_some_and(|a| !a.extra.values().all(exact_in_jcs));
    if inexact {
        return digest(&definition_of(tool));
    }
    let pinned = Pinned {
        name: &tool.name,
        title: tool.title.as_deref(),
        description: tool.description.as_deref(),
        input_schema: &tool.input_schema,
        output_schema: tool.output_schema.as_ref(),
        annotations: tool.annotations.as_ref(),
        execution: tool.extra.get("execution"),
    };
    match serde_json_canonicalizer::to_vec(&pinned) {
        Ok(bytes) => hex_sha256(&bytes),
        Err(_) => digest(&definition_of(tool)),
    }
}

fn hex_sha256(bytes: &[u8]) -> String {
    let hash = Sha256::digest(bytes);
    let mut hex = String::with_capacity(64);
    for byte in hash {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    hex
}

/// The fields of a tool's definition that are pinned, in the order the lock shows them. A
/// field the server leaves out is left out of the pinned form too.
pub const PINNED_FIELDS: [&str; 7] = [
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "execution",
];

/// The pinned form of `tool`: `name`, `title`, `description`, `inputSchema`, `outputSchema`,
/// `annotations` and `execution` as the server listed them (absent ones left out). Other
/// fields (`icons`, `_meta`) are not instructions to an agent and are not pinned.
pub fn definition_of(tool: &ToolInfo) -> Value {
    let mut out = Map::new();
    out.insert("name".into(), Value::String(tool.name.clone()));
    if let Some(title) = &tool.title {
        out.insert("title".into(), Value::String(title.clone()));
    }
    if let Some(description) = &tool.description {
        out.insert("description".into(), Value::String(description.clone()));
    }
    out.insert("inputSchema".into(), tool.input_schema.clone());
    if let Some(schema) = &tool.output_schema {
        out.insert("outputSchema".into(), schema.clone());
    }
    if let Some(annotations) = &tool.annotations {
        // A struct of options and a map: serializing it cannot fail.
        if let Ok(v) = serde_json::to_value(annotations) {
            out.insert("annotations".into(), v);
        }
    }
    if let Some(execution) = tool.extra.get("execution") {
        out.insert("execution".into(), execution.clone());
    }
    Value::Object(out)
}

/// The RFC 8785 canonical bytes of `value`: object members sorted by the UTF-16 code units
/// of their names, no insignificant whitespace, numbers as ECMAScript prints them, strings
/// with the minimal escapes.
///
/// A value holding an integer that an IEEE double cannot hold exactly (beyond ±2^53) is
/// written instead as `kaged-mcp/exact-integers` and a newline, then compact JSON with sorted
/// keys and every integer digit for digit: two such values that differ never share bytes.
pub fn canonical_bytes(value: &Value) -> Vec<u8> {
    if !exact_in_jcs(value) {
        let mut out = EXACT_PREFIX.to_vec();
        // `serde_json::Map` is a BTreeMap here (no `preserve_order`): keys come sorted.
        out.extend(serde_json::to_vec(value).unwrap_or_default());
        return out;
    }
    // A `serde_json::Value` holds no NaN or infinity, the only values RFC 8785 cannot write;
    // should the canonicalizer refuse one all the same, its plain serialization (sorted keys)
    // still gives a stable digest.
    serde_json_canonicalizer::to_vec(value)
        .or_else(|_| serde_json::to_vec(value))
        .unwrap_or_default()
}

/// What [`canonical_bytes`] starts with for a value RFC 8785 would not write exactly.
const EXACT_PREFIX: &[u8] = b"kaged-mcp/exact-integers\n";

/// Whether every number of `value` is written exactly by RFC 8785 (as a double): integers
/// within ±2^53, and any number parsed as a double already.
fn exact_in_jcs(value: &Value) -> bool {
    const MAX: u64 = 1 << 53;
    match value {
        Value::Number(n) => match (n.as_u64(), n.as_i64()) {
            (Some(u), _) => u <= MAX,
            (None, Some(i)) => i.unsigned_abs() <= MAX,
            _ => true,
        },
        Value::Array(items) => items.iter().all(exact_in_jcs),
        Value::Object(map) => map.values().all(exact_in_jcs),
        _ => true,
    }
}

/// The SHA-256 of the canonical form of `definition`, as 64 lowercase hex digits.
pub fn digest(definition: &Value) -> String {
    hex_sha256(&canonical_bytes(definition))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn canonical(text: &str) -> String {
        let value: Value = serde_json::from_str(text).unwrap();
        String::from_utf8(canonical_bytes(&value)).unwrap()
    }

    /// RFC 8785 §3.2.2 (the example of §3.2.2.3's sorting, and §3.2.3's output).
    #[test]
    fn rfc_8785_example_of_numbers_strings_and_literals() {
        let input = r#"{
          "numbers": [333333333.33333329, 1E30, 4.50,
                      2e-3, 0.000000000000000000000000001],
          "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
          "literals": [null, true, false]
        }"#;
        assert_eq!(
            canonical(input),
            r#"{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}"#
        );
    }

    /// RFC 8785 §3.2.3: members sorted by UTF-16 code units, not by UTF-8 bytes.
    #[test]
    fn rfc_8785_sorting_by_utf16_code_units() {
        let input = r#"{
          "\u20ac": "Euro Sign",
          "\r": "Carriage Return",
          "\ufb33": "Hebrew Letter Dalet With Dagesh",
          "1": "One",
          "\ud83d\ude00": "Emoji: Grinning Face",
          "\u0080": "Control",
          "\u00f6": "Latin Small Letter O With Diaeresis"
        }"#;
        let out = canonical(input);
        let keys: Vec<&str> = [
            "\r",
            "1",
            "\u{80}",
            "\u{f6}",
            "\u{20ac}",
            "\u{1f600}",
            "\u{fb33}",
        ]
        .to_vec();
        let mut at = 0;
        for key in keys {
            let quoted = serde_json::to_string(key).unwrap();
            let found = out[at..]
                .find(&quoted)
                .unwrap_or_else(|| panic!("{key:?} in order in {out}"));
            at += found + quoted.len();
        }
    }

    /// RFC 8785 Appendix B: numbers as ECMAScript's Number.prototype.toString prints them.
    #[test]
    fn rfc_8785_appendix_b_numbers() {
        for (bits, expected) in [
            (0x0000_0000_0000_0000_u64, "0"),
            (0x8000_0000_0000_0000, "0"),
            (0x0000_0000_0000_0001, "5e-324"),
            (0x8000_0000_0000_0001, "-5e-324"),
            (0x7fef_ffff_ffff_ffff, "1.7976931348623157e+308"),
            (0xffef_ffff_ffff_ffff, "-1.7976931348623157e+308"),
            (0x4340_0000_0000_0000, "9007199254740992"),
            (0xc340_0000_0000_0000, "-9007199254740992"),
            (0x4430_0000_0000_0000, "295147905179352830000"),
            (0x44b5_2d02_c7e1_4af5, "9.999999999999997e+22"),
            (0x44b5_2d02_c7e1_4af6, "1e+23"),
            (0x44b5_2d02_c7e1_4af7, "1.0000000000000001e+23"),
            (0x444b_1ae4_d6e2_ef4e, "999999999999999700000"),
            (0x444b_1ae4_d6e2_ef4f, "999999999999999900000"),
            (0x444b_1ae4_d6e2_ef50, "1e+21"),
            (0x3eb0_c6f7_a0b5_ed8c, "9.999999999999997e-7"),
            (0x3eb0_c6f7_a0b5_ed8d, "0.000001"),
            (0x41b3_de43_5555_5553, "333333333.3333332"),
            (0x41b3_de43_5555_5554, "333333333.33333325"),
            (0x41b3_de43_5555_5555, "333333333.3333333"),
            (0x41b3_de43_5555_5556, "333333333.3333334"),
            (0x41b3_de43_5555_5557, "333333333.33333343"),
            (0xbecb_f647_612f_3696, "-0.0000033333333333333333"),
            (0x4314_3ff3_c1cb_0959, "1424953923781206.2"),
        ] {
            let value = json!([f64::from_bits(bits)]);
            let out = String::from_utf8(canonical_bytes(&value)).unwrap();
            assert_eq!(out, format!("[{expected}]"), "{bits:#018x}");
        }
    }

    fn tool(value: Value) -> ToolInfo {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_digest_ignores_order_and_spacing_and_what_is_not_pinned() {
        let a = tool(json!({
            "name": "echo", "description": "Echoes",
            "inputSchema": {"type": "object", "properties": {"m": {"type": "string"}}},
            "annotations": {"readOnlyHint": true},
            "execution": {"taskSupport": "optional"},
            "icons": [{"src": "a.png"}], "_meta": {"x": 1},
        }));
        let b = tool(json!({
            "_meta": {"x": 2}, "execution": {"taskSupport": "optional"},
            "annotations": {"readOnlyHint": true},
            "inputSchema": {"properties": {"m": {"type": "string"}}, "type": "object"},
            "description": "Echoes", "name": "echo",
        }));
        let da = definition_of(&a);
        assert_eq!(digest(&da), digest(&definition_of(&b)));
        assert_eq!(
            tool_digest(&a),
            digest(&da),
            "the borrowed form digests the same"
        );
        assert_eq!(tool_digest(&b), digest(&da));
        assert_eq!(digest(&da).len(), 64);
        assert!(da.get("icons").is_none() && da.get("_meta").is_none());
        assert_eq!(da["execution"], json!({"taskSupport": "optional"}));
        // Each pinned field moves the digest.
        for (field, value) in [
            ("title", json!("Echo")),
            ("description", json!("Echoes.")),
            ("inputSchema", json!({"type": "object"})),
            ("outputSchema", json!({"type": "object"})),
            ("annotations", json!({"readOnlyHint": false})),
            ("execution", json!({"taskSupport": "required"})),
        ] {
            let mut changed = serde_json::to_value(&a).unwrap();
            changed[field] = value;
            let changed_tool = tool(changed);
            let changed = definition_of(&changed_tool);
            assert_ne!(digest(&da), digest(&changed), "{field}");
            assert_eq!(tool_digest(&changed_tool), digest(&changed), "{field}");
        }
    }

    #[test]
    fn annotations_the_client_does_not_know_are_pinned_too() {
        let a = definition_of(&tool(json!({"name": "t", "annotations": {"x-scope": "a"}})));
        let b = definition_of(&tool(json!({"name": "t", "annotations": {"x-scope": "b"}})));
        assert_ne!(digest(&a), digest(&b));
    }

    #[test]
    fn integers_beyond_2_pow_53_are_digested_exactly() {
        let schema = |n: &str| {
            let text = format!(
                r#"{{"name": "t", "inputSchema": {{"type": "object", "properties": {{"n": {{"maximum": {n}}}}}}}}}"#
            );
            tool(serde_json::from_str(&text).unwrap())
        };
        let (a, b) = (schema("9007199254740993"), schema("9007199254740992"));
        assert_ne!(a.input_schema, b.input_schema);
        assert_ne!(tool_digest(&a), tool_digest(&b));
        assert_ne!(digest(&definition_of(&a)), digest(&definition_of(&b)));
        assert_eq!(tool_digest(&a), digest(&definition_of(&a)));
        let (c, d) = (schema("-9007199254740995"), schema("-9007199254740996"));
        assert_ne!(tool_digest(&c), tool_digest(&d));
        // Within 2^53 the RFC 8785 form is kept (existing locks keep their digests).
        let small = schema("9007199254740992");
        assert!(!canonical_bytes(&definition_of(&small)).starts_with(EXACT_PREFIX));
        assert!(canonical_bytes(&definition_of(&a)).starts_with(EXACT_PREFIX));
    }

    /// An integer beyond 2^53 in any pinned field (not only `inputSchema`) is digested
    /// exactly by [`tool_digest`] as by [`digest`]: two tools that differ only there differ.
    #[test]
    fn integers_beyond_2_pow_53_are_digested_exactly_in_every_pinned_field() {
        let with = |field: &str, n: &str| {
            let value = match field {
                "annotations" => format!(r#"{{"x-limit": {n}}}"#),
                _ => format!(r#"{{"type": "object", "maximum": {n}}}"#),
            };
            let text = format!(r#"{{"name": "t", "{field}": {value}}}"#);
            tool(serde_json::from_str(&text).unwrap())
        };
        // Inside an array too.
        let listed = |n: &str| {
            let text = format!(r#"{{"name": "t", "inputSchema": {{"enum": [1, {n}]}}}}"#);
            tool(serde_json::from_str(&text).unwrap())
        };
        let (a, b) = (listed("9007199254740993"), listed("9007199254740992"));
        assert_ne!(tool_digest(&a), tool_digest(&b));
        assert_ne!(digest(&definition_of(&a)), digest(&definition_of(&b)));
        for field in ["outputSchema", "execution", "annotations"] {
            let (a, b) = (
                with(field, "9007199254740993"),
                with(field, "9007199254740992"),
            );
            assert_ne!(tool_digest(&a), tool_digest(&b), "{field}");
            assert_eq!(tool_digest(&a), digest(&definition_of(&a)), "{field}");
            assert_eq!(tool_digest(&b), digest(&definition_of(&b)), "{field}");
        }
    }

    /// A known answer: the digest of a fixed definition, so a change to the canonical form or
    /// to how the hash is written (nibble order, case) cannot pass unseen.
    #[test]
    fn the_digest_of_a_fixed_definition_is_known() {
        let t = tool(json!({"name": "add", "description": "Adds two numbers.",
            "inputSchema": {"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}, "required": ["a", "b"]}}));
        let canonical = String::from_utf8(canonical_bytes(&definition_of(&t))).unwrap();
        assert_eq!(
            canonical,
            r#"{"description":"Adds two numbers.","inputSchema":{"properties":{"a":{"type":"number"},"b":{"type":"number"}},"required":["a","b"],"type":"object"},"name":"add"}"#
        );
        assert_eq!(tool_digest(&t), KNOWN);
        assert_eq!(digest(&definition_of(&t)), KNOWN);
    }

    // sha256 of the canonical text above, by Python's hashlib.
    const KNOWN: &str = "b72bb5c5d6900ad1a587bd4fea3feff53c1187d5b6379f71d5ecaa1de1ee381c";
}
