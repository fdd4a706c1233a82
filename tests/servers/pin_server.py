"""An MCP server whose tool definitions come from a file the test rewrites: for kaged-mcp's
tool-definition pinning (mcp.lock) tests.

Usage:  python3 pin_server.py stdio|http --tools FILE [--port N]

Python 3 stdlib only. Speaks the legacy era (2025-11-25); `server/discover` is -32601.
- FILE is JSON: {"serverInfo": {"name", "version"}, "instructions": "...", "tools": [<Tool>...]}
  (serverInfo and instructions optional). It is read again at every initialize and every
  tools/list, so a test changes what the server lists by rewriting it.
- initialize -> capabilities {tools: {listChanged: true}}, serverInfo and instructions from FILE.
- tools/list -> {tools: FILE's tools}; tools/call {name} -> text "called <name>".
- stdio: whenever FILE's contents change, notifications/tools/list_changed is written (a thread
  looks every 20 ms). http: Streamable HTTP on 127.0.0.1, POST /mcp answered with one
  application/json message (notifications: 202), no GET stream (405), DELETE 200; prints
  `PORT=<n>` on stdout.
"""

import argparse
import json
import threading
import time

import mcp_test_kit as kit

parser = argparse.ArgumentParser()
parser.add_argument("transport", choices=["stdio", "http"])
parser.add_argument("--tools", required=True)
parser.add_argument("--port", type=int, default=0)
args = parser.parse_args()
kit.name_as("pin_server")


def read_file():
    with open(args.tools, encoding="utf-8") as f:
        return json.load(f)


def answer(msg):
    method = msg["method"]
    params = msg.get("params") or {}
    if method == "initialize":
        spec = read_file()
        out = {
            "protocolVersion": params.get("protocolVersion", kit.LATEST_LEGACY),
            "capabilities": {"tools": {"listChanged": True}},
            "serverInfo": spec.get("serverInfo", {"name": "pin-server", "version": "1"}),
        }
        if "instructions" in spec:
            out["instructions"] = spec["instructions"]
        return out
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": read_file()["tools"]}
    if method == "tools/call":
        return kit.text_result(f"called {params.get('name')}")
    raise kit.RpcError(-32601, f"Method not found: {method}")


def respond(msg):
    try:
        return kit.result_msg(msg["id"], answer(msg))
    except kit.RpcError as e:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": e.body()}


def watch():
    """notifications/tools/list_changed each time FILE's bytes change."""
    def contents():
        try:
            with open(args.tools, "rb") as f:
                return f.read()
        except OSError:
            return None

    last = contents()
    while True:
        time.sleep(0.02)
        now = contents()
        if now != last:
            last = now
            if not kit.write_line({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}):
                return


class Handler(kit.Handler):
    def do_POST(self):
        if self.path_only() != "/mcp":
            return self.not_found()
        body = self.read_capped_body(1 << 20)
        if body is None:
            return
        try:
            msg = json.loads(body)
        except ValueError:
            return self.rpc_error(400, -32700, "Parse error")
        if not isinstance(msg, dict) or "id" not in msg or "method" not in msg:
            return self.reply(202)
        headers = [("Mcp-Session-Id", "pin-session")] if msg["method"] == "initialize" else []
        self.reply_json(200, respond(msg), headers)

    def do_GET(self):
        self.reply(405, b"no stream", "text/plain")

    def do_DELETE(self):
        self.reply(200)


if args.transport == "stdio":
    threading.Thread(target=watch, daemon=True).start()
    for _, msg in kit.stdin_messages():
        if isinstance(msg, dict) and "method" in msg and "id" in msg:
            kit.write_line(respond(msg))
else:
    httpd = kit.bind(lambda: kit.Server(("127.0.0.1", args.port), Handler))
    raise SystemExit(kit.serve(httpd, "pin_server: serving Streamable HTTP on /mcp"))
