#!/usr/bin/env python3
"""A stdio MCP server that says much about itself and its one tool, for the CLI's `status`,
`tools --json`, `describe` and `call` output tests.

Usage:  python3 identity_server.py

Python 3 stdlib only; JSON-RPC 2.0, one message per line on stdin/stdout; exits 0 at stdin
EOF. Speaks the legacy era: initialize (answers the client's protocolVersion) with serverInfo
{name "identity-server", version "3.1.4", title "Identity Server", websiteUrl
"https://example.test/identity", description}, capabilities {tools {listChanged true}, logging
{}} and instructions on three lines; then tools/list, tools/call; ping -> {};
logging/setLevel -> {} (the level is kept); any other request -> -32601; notifications and
answers are ignored.

Tool:
  show(kind: string enum [all], count?: integer default 1)
      with title, icons, _meta, annotations (readOnlyHint, a hint no spec names: futureHint),
      execution {taskSupport: forbidden}, an outputSchema. Answers content of every kind: text,
      image (4 bytes), audio (3 bytes), a resource link, an embedded text resource and an
      embedded blob (2 bytes); structuredContent {"ok": true}; and _meta {"trace": "t-1"}.
      Once a level was set, a call first sends notifications/message (logger "show", data
      "show called (LEVEL)") at debug, warning and error, those at or above the level.
"""

import mcp_test_kit as kit

SERVER_INFO = {
    "name": "identity-server",
    "version": "3.1.4",
    "title": "Identity Server",
    "websiteUrl": "https://example.test/identity",
    "description": "Tells who it is.",
}
INSTRUCTIONS = "Call show first.\nThen look at every block.\nThat is all."

TOOL = {
    "name": "show",
    "title": "Show Everything",
    "description": "Answers one block of every kind.\nThe second line of the description.",
    "icons": [{"src": "https://example.test/show.png", "mimeType": "image/png"}],
    "_meta": {"vendor/key": "tool-meta"},
    "annotations": {"readOnlyHint": True, "openWorldHint": False, "futureHint": 7},
    "execution": {"taskSupport": "forbidden"},
    "inputSchema": {
        "type": "object",
        "required": ["kind"],
        "properties": {
            "kind": {"type": "string", "enum": ["all"], "description": "Which blocks"},
            "count": {"type": "integer", "default": 1, "description": "How many times"},
        },
    },
    "outputSchema": {"type": "object", "properties": {"ok": {"type": "boolean"}}},
}

CONTENT = [
    {"type": "text", "text": "every kind follows"},
    {"type": "image", "data": "AAECAw==", "mimeType": "image/png"},
    {"type": "audio", "data": "AAEC", "mimeType": "audio/wav"},
    {"type": "resource_link", "uri": "test://doc/1", "name": "Doc One", "mimeType": "text/markdown"},
    {"type": "resource", "resource": {"uri": "test://doc/2", "mimeType": "text/plain",
                                      "text": "embedded text"}},
    {"type": "resource", "resource": {"uri": "test://bin/3", "mimeType": "application/zip",
                                      "blob": "AAE="}},
]


LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
STATE = {"level": None}


def log_messages():
    """The log messages of one call, at the levels at or above the one set."""
    level = STATE["level"]
    if level not in LEVELS:
        return
    for lv in ("debug", "warning", "error"):
        if LEVELS.index(lv) >= LEVELS.index(level):
            kit.write_line({"jsonrpc": "2.0", "method": "notifications/message",
                            "params": {"level": lv, "logger": "show",
                                       "data": f"show called ({lv})"}})


def answer(msg):
    method = msg["method"]
    params = msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": True}, "logging": {}},
            "serverInfo": SERVER_INFO,
            "instructions": INSTRUCTIONS,
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "logging/setLevel":
        STATE["level"] = params.get("level")
        return {}
    if method == "tools/call" and params.get("name") == "show":
        log_messages()
        return {"content": CONTENT, "structuredContent": {"ok": True},
                "_meta": {"trace": "t-1"}}
    if method == "tools/call":
        return kit.text_result("unknown tool", is_error=True)
    return None


kit.serve_requests(answer)
