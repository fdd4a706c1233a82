use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use tower::{service_fn, ServiceExt};

use super::*;
use crate::client::ToolCall;
use crate::protocol::ToolInfo;

fn tool(input: Value, output: Option<Value>) -> ToolInfo {
    let mut t = json!({"name": "t", "inputSchema": input});
    if let Some(o) = output {
        t["outputSchema"] = o;
    }
    serde_json::from_value(t).unwrap()
}

fn sum_schema() -> Value {
    json!({
        "type": "object",
        "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
        "required": ["a", "b"]
    })
}

fn args(v: Value) -> Option<Arc<Map<String, Value>>> {
    match v {
        Value::Object(m) => Some(Arc::new(m)),
        _ => None,
    }
}

fn check_args(schemas: &ToolSchemas, v: Value) -> Checked {
    schemas.check_arguments(&mut args(v))
}

#[test]
fn arguments_of_the_wrong_type_name_the_pointer_and_the_keyword() {
    let s = ToolSchemas::compile("srv", &tool(sum_schema(), None), Validation::Both);
    assert!(s.unvalidated().is_empty());
    assert_eq!(check_args(&s, json!({"a": 1, "b": 2})), Ok(()));
    let (found, more) = check_args(&s, json!({"a": "one", "b": 2})).unwrap_err();
    assert_eq!(more, 0);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].pointer, "/a");
    assert_eq!(found[0].keyword, "type");
    assert!(found[0].message.contains("\"one\""), "{}", found[0]);
}

#[test]
fn every_failure_is_reported_and_no_arguments_count_as_an_empty_object() {
    let s = ToolSchemas::compile("srv", &tool(sum_schema(), None), Validation::Both);
    let (found, _) = check_args(&s, json!({"a": "one", "b": true})).unwrap_err();
    let mut at: Vec<_> = found
        .iter()
        .map(|v| (v.pointer.as_str(), v.keyword.as_str()))
        .collect();
    at.sort();
    assert_eq!(at, [("/a", "type"), ("/b", "type")]);
    let (found, _) = s.check_arguments(&mut None).unwrap_err();
    assert_eq!(found[0].pointer, "");
    assert_eq!(found[0].keyword, "required");
}

#[test]
fn violations_are_bounded_and_the_rest_counted() {
    let names: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
    let props: Map<String, Value> = names
        .iter()
        .map(|n| (n.clone(), json!({"type": "string"})))
        .collect();
    let schema = json!({"type": "object", "properties": props});
    let s = ToolSchemas::compile("srv", &tool(schema, None), Validation::Both);
    let bad: Map<String, Value> = names.iter().map(|n| (n.clone(), json!(1))).collect();
    let (found, more) = check_args(&s, Value::Object(bad)).unwrap_err();
    assert_eq!((found.len(), more), (MAX_VIOLATIONS, 20 - MAX_VIOLATIONS));
}

/// The bound itself: exactly [`MAX_VIOLATIONS`] failures are all kept with none counted over,
/// one more is counted.
#[test]
fn violations_at_and_one_past_the_bound() {
    for (count, over) in [(MAX_VIOLATIONS, 0), (MAX_VIOLATIONS + 1, 1)] {
        let names: Vec<String> = (0..count).map(|i| format!("p{i}")).collect();
        let props: Map<String, Value> = names
            .iter()
            .map(|n| (n.clone(), json!({"type": "string"})))
            .collect();
        let schema = json!({"type": "object", "properties": props});
        let s = ToolSchemas::compile("srv", &tool(schema, None), Validation::Both);
        let bad: Map<String, Value> = names.iter().map(|n| (n.clone(), json!(1))).collect();
        let (found, more) = check_args(&s, Value::Object(bad)).unwrap_err();
        assert_eq!(
            (found.len(), more),
            (MAX_VIOLATIONS, over),
            "{count} failures"
        );
    }
}

