//! JSON written by hand for the hot path: a `tools/call`'s parameters, byte for byte as
//! serde_json's compact serializer writes them.
//!
//! serde_json escapes every string through a byte-by-byte table and reaches each value through
//! its `Serializer` machinery: for the five or so short strings of a call's parameters (the
//! tool's name, the argument keys and values) that was ~750 instructions of ~15 000 a call
//! (benches/README.md, "Round 4, session 6"). Here a string with nothing to escape (the usual
//! name, key or value) is copied between its quotes after one plain scan; anything else, and
//! every number, still goes through serde_json, so the output cannot differ (the tests compare
//! both on every kind of value).

use std::io;

use serde_json::{Map, Value};

/// Whether serde_json writes `b` escaped inside a string: the control characters, `"` and `\`
/// (nothing else: not `/`, not DEL, not non-ASCII).
#[inline]
const fn escaped(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// `s` as a JSON string.
pub(crate) fn str(buf: &mut Vec<u8>, s: &str) -> io::Result<()> {
    if s.bytes().any(escaped) {
        return Ok(serde_json::to_writer(&mut *buf, s)?);
    }
    buf.reserve(s.len() + 2);
    buf.push(b'"');
    buf.extend_from_slice(s.as_bytes());
    buf.push(b'"');
    Ok(())
}

/// `map` as a JSON object, its entries in the map's order.
pub(crate) fn map(buf: &mut Vec<u8>, map: &Map<String, Value>) -> io::Result<()> {
    buf.push(b'{');
    for (i, (key, v)) in map.iter().enumerate() {
        if i > 0 {
            buf.push(b',');
        }
        str(buf, key)?;
        buf.push(b':');
        value(buf, v)?;
    }
    buf.push(b'}');
    Ok(())
}

/// `v` as JSON.
pub(crate) fn value(buf: &mut Vec<u8>, v: &Value) -> io::Result<()> {
    match v {
        Value::Null => buf.extend_from_slice(b"null"),
        Value::Bool(true) => buf.extend_from_slice(b"true"),
        Value::Bool(false) => buf.extend_from_slice(b"false"),
        Value::Number(n) => serde_json::to_writer(&mut *buf, n)?,
        Value::String(s) => str(buf, s)?,
        Value::Array(items) => {
            buf.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    buf.push(b',');
                }
                value(buf, item)?;
            }
            buf.push(b']');
        }
        Value::Object(m) => map(buf, m)?,
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn by_hand(v: &Value) -> Vec<u8> {
        let mut buf = b"kept".to_vec();
        value(&mut buf, v).unwrap();
        assert_eq!(&buf[..4], b"kept", "what was in the buffer stays");
        buf.split_off(4)
    }

    #[test]
    fn every_kind_of_value_is_written_as_serde_json_writes_it() {
        let strings = [
            "",
            "hello",
            "h\"i",
            "back\\slash",
            "line\nfeed",
            "\u{0}\u{1}\u{1f}",
            "\u{7f} del stays",
            "slash / stays",
            "é ü 漢字 😀",
            "\u{2028}\u{2029}",
            "tab\tand \r return",
        ];
        let mut values: Vec<Value> = strings.iter().map(|s| json!(s)).collect();
        values.extend([
            json!(null),
            json!(true),
            json!(false),
            json!(0),
            json!(-7),
            json!(u64::MAX),
            json!(i64::MIN),
            json!(1.5),
            json!(-0.0),
            json!(1e300),
            json!(0.1),
            json!([]),
            json!({}),
            json!([1, "two", null, [3, [4]], {"five": 5}]),
            json!({"a\"b": {"c\nd": ["é", 1.25, false]}, "": "", "z": {}}),
        ]);
        let all = Value::Array(values.clone());
        values.push(all.clone());
        values.push(json!({ "nested": all }));
        for v in &values {
            assert_eq!(
                by_hand(v),
                serde_json::to_vec(v).unwrap(),
                "{}",
                v.to_string().escape_debug()
            );
        }
        for s in strings {
            let mut buf = Vec::new();
            str(&mut buf, s).unwrap();
            assert_eq!(buf, serde_json::to_vec(s).unwrap(), "{}", s.escape_debug());
        }
    }

    #[test]
    fn a_map_keeps_its_order_and_escapes_its_keys() {
        let mut m = Map::new();
        m.insert("q\"uote".into(), json!(1));
        m.insert("plain".into(), json!("v\u{2}"));
        m.insert("list".into(), json!([{"k": "v"}]));
        let mut buf = Vec::new();
        map(&mut buf, &m).unwrap();
        assert_eq!(buf, serde_json::to_vec(&m).unwrap());
    }
}
