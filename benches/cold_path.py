#!/usr/bin/env python3
"""The cold path: one `kaged-mcp call` beside the MCP Inspector's CLI doing the same tools/call.

Usage:  python3 benches/cold_path.py [--kaged target/release/kaged-mcp] [--runs 10]

Needs the peers of `.ci/install-peers --bench` ($KAGED_PEERS_DIR, default <repo>/.peers): server-everything,
the PyPI `mcp` 1.30.0 venv and `@modelcontextprotocol/inspector-cli` 1.0.3. Python 3 stdlib only.

Three rows, each `echo {message: hi}`: server-everything over stdio, server-everything over
Streamable HTTP (started once, on a free port), and tests/servers/py_server.py on `mcp` 1.30.0 over
stdio. Each round runs, in a rotating order, three whole processes and times each from its start
to its exit: kaged-mcp with the server's era remembered (a state directory warmed by one run
first), kaged-mcp as a first run (XDG_STATE_HOME where nothing can be kept: the era probe is
sent), and the inspector's CLI (`node <inspector-cli>/build/index.js <server> --method tools/call`,
run from its build directory: v1.0.3 looks for its package.json relative to the working
directory). Prints the median wall time of each, and the medians of the per-round ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
PEERS = Path(os.environ.get("KAGED_PEERS_DIR") or REPO / ".peers")
EVERYTHING = PEERS / "npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
PYTHON1 = PEERS / "venv-mcp1/bin/python"
INSPECTOR = PEERS / "npm-inspector/node_modules/@modelcontextprotocol/inspector-cli/build"
PY_SERVER = REPO / "tests/servers/py_server.py"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for_port(port: int, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    sys.exit(f"the server on port {port} did not listen")


def timed(cmd: list[str], env: dict[str, str], cwd: Path | None = None) -> float:
    start = time.perf_counter()
    out = subprocess.run(cmd, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    if out.returncode != 0 or b"Echo: hi" not in out.stdout:
        sys.exit(f"{cmd}: exit {out.returncode}, {out.stdout[:200]!r}")
    return wall


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--kaged", default=str(REPO / "target/release/kaged-mcp"))
    ap.add_argument("--runs", type=int, default=10)
    args = ap.parse_args()
    for need in (EVERYTHING, PYTHON1, INSPECTOR / "index.js", Path(args.kaged)):
        if not need.exists():
            sys.exit(f"missing: {need} (run .ci/install-peers --bench; cargo build --release)")

    work = Path(tempfile.mkdtemp(prefix="kaged-cold-"))
    port = free_port()
    http = subprocess.Popen(["node", str(EVERYTHING), "streamableHttp"],
                            env={**os.environ, "PORT": str(port)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            start_new_session=True)
    try:
        wait_for_port(port, time.monotonic() + 30)
        url = f"http://127.0.0.1:{port}/mcp"
        rows = [
            ("server-everything, stdio", "everything",
             f'transport: stdio\n    command: ["node", "{EVERYTHING}", "stdio"]',
             ["node", str(EVERYTHING), "stdio"]),
            ("server-everything, Streamable HTTP", "everything",
             f"transport: streamable-http\n    url: {url}",
             [url, "--transport", "http"]),
            ("PyPI mcp 1.30.0 (legacy), stdio", "py",
             f'transport: stdio\n    command: ["{PYTHON1}", "{PY_SERVER}", "stdio"]',
             [str(PYTHON1), str(PY_SERVER), "stdio"]),
        ]
        state = work / "state"
        print(f"{args.runs} rounds per row; median wall ms; ratios are medians of per-round ratios")
        print("| row | kaged-mcp, era remembered | kaged-mcp, first run | inspector-cli | "
              "remembered / inspector | first run / inspector | remembered / first run |")
        print("|---|---:|---:|---:|---:|---:|---:|")
        for row, (name, key, transport, target) in enumerate(rows):
            project = work / f"row{row}"
            project.mkdir()
            (project / "project.yaml").write_text(f"mcp:\n  {key}:\n    {transport}\n")
            kaged = [args.kaged, "call", "--project", str(project), f"mcp.{key}.echo",
                     "--arg", "message=hi"]
            inspector = ["node", "index.js", *target, "--method", "tools/call",
                         "--tool-name", "echo", "--tool-arg", "message=hi"]
            warm = {**os.environ, "XDG_STATE_HOME": str(state)}
            first = {**os.environ, "XDG_STATE_HOME": "/dev/null/state"}
            runs = {
                "warm": lambda: timed(kaged, warm),
                "first": lambda: timed(kaged, first),
                "inspector": lambda: timed(inspector, dict(os.environ), INSPECTOR),
            }
            for run in runs.values():  # warm-up (and the state directory's first write)
                run()
            walls: dict[str, list[float]] = {k: [] for k in runs}
            order = list(runs)
            for i in range(args.runs):
                for k in order[i % 3:] + order[: i % 3]:
                    walls[k].append(runs[k]())
            med = {k: statistics.median(v) * 1000 for k, v in walls.items()}

            def ratio(a: str, b: str) -> float:
                return statistics.median(x / y for x, y in zip(walls[a], walls[b]))

            print(f"| {name} | {med['warm']:.0f} | {med['first']:.0f} | {med['inspector']:.0f} | "
                  f"{ratio('warm', 'inspector'):.2f} | {ratio('first', 'inspector'):.2f} | "
                  f"{ratio('warm', 'first'):.2f} |")
    finally:
        os.killpg(http.pid, 15)
        http.wait()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