#[test]
fn the_arguments_are_checked_in_place_not_copied() {
    let s = ToolSchemas::compile("srv", &tool(sum_schema(), None), Validation::Both);
    let mut a = args(json!({"a": 1, "b": 2}));
    let before = Arc::as_ptr(a.as_ref().unwrap());
    assert_eq!(s.check_arguments(&mut a), Ok(()));
    assert_eq!(
        Arc::as_ptr(a.as_ref().unwrap()),
        before,
        "the same allocation"
    );
    assert_eq!(
        Value::Object((*a.unwrap()).clone()),
        json!({"a": 1, "b": 2})
    );
    // Shared with another owner: the other's copy is left alone.
    let shared = args(json!({"a": "x", "b": 2})).unwrap();
    let mut mine = Some(Arc::clone(&shared));
    assert!(s.check_arguments(&mut mine).is_err());
    assert_eq!(shared["a"], "x");
    assert_eq!(mine.unwrap()["a"], "x");
}

#[test]
fn draft_2020_12_by_default_and_dollar_schema_honoured() {
    // Array-form `items` is draft 7's tuple validation; in 2020-12 it is not a schema.
    let tuple = json!({
        "type": "object",
        "properties": {"list": {"type": "array", "items": [{"type": "string"}]}}
    });
    let root7 = json!({
        "$schema": "http://json-schema.org/draft-07/schema#",
        "type": "object",
        "properties": {"list": {"type": "array", "items": [{"type": "string"}]}}
    });
    let s7 = ToolSchemas::compile("srv", &tool(root7, None), Validation::Both);
    assert!(s7.unvalidated().is_empty(), "{:?}", s7.unvalidated());
    let (found, _) = check_args(&s7, json!({"list": [1]})).unwrap_err();
    assert_eq!(found[0].pointer, "/list/0");
    assert_eq!(found[0].keyword, "type");
    assert_eq!(check_args(&s7, json!({"list": ["x", 1]})), Ok(()));
    // Without `$schema` the same schema is 2020-12's, where it does not compile.
    let s2020 = ToolSchemas::compile("srv", &tool(tuple, None), Validation::Both);
    assert_eq!(s2020.unvalidated().len(), 1, "{:?}", s2020.unvalidated());
    assert!(s2020.unvalidated()[0].starts_with("inputSchema: "));
    // 2020-12's own keywords work without `$schema`.
    let prefix =
        json!({"type": "object", "properties": {"p": {"prefixItems": [{"type": "string"}]}}});
    let s = ToolSchemas::compile("srv", &tool(prefix, None), Validation::Both);
    assert!(check_args(&s, json!({"p": [1]})).is_err());
}

