//! What schema validation costs (issue 25), each figure against the same thing without it,
//! measured in the same run.
//!
//! Per call (criterion, current-thread runtime, a bare in-memory server that answers at once):
//! - `layer/…`: the validation layer alone over the bare server. `bare` is the server alone;
//!   `no_schemas` a call without schemas through the layer (what an unvalidated tool pays);
//!   `small` the arguments and the structured result of a small tool checked (an object schema
//!   of 5 properties with types, one `enum` and one `required`; a result schema of 3
//!   properties); `small/arguments_only` as `validate = "arguments"`.
//! - `stack/…`: the whole standard stack (`StackBuilder`), `validate = "off"` against `both`,
//!   with the same small tool.
//! - `result_64k/…`: a 64 KiB `structuredContent` (an array of 512 objects) checked against its
//!   schema, against the same call with `validate = "arguments"`.
//!
//! Every call is built afresh (its arguments a new map), as the registry builds it, so the
//! arguments are checked in place in both variants.
//!
//! Then, once (printed, not criterion): compiling the validators of 500 tools (16 servers' worth
//! of catalog: each tool an object schema of 8 properties, nested objects, arrays, enums,
//! patterns and a `$defs`/`$ref`, and an output schema), with the time it takes and how much
//! the process's resident memory grows (`VmRSS`; the tools' JSON is parsed before).
//!
//! Run with `cargo bench --bench validate -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use kaged_mcp::client::ToolCall;
use kaged_mcp::protocol::{ToolInfo, ToolResult};
use kaged_mcp::stack::{StackBuilder, StackSettings};
use kaged_mcp::validate::{ToolSchemas, Validation};
use kaged_mcp_layers::validate::ValidateLayer;
use serde_json::{json, Value};
use tokio::runtime::Runtime;
use tower::{service_fn, BoxError, Layer, Service, ServiceExt};

/// The process's resident memory, in KiB (`VmRSS`).
fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

fn runtime() -> Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a current-thread tokio runtime")
}

/// The small tool: 5 typed properties, one `enum`, one `required`; a 3-property result.
fn small_tool() -> ToolInfo {
    serde_json::from_value(json!({
        "name": "search",
        "inputSchema": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "offset": {"type": "integer"},
                "order": {"enum": ["asc", "desc"]},
                "exact": {"type": "boolean"}
            },
            "required": ["query"]
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "total": {"type": "integer"},
                "took_ms": {"type": "number"},
                "first": {"type": "string"}
            },
            "required": ["total"]
        }
    }))
    .expect("a valid tool")
}

fn small_call(schemas: Option<&Arc<ToolSchemas>>) -> ToolCall {
    let call = ToolCall::new("search").with_json_arguments(json!({
        "query": "kaged", "limit": 10, "offset": 0, "order": "asc", "exact": false
    }));
    match schemas {
        Some(s) => call.with_schemas(Arc::clone(s)),
        None => call,
    }
}

fn small_result() -> ToolResult {
    let mut r = ToolResult::text("3 hits");
    r.structured_content = Some(json!({"total": 3, "took_ms": 1.5, "first": "kaged-mcp"}));
    r
}

/// The 64 KiB result's schema: an object holding an array of records.
fn big_tool() -> ToolInfo {
    serde_json::from_value(json!({
        "name": "dump",
        "inputSchema": {"type": "object"},
        "outputSchema": {
            "type": "object",
            "properties": {"rows": {"type": "array", "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "integer", "minimum": 0},
                    "name": {"type": "string", "maxLength": 64},
                    "score": {"type": "number"},
                    "tags": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["id", "name"]
            }}},
            "required": ["rows"]
        }
    }))
    .expect("a valid tool")
}

fn big_result() -> ToolResult {
    let rows: Vec<Value> = (0..512)
        .map(|i| json!({"id": i, "name": format!("row number {i:05}"), "score": i as f64 / 7.0, "tags": ["a", "bb", "ccc"]}))
        .collect();
    let mut r = ToolResult::text("rows");
    r.structured_content = Some(json!({ "rows": rows }));
    r
}

/// Times `iters` calls through `svc`, each built by `make`.
fn bench<S>(
    c: &mut Criterion,
    rt: &Runtime,
    name: &str,
    svc: S,
    make: impl Fn() -> ToolCall + Clone,
) where
    S: Service<ToolCall, Response = ToolResult, Error = BoxError> + Clone,
{
    c.bench_function(name, |b| {
        b.to_async(rt).iter_custom(|iters| {
            let mut svc = svc.clone();
            let make = make.clone();
            async move {
                let start = Instant::now();
                for _ in 0..iters {
                    let ready = svc.ready().await.expect("always ready");
                    black_box(ready.call(make()).await.expect("the call succeeds"));
                }
                start.elapsed()
            }
        });
    });
}

