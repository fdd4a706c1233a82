"""An MCP server every string of which tries to drive the operator's terminal: for kaged-mcp's
test that no raw control, escape or invisible code point reaches the CLI's stdout or stderr.

Usage:  python3 hostile_server.py [--flip FILE]

Python 3 stdlib only, stdio, legacy era (2025-11-25). Every string it sends (serverInfo,
instructions, tool titles, descriptions, schema keys, enum values, defaults, results, errors,
resources, prompts, completions, log messages, stderr) carries `EVIL`: a carriage return, ANSI
sequences that erase and move lines, BEL, DEL, a C1 CSI, a newline, a tab, zero-width,
bidi-override and tag characters. Tool names must pass kaged-mcp's name rule to be registered,
so registered ones are plain and one more tool's name carries EVIL (skipped, with a note).
With `--flip FILE`, while FILE exists the tools' descriptions and a schema key change (for
`lock --check` of a changed server).
"""

import argparse
import os

import mcp_test_kit as kit

parser = argparse.ArgumentParser()
parser.add_argument("--flip")
args = parser.parse_args()
kit.name_as("hostile_server")

EVIL = "x\r\x1b[2K\x1b[1A\x07\x7f\x9b31m\nFORGED\tline\u200b\u202e\u2066\ufeff\U000e0041z"


def flipped():
    return bool(args.flip) and os.path.exists(args.flip)


def tools():
    extra = EVIL if flipped() else ""
    schema = {
        "type": "object",
        "properties": {
            "q" + EVIL: {"type": "string", "description": EVIL, "default": EVIL},
            "mode": {"type": "string", "enum": ["a" + EVIL, "b"], "description": EVIL},
        },
    }
    if flipped():
        schema["properties"]["new" + EVIL] = {"type": "string", "description": EVIL}
    return [
        {"name": "echo", "title": EVIL, "description": EVIL + "\nsecond " + EVIL + extra,
         "inputSchema": schema, "annotations": {"title": EVIL, "x-" + EVIL: EVIL}},
        {"name": "fail", "description": EVIL + extra, "inputSchema": kit.NO_ARGS},
        {"name": "rpcfail", "description": EVIL, "inputSchema": kit.NO_ARGS},
        {"name": "bad" + EVIL, "description": EVIL, "inputSchema": kit.NO_ARGS},
    ]


def answer(msg):
    method = msg["method"]
    params = msg.get("params") or {}
    if method == "initialize":
        return {
            "protocolVersion": params.get("protocolVersion", kit.LATEST_LEGACY),
            "capabilities": {"tools": {"listChanged": True}, "resources": {}, "prompts": {},
                             "completions": {}, "logging": {}, "x" + EVIL: {EVIL: True}},
            "serverInfo": {"name": "hostile" + EVIL, "version": "1" + EVIL, "title": EVIL,
                           "websiteUrl": "https://e.invalid/" + EVIL},
            "instructions": EVIL + "\n" + EVIL + ("flipped" if flipped() else ""),
        }
    if method == "ping":
        return {}
    if method == "logging/setLevel":
        kit.write_line({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "error", "logger": EVIL, "data": EVIL}})
        return {}
    if method == "tools/list":
        return {"tools": tools()}
    if method == "tools/call":
        name = params.get("name")
        kit.write_line({"jsonrpc": "2.0", "method": "notifications/message",
                        "params": {"level": "error", "logger": EVIL, "data": EVIL}})
        if name == "fail":
            return kit.text_result(EVIL, is_error=True)
        if name == "rpcfail":
            raise kit.RpcError(-32000, EVIL)
        return {"content": [
            {"type": "text", "text": EVIL},
            {"type": "resource_link", "uri": "h://" + EVIL, "name": EVIL, "mimeType": EVIL},
            {"type": "image", "data": "AAAA", "mimeType": "image/" + EVIL},
            {"type": "resource", "resource": {"uri": "h://r" + EVIL, "text": EVIL}},
        ], "isError": False}
    if method == "resources/list":
        return {"resources": [{"uri": "h://r/1", "name": EVIL, "title": EVIL,
                               "description": EVIL, "mimeType": "text/plain"}]}
    if method == "resources/templates/list":
        return {"resourceTemplates": [{"uriTemplate": "h://t/{id}" + EVIL, "name": EVIL,
                                       "description": EVIL}]}
    if method == "resources/read":
        return {"contents": [{"uri": params.get("uri", ""), "text": EVIL,
                              "mimeType": "text/plain"}]}
    if method == "prompts/list":
        return {"prompts": [{"name": "p", "title": EVIL, "description": EVIL,
                             "arguments": [{"name": "a", "description": EVIL}]}]}
    if method == "prompts/get":
        return {"description": EVIL, "messages": [
            {"role": "user", "content": {"type": "text", "text": EVIL}}]}
    if method == "completion/complete":
        return {"completion": {"values": [EVIL, "plain"], "total": 2, "hasMore": False}}
    raise kit.RpcError(-32601, f"Method not found: {method}" + EVIL)


def respond(msg):
    try:
        return kit.result_msg(msg["id"], answer(msg))
    except kit.RpcError as e:
        return {"jsonrpc": "2.0", "id": msg["id"], "error": e.body()}


kit.eprint("starting " + EVIL)
for _, msg in kit.stdin_messages():
    if isinstance(msg, dict) and "method" in msg and "id" in msg:
        kit.write_line(respond(msg))