#[test]
fn a_remote_or_file_ref_or_an_invalid_schema_leaves_the_tool_unvalidated() {
    for (schema, what) in [
        (
            json!({"$ref": "https://example.com/never-fetched.json"}),
            "remote",
        ),
        (json!({"$ref": "file:///etc/passwd"}), "file"),
        (json!({"type": 12}), "invalid"),
    ] {
        let s = ToolSchemas::compile("srv", &tool(schema, None), Validation::Both);
        assert_eq!(s.unvalidated().len(), 1, "{what}: {s:?}");
        // Calls pass unchecked.
        assert_eq!(check_args(&s, json!({"anything": 1})), Ok(()), "{what}");
    }
    // A local `$ref` is fine.
    let local = json!({
        "$defs": {"n": {"type": "integer"}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/n"}}
    });
    let s = ToolSchemas::compile("srv", &tool(local, None), Validation::Both);
    assert!(s.unvalidated().is_empty(), "{s:?}");
    assert_eq!(
        check_args(&s, json!({"n": "x"})).unwrap_err().0[0].pointer,
        "/n"
    );
}

#[test]
fn results_are_checked_unless_a_tool_error_and_must_carry_structured_content() {
    let out =
        json!({"type": "object", "properties": {"sum": {"type": "number"}}, "required": ["sum"]});
    let s = ToolSchemas::compile(
        "srv",
        &tool(json!({"type": "object"}), Some(out)),
        Validation::Both,
    );
    let mut r = ToolResult::text("3");
    r.structured_content = Some(json!({"sum": 3}));
    assert_eq!(s.check_result(&r), Ok(()));
    r.structured_content = Some(json!({"sum": "three"}));
    let (found, _) = s.check_result(&r).unwrap_err();
    assert_eq!(
        (found[0].pointer.as_str(), found[0].keyword.as_str()),
        ("/sum", "type")
    );
    // A server's values are never quoted (they may be what it should not have sent).
    r.structured_content = Some(json!({"sum": "tok-5ecret-value"}));
    let (found, _) = s.check_result(&r).unwrap_err();
    assert!(!found[0].message.contains("5ecret"), "{}", found[0].message);
    assert_eq!(found[0].message, "the value is not of type \"number\"");
    r.structured_content = None;
    let (found, _) = s.check_result(&r).unwrap_err();
    assert_eq!(found[0].keyword, "structuredContent");
    r.is_error = true;
    assert_eq!(s.check_result(&r), Ok(()), "tool errors are not checked");
    // No output schema: nothing to check.
    let plain = ToolSchemas::compile(
        "srv",
        &tool(json!({"type": "object"}), None),
        Validation::Both,
    );
    assert_eq!(plain.check_result(&ToolResult::text("x")), Ok(()));
}

#[test]
fn the_setting_compiles_only_what_it_checks() {
    let t = tool(json!({"type": 12}), Some(json!({"type": 13})));
    assert_eq!(
        ToolSchemas::compile("s", &t, Validation::Both)
            .unvalidated()
            .len(),
        2
    );
    let a = ToolSchemas::compile("s", &t, Validation::Arguments);
    assert_eq!(a.unvalidated().len(), 1);
    assert!(a.unvalidated()[0].starts_with("inputSchema"));
    let r = ToolSchemas::compile("s", &t, Validation::Results);
    assert_eq!(r.unvalidated().len(), 1);
    assert!(r.unvalidated()[0].starts_with("outputSchema"));
}

#[test]
fn a_long_message_is_cut_at_a_char_boundary_on_one_line() {
    let long = format!("{}\n{}", "é".repeat(150), "x".repeat(100));
    let c = cut(&long);
    assert!(c.len() <= MAX_MESSAGE + '…'.len_utf8(), "{}", c.len());
    assert!(!c.contains('\n'));
    assert!(c.ends_with('…'));
    assert_eq!(cut("short"), "short");
    // 150 two-byte characters: the bound falls between two of them.
    assert_eq!(c, format!("{}…", "é".repeat(MAX_MESSAGE / 2)));
}

/// The cut's boundaries: a message of exactly the bound is whole, one byte more is cut, and a
/// bound inside a character goes back to the boundary before it; controls become spaces.
#[test]
fn a_message_is_cut_exactly_past_its_bound_and_back_to_a_char_boundary() {
    let at = "x".repeat(MAX_MESSAGE);
    assert_eq!(cut(&at), at);
    let over = "x".repeat(MAX_MESSAGE + 1);
    assert_eq!(cut(&over), format!("{at}…"));
    // One byte then two-byte characters: byte MAX_MESSAGE is inside one of them.
    let odd = format!("x{}", "é".repeat(MAX_MESSAGE));
    assert_eq!(
        cut(&odd),
        format!("x{}…", "é".repeat((MAX_MESSAGE - 1) / 2))
    );
    assert_eq!(cut("a\nb\tc\u{7f}"), "a b c ");
}

async fn through(
    validation: Validation,
    call: ToolCall,
    answer: ToolResult,
) -> (Result<ToolResult, BoxError>, usize) {
    let reached = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&reached);
    let inner = service_fn(move |_c: ToolCall| {
        counter.fetch_add(1, Ordering::SeqCst);
        let answer = answer.clone();
        async move { Ok::<_, BoxError>(answer) }
    });
    let svc = tower::Layer::layer(
        &kaged_mcp_layers::validate::ValidateLayer::new(validation),
        inner,
    );
    let out = svc.oneshot(call).await;
    (out, reached.load(Ordering::SeqCst))
}