fn answering(
    result: ToolResult,
) -> impl Service<ToolCall, Response = ToolResult, Error = BoxError, Future: Send>
       + Clone
       + Send
       + Sync
       + 'static {
    service_fn(move |_: ToolCall| {
        let r = result.clone();
        async move { Ok::<_, BoxError>(r) }
    })
}

fn per_call(c: &mut Criterion) {
    let rt = runtime();
    let schemas = Arc::new(ToolSchemas::compile(
        "bench",
        &small_tool(),
        Validation::Both,
    ));
    let bare = answering(small_result());
    let layer = |v: Validation| ValidateLayer::new(v).layer(bare.clone());

    bench(c, &rt, "layer/bare", bare.clone(), || small_call(None));
    bench(c, &rt, "layer/no_schemas", layer(Validation::Both), || {
        small_call(None)
    });
    let s = schemas.clone();
    bench(c, &rt, "layer/small", layer(Validation::Both), move || {
        small_call(Some(&s))
    });
    let s = schemas.clone();
    bench(
        c,
        &rt,
        "layer/small/arguments_only",
        layer(Validation::Arguments),
        move || small_call(Some(&s)),
    );

    let stack = |v: Validation| {
        StackBuilder::new(StackSettings::new("bench").validate(v)).build(bare.clone())
    };
    let s = schemas.clone();
    bench(
        c,
        &rt,
        "stack/validate_off",
        stack(Validation::Off),
        move || small_call(Some(&s)),
    );
    let s = schemas.clone();
    bench(
        c,
        &rt,
        "stack/validate_both",
        stack(Validation::Both),
        move || small_call(Some(&s)),
    );

    let big = Arc::new(ToolSchemas::compile("bench", &big_tool(), Validation::Both));
    let big_bare = answering(big_result());
    let big_layer = |v: Validation| ValidateLayer::new(v).layer(big_bare.clone());
    let make = move || ToolCall::new("dump").with_schemas(Arc::clone(&big));
    bench(
        c,
        &rt,
        "result_64k/arguments_only",
        big_layer(Validation::Arguments),
        make.clone(),
    );
    bench(c, &rt, "result_64k/both", big_layer(Validation::Both), make);
}

/// Tool `i` of the 500: 8 properties, nested objects, arrays, enums, a pattern, a `$ref`.
fn catalog_tool(i: usize) -> ToolInfo {
    serde_json::from_value(json!({
        "name": format!("tool_{i}"),
        "inputSchema": {
            "type": "object",
            "$defs": {"range": {"type": "object", "properties": {
                "from": {"type": "string", "format": "date"},
                "to": {"type": "string", "format": "date"}}, "required": ["from"]}},
            "properties": {
                "id": {"type": "string", "pattern": "^[a-z0-9-]{1,64}$"},
                "kind": {"enum": ["issue", "pull", "discussion", format!("k{i}")]},
                "labels": {"type": "array", "items": {"type": "string"}, "maxItems": 20},
                "range": {"$ref": "#/$defs/range"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "owner": {"type": "object", "properties": {
                    "login": {"type": "string"}, "id": {"type": "integer"}}},
                "draft": {"type": "boolean"},
                "body": {"type": "string", "maxLength": 65536}
            },
            "required": ["id", "kind"],
            "additionalProperties": false
        },
        "outputSchema": {
            "type": "object",
            "properties": {
                "items": {"type": "array", "items": {"type": "object", "properties": {
                    "id": {"type": "string"}, "title": {"type": "string"}}}},
                "next": {"type": ["string", "null"]}
            },
            "required": ["items"]
        }
    }))
    .expect("a valid tool")
}

fn compile_500(c: &mut Criterion) {
    let tools: Vec<ToolInfo> = (0..500).map(catalog_tool).collect();
    let before = rss_kib();
    let start = Instant::now();
    let compiled: Vec<ToolSchemas> = tools
        .iter()
        .map(|t| ToolSchemas::compile("bench", t, Validation::Both))
        .collect();
    let took = start.elapsed();
    let grown = rss_kib().saturating_sub(before);
    assert!(compiled.iter().all(|s| s.unvalidated().is_empty()));
    println!(
        "compile_500: {} tools compiled in {:.1} ms ({:.1} µs a tool); RSS +{} KiB ({:.1} KiB a tool)",
        compiled.len(),
        took.as_secs_f64() * 1e3,
        took.as_secs_f64() * 1e6 / 500.0,
        grown,
        grown as f64 / 500.0
    );
    drop(compiled);
    c.bench_function("compile/one_catalog_tool", |b| {
        let t = catalog_tool(7);
        b.iter(|| black_box(ToolSchemas::compile("bench", &t, Validation::Both)));
    });
}

criterion_group!(benches, per_call, compile_500);
criterion_main!(benches);
