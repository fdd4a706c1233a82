//! A traced request: its W3C trace context (feature `otel`, see [`crate::telemetry`]) spliced
//! into `params._meta` of the bytes `write_request` wrote, beside what is there and never
//! replacing an entry. Only a request whose session propagates comes here; the others keep the
//! hand-written encoding untouched.

/// The request `plain` (as `write_request` wrote it) with the trace context `entries` added
/// to its `params._meta`, which are created when absent; an entry already there is never
/// replaced. Only a traced request (an OpenTelemetry layer and propagator installed) comes
/// here. Everything but the objects on the way to `_meta` is copied as it was written (keys in
/// their order, numbers and strings byte for byte, any depth); a request that is not what
/// this expects (params that are not an object) goes out as it was, untraced.
pub(super) fn with_trace_context(plain: &[u8], entries: &[(String, String)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(plain.len() + 160);
    let spliced = with_entry(&mut out, plain, "params", &mut |out, params| {
        with_entry(out, params.unwrap_or(b"{}"), "_meta", &mut |out, meta| {
            let meta = meta.unwrap_or(b"{}");
            let fields = object_fields(meta)?;
            let mut rest = entries
                .iter()
                .filter(|(key, _)| !fields.iter().any(|(k, _)| k == key))
                .peekable();
            if rest.peek().is_none() {
                out.extend_from_slice(meta);
                return Ok(());
            }
            out.push(b'{');
            let mut first = true;
            for (key, value) in &fields {
                put_key(out, &mut first, key)?;
                out.extend_from_slice(value.get().as_bytes());
            }
            for (key, value) in rest {
                put_key(out, &mut first, key)?;
                serde_json::to_writer(&mut *out, value)?;
            }
            out.push(b'}');
            Ok(())
        })
    });
    match spliced {
        Ok(()) => out,
        Err(e) => {
            tracing::debug!(error = %e, "trace context not added to a request");
            plain.to_vec()
        }
    }
}

/// The fields of the JSON object `raw`, in order, each value as its raw text.
fn object_fields(raw: &[u8]) -> serde_json::Result<Vec<(String, &serde_json::value::RawValue)>> {
    struct Fields;
    impl<'de> serde::de::Visitor<'de> for Fields {
        type Value = Vec<(String, &'de serde_json::value::RawValue)>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a JSON object")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(
            self,
            mut map: A,
        ) -> Result<Self::Value, A::Error> {
            let mut fields = Vec::new();
            while let Some(field) = map.next_entry()? {
                fields.push(field);
            }
            Ok(fields)
        }
    }
    let mut de = serde_json::Deserializer::from_slice(raw);
    let fields = serde::Deserializer::deserialize_map(&mut de, Fields)?;
    de.end()?;
    Ok(fields)
}

/// Writes a field's new value, given its raw text (`None`: the field is absent).
type Rewrite<'a> = dyn FnMut(&mut Vec<u8>, Option<&[u8]>) -> serde_json::Result<()> + 'a;

/// Writes the JSON object `raw` with the value of `key` rewritten by `rewrite` (given its raw
/// text, or `None` when the key is absent: then it is added at the end).
fn with_entry(
    out: &mut Vec<u8>,
    raw: &[u8],
    key: &str,
    rewrite: &mut Rewrite<'_>,
) -> serde_json::Result<()> {
    let fields = object_fields(raw)?;
    out.push(b'{');
    let mut first = true;
    let mut found = false;
    for (k, value) in &fields {
        put_key(out, &mut first, k)?;
        if k == key && !found {
            found = true;
            rewrite(out, Some(value.get().as_bytes()))?;
        } else {
            out.extend_from_slice(value.get().as_bytes());
        }
    }
    if !found {
        put_key(out, &mut first, key)?;
        rewrite(out, None)?;
    }
    out.push(b'}');
    Ok(())
}

/// Writes `,"key":` (no comma before the first).
fn put_key(out: &mut Vec<u8>, first: &mut bool, key: &str) -> serde_json::Result<()> {
    if !std::mem::take(first) {
        out.push(b',');
    }
    serde_json::to_writer(&mut *out, key)?;
    out.push(b':');
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const PARENT: &str = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

    fn traced(request: &str) -> String {
        let entries = [
            ("traceparent".to_owned(), PARENT.to_owned()),
            ("tracestate".to_owned(), "k=v".to_owned()),
        ];
        String::from_utf8(with_trace_context(request.as_bytes(), &entries)).unwrap()
    }

    #[test]
    fn the_trace_context_joins_params_meta_and_never_replaces_an_entry() {
        // Beside the progress token, after an entry of the same name kept as it was; the rest
        // byte for byte (key order, a float, an escape).
        assert_eq!(
            traced(
                r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"e\"cho","arguments":{"x":0.30000000000000004},"_meta":{"progressToken":3,"traceparent":"theirs"}}}"#
            ),
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"e\"cho","arguments":{"x":0.30000000000000004},"_meta":{"progressToken":3,"traceparent":"theirs","tracestate":"k=v"}}}"#
        );
        // A request with no params (a legacy first tools/list page) gains them.
        assert_eq!(
            traced(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            format!(
                r#"{{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{{"_meta":{{"traceparent":"{PARENT}","tracestate":"k=v"}}}}}}"#
            )
        );
        // Params without `_meta` gain it after their own keys.
        assert_eq!(
            traced(
                r#"{"jsonrpc":"2.0","id":2,"method":"initialize","params":{"protocolVersion":"2025-11-25"}}"#
            ),
            format!(
                r#"{{"jsonrpc":"2.0","id":2,"method":"initialize","params":{{"protocolVersion":"2025-11-25","_meta":{{"traceparent":"{PARENT}","tracestate":"k=v"}}}}}}"#
            )
        );
        // Every entry already there: the request as it was.
        let full = format!(
            r#"{{"id":1,"params":{{"_meta":{{"tracestate":"a","traceparent":"{PARENT}"}}}}}}"#
        );
        assert_eq!(traced(&full), full);
        // Arguments deeper than serde_json's recursion limit are copied, not parsed.
        let deep = format!(
            r#"{{"id":1,"params":{{"arguments":{}1{}}}}}"#,
            "[".repeat(500),
            "]".repeat(500)
        );
        assert!(traced(&deep).contains(PARENT));
        assert!(traced(&deep).contains(&"[".repeat(500)));
        // Params that are not an object: untraced, as they were.
        let odd = r#"{"id":1,"params":[1,2]}"#;
        assert_eq!(traced(odd), odd);
    }
}