#[tokio::test]
async fn the_layer_refuses_bad_arguments_before_the_server_and_checks_results() {
    let out = json!({"type": "object", "required": ["sum"]});
    let schemas = Arc::new(ToolSchemas::compile(
        "srv",
        &tool(sum_schema(), Some(out)),
        Validation::Both,
    ));
    let bad = ToolCall::new("sum")
        .with_json_arguments(json!({"a": "one", "b": 2}))
        .with_schemas(Arc::clone(&schemas));
    let good = ToolCall::new("sum")
        .with_json_arguments(json!({"a": 1, "b": 2}))
        .with_schemas(Arc::clone(&schemas));
    let mut ok = ToolResult::text("3");
    ok.structured_content = Some(json!({"sum": 3}));
    let wrong = ToolResult::text("3");

    let (r, reached) = through(Validation::Both, bad.clone(), ok.clone()).await;
    let e = r.unwrap_err().downcast::<SchemaViolation>().unwrap();
    assert_eq!((e.side, reached), (Side::Arguments, 0), "not sent");
    assert_eq!(e.to_string(), "server `srv`: tool `sum`: the arguments break the tool's inputSchema (not sent): /a: type: \"one\" is not of type \"number\"");

    let (r, reached) = through(Validation::Both, good.clone(), wrong.clone()).await;
    let e = r.unwrap_err().downcast::<SchemaViolation>().unwrap();
    assert_eq!((e.side, reached), (Side::Result, 1));

    let (r, _) = through(Validation::Both, good.clone(), ok.clone()).await;
    assert_eq!(r.unwrap().structured_content, Some(json!({"sum": 3})));

    // `arguments`: results pass; `results`: arguments pass; `off`: both.
    assert!(through(Validation::Arguments, good.clone(), wrong.clone())
        .await
        .0
        .is_ok());
    assert_eq!(
        through(Validation::Results, bad.clone(), ok.clone())
            .await
            .1,
        1
    );
    let (r, reached) = through(Validation::Off, bad.clone(), wrong.clone()).await;
    assert!(r.is_ok() && reached == 1);
    // A call without schemas is not checked.
    assert!(through(Validation::Both, ToolCall::new("sum"), wrong)
        .await
        .0
        .is_ok());
}

#[test]
fn a_required_property_with_a_default_is_not_demanded_and_one_without_still_is() {
    // As @playwright/mcp 0.0.86 lists browser_take_screenshot: zod's `.default()` makes
    // `scale` required, and the server fills it in when it is missing.
    let schema = json!({
        "type": "object",
        "properties": {
            "type": {"type": "string", "enum": ["png", "jpeg"], "default": "png"},
            "scale": {"type": "string", "enum": ["css", "device"], "default": "css"},
            "url": {"type": "string"},
            "nested": {"type": "object", "properties": {"level": {"type": "string", "default": "info"}},
                       "required": ["level"]}
        },
        "required": ["scale", "url"]
    });
    let schemas = ToolSchemas::compile("playwright", &tool(schema.clone(), None), Validation::Both);
    let mut ok = args(json!({"type": "png", "url": "https://example.com", "nested": {}}));
    assert!(schemas.check_arguments(&mut ok).is_ok());
    let mut missing_url = args(json!({"type": "png"}));
    let (violations, _) = schemas.check_arguments(&mut missing_url).unwrap_err();
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert!(violations[0].message.contains("\"url\""), "{violations:?}");
    // The schema the tool lists is left as it was.
    assert_eq!(schema["required"], json!(["scale", "url"]));
    // Nothing to relax: the schema is used as it is.
    assert!(matches!(
        without_defaulted_required(&sum_schema()),
        std::borrow::Cow::Borrowed(_)
    ));
}

#[test]
fn a_default_value_that_looks_like_a_schema_is_left_as_listed() {
    // Only subschemas are relaxed: data under `default` keeps its own `required` list.
    let schema = json!({
        "type": "object",
        "properties": {"opts": {"type": "object",
            "default": {"properties": {"a": {"default": 1}}, "required": ["a"]}}},
        "required": ["opts"]
    });
    let relaxed = without_defaulted_required(&schema);
    assert_eq!(
        relaxed["properties"]["opts"]["default"]["required"],
        json!(["a"])
    );
    // `opts` declares a default, so it is no longer required at the root.
    assert_eq!(relaxed["required"], json!([]));
}
