#!/usr/bin/env python3
"""A stdio MCP server that tells whether an environment variable holds an expected value,
without ever writing either value anywhere.

Usage:  python3 env_server.py VAR EXPECTED_VAR

Python 3 stdlib only; JSON-RPC 2.0, one message per line on stdin/stdout; exits 0 at stdin
EOF. Speaks the legacy era: initialize (answers the client's protocolVersion), then
tools/list and tools/call; ping -> {}; any other request (server/discover included) -> -32601;
notifications and answers are ignored.

Tool:
  compare()  -> "match" when $VAR is set, not empty and equal to $EXPECTED_VAR, else
                "mismatch" (text only). Nothing else is said about either value.
"""

import json
import os
import sys

import mcp_test_kit as kit

VAR, EXPECTED = sys.argv[1], sys.argv[2]

TOOL = {
    "name": "compare",
    "description": f"Whether ${VAR} equals ${EXPECTED}",
    "inputSchema": {"type": "object", "properties": {}},
}


def compare():
    got = os.environ.get(VAR)
    return "match" if got and got == os.environ.get(EXPECTED) else "mismatch"


def answer(msg):
    method = msg["method"]
    if method == "initialize":
        return {
            "protocolVersion": msg.get("params", {}).get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "env-server", "version": "1"},
        }
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [TOOL]}
    if method == "tools/call" and msg.get("params", {}).get("name") == "compare":
        return {"content": [{"type": "text", "text": compare()}]}
    if method == "tools/call":
        return {"content": [{"type": "text", "text": "unknown tool"}], "isError": True}
    return None


def write_spaced(out):
    """json.dumps' default spacing, as ever."""
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


kit.serve_requests(answer, write=write_spaced)
