//! The pinned form of a tool's definition and its digest: the fields an agent reads as
//! instructions, canonicalized by RFC 8785 (JSON Canonicalization Scheme) and hashed with
//! SHA-256, so that the same definition has the same digest whatever order or spacing the
//! server sent it in.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use crate::protocol::ToolInfo;

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
pub fn canonical_bytes(value: &Value) -> Vec<u8> {
    // A `serde_json::Value` holds no NaN or infinity, the only values RFC 8785 cannot write;
    // should the canonicalizer refuse one all the same, its plain serialization (sorted keys)
    // still gives a stable digest.
    serde_json_canonicalizer::to_vec(value)
        .or_else(|_| serde_json::to_vec(value))
        .unwrap_or_default()
}

/// The SHA-256 of the canonical form of `definition`, as 64 lowercase hex digits.
pub fn digest(definition: &Value) -> String {
    let hash = Sha256::digest(canonical_bytes(definition));
    let mut hex = String::with_capacity(64);
    for byte in hash {
        hex.push(char::from_digit(u32::from(byte >> 4), 16).unwrap_or('0'));
        hex.push(char::from_digit(u32::from(byte & 0xf), 16).unwrap_or('0'));
    }
    hex
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
            let changed = definition_of(&tool(changed));
            assert_ne!(digest(&da), digest(&changed), "{field}");
        }
    }

    #[test]
    fn annotations_the_client_does_not_know_are_pinned_too() {
        let a = definition_of(&tool(json!({"name": "t", "annotations": {"x-scope": "a"}})));
        let b = definition_of(&tool(json!({"name": "t", "annotations": {"x-scope": "b"}})));
        assert_ne!(digest(&a), digest(&b));
    }
}
