//! What tool-definition pinning (`mcp.lock`, issue 38) costs at session start, against the same
//! start without a lock, measured in the same run.
//!
//! - `catalog/64/unpinned` and `catalog/64/pinned` (criterion): a 64-tool `tools/list` made into
//!   a catalog (`build_catalog`, `validate = "off"` so only pinning differs), without a lock and
//!   with a lock that has every tool (each tool's RFC 8785 digest computed and compared).
//! - Then, once (printed): a whole session start (`Session::start`: spawn
//!   `tests/servers/pin_server.py` serving the same 64 tools, initialize, `tools/list`, the
//!   catalog) with and without the lock, interleaved, `KAGED_PIN_RUNS` runs each (default 21),
//!   medians; and the catalog's pinned-minus-unpinned time as a share of the median start.
//!
//! A call reads nothing of the pin verdict (`ToolRegistry::dispatch` takes the stack, the name,
//! the schemas and the task flag), so pinning costs a call nothing.
//!
//! Run with `cargo bench --bench pins -- --warm-up-time 1 --measurement-time 3`.

use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion};
use kaged_mcp::config::{load, Config, ConfigPaths, Sources};
use kaged_mcp::pin::{Lock, LockedServer, LOCK_FILE};
use kaged_mcp::protocol::ToolInfo;
use kaged_mcp::session::build_catalog;
use kaged_mcp::Session;
use serde_json::{json, Value};

/// 64 tools as a real server lists them: a paragraph of description, 6 typed properties (an
/// enum, a default, a nested object), two required, annotations.
fn tools_json() -> Vec<Value> {
    (0..64)
        .map(|i| {
            json!({
                "name": format!("tool_{i:02}"),
                "title": format!("Tool number {i}"),
                "description": format!("Does thing {i} to the repository. Use it when the user asks for thing {i}; it returns a JSON object with the outcome and a list of affected paths. It never deletes data. Arguments are validated by the server as well."),
                "inputSchema": {
                    "type": "object",
                    "properties": {
                        "path": {"type": "string", "description": "A path relative to the repository root."},
                        "mode": {"type": "string", "enum": ["fast", "thorough", "dry-run"], "default": "fast"},
                        "limit": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 100},
                        "recursive": {"type": "boolean", "default": false},
                        "filter": {"type": "object", "properties": {"glob": {"type": "string"}, "exclude": {"type": "array", "items": {"type": "string"}}}},
                        "note": {"type": "string", "maxLength": 500}
                    },
                    "required": ["path", "mode"]
                },
                "annotations": {"readOnlyHint": i % 2 == 0, "idempotentHint": true, "openWorldHint": false}
            })
        })
        .collect()
}

fn tools() -> Vec<ToolInfo> {
    tools_json()
        .into_iter()
        .map(|t| serde_json::from_value(t).unwrap())
        .collect()
}

const YAML: &str = "mcp:\n  bench:\n    transport: stdio\n    command: [x]\n";
const LOCAL: &str = "[mcp.bench]\nvalidate = \"off\"\n";

fn configs(tools: &[ToolInfo]) -> (Config, Config) {
    let bare = Sources::new(YAML).local(LOCAL).load().unwrap();
    let mut lock = Lock::new();
    let server = bare.project.server("bench").unwrap();
    lock.servers.insert(
        "bench".into(),
        LockedServer::observe(server.reached(), None, tools),
    );
    let pinned = Sources::new(YAML)
        .local(LOCAL)
        .lock(lock.render())
        .load()
        .unwrap();
    (bare, pinned)
}

fn catalog(c: &mut Criterion) {
    let tools = tools();
    let (bare, pinned) = configs(&tools);
    let server = bare.project.server("bench").unwrap().clone();
    let mut g = c.benchmark_group("catalog/64");
    g.bench_function("unpinned", |b| {
        b.iter(|| black_box(build_catalog(&bare, &server, tools.clone(), false)))
    });
    g.bench_function("pinned", |b| {
        b.iter(|| {
            let cat = build_catalog(&pinned, &server, tools.clone(), false);
            assert_eq!(cat.tools.len(), 64);
            black_box(cat)
        })
    });
    g.finish();
}

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

/// One session start in `dir`, timed.
fn start_once(rt: &tokio::runtime::Runtime, dir: &Path) -> Duration {
    let config = load(&ConfigPaths::new(dir)).unwrap();
    rt.block_on(async {
        let t = Instant::now();
        let session = Session::start(config).await.unwrap();
        let took = t.elapsed();
        assert_eq!(session.catalog().len(), 64, "every tool registered");
        session.shutdown().await;
        took
    })
}

fn session_start() {
    let runs: usize = std::env::var("KAGED_PIN_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(21);
    let dir = tempfile::tempdir().unwrap();
    let tools_file = dir.path().join("tools.json");
    std::fs::write(&tools_file, json!({"tools": tools_json()}).to_string()).unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/pin_server.py");
    let yaml = format!(
        "mcp:\n  bench:\n    transport: stdio\n    command: {}\n",
        json!(["python3", script, "stdio", "--tools", tools_file])
    );
    let bare = dir.path().join("bare");
    let locked = dir.path().join("locked");
    for d in [&bare, &locked] {
        std::fs::create_dir(d).unwrap();
        std::fs::write(d.join("project.yaml"), &yaml).unwrap();
        std::fs::write(d.join("local.toml"), LOCAL).unwrap();
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // The lock, as `kaged-mcp lock` writes it.
    let config = load(&ConfigPaths::new(&bare)).unwrap();
    let observed = rt.block_on(async {
        let session = Session::start(config).await.unwrap();
        let o = session.observe_pins(None).await;
        session.shutdown().await;
        o
    });
    let mut lock = Lock::new();
    lock.servers
        .insert("bench".into(), observed["bench"].clone().unwrap());
    lock.write(&locked.join(LOCK_FILE)).unwrap();

    let (mut without, mut with) = (Vec::new(), Vec::new());
    start_once(&rt, &bare);
    start_once(&rt, &locked);
    for _ in 0..runs {
        without.push(start_once(&rt, &bare));
        with.push(start_once(&rt, &locked));
    }
    let (a, b) = (median(without), median(with));
    println!(
        "session start, 64 tools over stdio (pin_server.py), {runs} interleaved runs each: \
         without mcp.lock median {:.2} ms, with it {:.2} ms, ratio {:.3}",
        a.as_secs_f64() * 1e3,
        b.as_secs_f64() * 1e3,
        b.as_secs_f64() / a.as_secs_f64()
    );
    // The part pinning adds, measured without the process's noise.
    let tools = tools();
    let (bare_cfg, pinned_cfg) = configs(&tools);
    let server = bare_cfg.project.server("bench").unwrap().clone();
    let time = |cfg: &Config| {
        let n = 200;
        let t = Instant::now();
        for _ in 0..n {
            black_box(build_catalog(cfg, &server, tools.clone(), false));
        }
        t.elapsed() / n
    };
    let (u, p) = (time(&bare_cfg), time(&pinned_cfg));
    println!(
        "catalog of 64 tools: unpinned {:.1} µs, pinned {:.1} µs: pinning adds {:.1} µs, {:.2} % of the median start without a lock",
        u.as_secs_f64() * 1e6,
        p.as_secs_f64() * 1e6,
        (p.saturating_sub(u)).as_secs_f64() * 1e6,
        p.saturating_sub(u).as_secs_f64() / a.as_secs_f64() * 100.0
    );
}

fn all(c: &mut Criterion) {
    catalog(c);
    session_start();
}

criterion_group!(benches, all);
criterion_main!(benches);
