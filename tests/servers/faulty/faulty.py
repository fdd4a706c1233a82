#!/usr/bin/env python3
"""Misbehaving MCP stdio servers for kaged-mcp's tests: one script, one fault per --mode.

Usage:  python3 faulty.py --mode MODE

Dependency-free (Python 3 stdlib). Speaks newline-delimited JSON-RPC on stdin/stdout like a
real MCP stdio server: `initialize` is answered with protocolVersion "2025-11-25",
capabilities {"tools": {}} and serverInfo; notifications are ignored; `ping` gets {}; unknown
methods get -32601; every mode offers the tool `echo {message}` -> "Echo: <message>" unless
its fault says otherwise. Logs one line to stderr on start.

With the environment variable KAGED_REQUEST_LOG set (in any mode), every message received
from the client that has a method is appended to that file as one JSON line:
  {"id": <id or null for a notification>, "method": "...", "tool": "<tools/call name>",
   "requestId": <notifications/cancelled's requestId>}      (the last two only where they apply)

Modes (one fault each):
  ok               well-behaved baseline
  request_log      same as ok; meant to be run with KAGED_REQUEST_LOG (never-twice checks)
  crash            exit(3) on any tools/call, without answering
  never_answer     reads tools/call and ping and never answers them (everything else is
                   answered)
  garbage          writes non-JSON lines (and a blank line) on stdout before every answer
  huge             tools/call `huge` answers with one line of 100 MiB (arguments.bytes to change
                   the size), written in 1 MiB chunks; later calls are answered normally
  stderr_flood     on initialize, writes 20 MiB to stderr in 1 KiB lines, then answers
  stderr_one_line  on initialize, writes one 20 MiB line to stderr, then answers
  grandchild       on tools/call starts `sleep 1000` (stdout inherited, pid logged to stderr as
                   "grandchild pid N") and exits 0 at once: stdout stays open after the server exits
  cursor_loop      tools/list always answers nextCursor "same-cursor" (it never advances)
  server_requests  during a tools/call sends the requests ping (id "p1") and
                   sampling/createMessage (id 7), waits for both answers, then answers the call
                   with a text holding the JSON {"ping": <answer to p1>, "sampling": <answer to 7>}
                   (each answer as received, minus "jsonrpc")
  bad_version      answers initialize with protocolVersion "1999-01-01"
  exit_before_init prints a line to stderr and exits 1 before reading anything
  paginated        tools/list over 3 pages with string cursors ("page-2", "page-3"): t1..t7
                   (3 + 3 + 1); an unknown cursor gets -32602
  list_changed     after every tools/call answer sends notifications/tools/list_changed, and
                   tools/list grows by one tool per call made: echo, extra1, extra2, ...
  linger           does not exit when stdin closes (as a server whose timers keep it alive):
                   it stays until a signal ends it

With KAGED_PID_FILE set, the server writes its process id to that file when it starts.
"""

import json
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import mcp_test_kit as kit  # noqa: E402 - tests/servers/, the parent of this script's folder
from mcp_test_kit import dumps, text_result  # noqa: E402

PROTOCOL_VERSION = "2025-11-25"
MIB = 1024 * 1024

MODES = [
    "ok", "request_log", "crash", "never_answer", "garbage", "huge", "stderr_flood",
    "stderr_one_line", "grandchild", "cursor_loop", "server_requests", "bad_version",
    "exit_before_init", "paginated", "list_changed", "linger",
]

out = sys.stdout.buffer
mode = "ok"
calls_made = 0
deferred = []  # client requests that arrived while server_requests mode was waiting
REQUEST_LOG = kit.JsonLines(os.environ.get("KAGED_REQUEST_LOG"))
MESSAGES = kit.stdin_messages()
log = kit.eprint


def write_line(obj):
    if mode == "garbage":
        out.write(b"this is not JSON, a misbehaving server wrote it\n")
        out.write(b"\n")
        out.write(b"{ broken json\n")
    out.write(dumps(obj).encode() + b"\n")
    out.flush()


def result(id_, value):
    write_line(kit.result_msg(id_, value))


def error(id_, code, message):
    write_line(kit.error_msg(id_, code, message))


def tool(name, description, props=None):
    schema = {"type": "object", "properties": props or {}}
    return {"name": name, "description": description, "inputSchema": schema}


ECHO = tool("echo", "Echo the message back", {"message": {"type": "string"}})


def record(msg):
    if not REQUEST_LOG.path:
        return
    params = msg.get("params") or {}
    entry = {"id": msg.get("id"), "method": msg.get("method")}
    if msg.get("method") == "tools/call":
        entry["tool"] = params.get("name")
        message = (params.get("arguments") or {}).get("message")
        if message is not None:
            entry["message"] = message
    if msg.get("method") == "notifications/cancelled":
        entry["requestId"] = params.get("requestId")
    REQUEST_LOG.append(entry)


def read_message():
    """The next JSON message from stdin, or None at EOF. Bad lines are logged and skipped."""
    for line, msg in MESSAGES:
        if msg is not kit.NOT_JSON:
            return msg
        log(f"skipping a non-JSON line of {len(line)} bytes")
    return None


# --- handlers -------------------------------------------------------------------------------


def on_initialize(id_):
    if mode == "stderr_flood":
        line = b"e" * 1023 + b"\n"
        for _ in range(20 * 1024):
            sys.stderr.buffer.write(line)
        sys.stderr.flush()
    if mode == "stderr_one_line":
        chunk = b"E" * MIB
        for _ in range(20):
            sys.stderr.buffer.write(chunk)
        sys.stderr.buffer.write(b"\n")
        sys.stderr.flush()
    version = "1999-01-01" if mode == "bad_version" else PROTOCOL_VERSION
    result(id_, {
        "protocolVersion": version,
        "capabilities": {"tools": {"listChanged": True} if mode == "list_changed" else {}},
        "serverInfo": {"name": f"faulty-{mode}", "version": "0.0.1"},
    })


PAGES = {
    None: (["t1", "t2", "t3"], "page-2"),
    "page-2": (["t4", "t5", "t6"], "page-3"),
    "page-3": (["t7"], None),
}


def on_tools_list(id_, params):
    cursor = params.get("cursor")
    if mode == "paginated":
        if cursor not in PAGES:
            return error(id_, -32602, f"unknown cursor {cursor!r}")
        names, next_cursor = PAGES[cursor]
        page = {"tools": [tool(n, f"tool {n}") for n in names]}
        if next_cursor:
            page["nextCursor"] = next_cursor
        return result(id_, page)
    if mode == "cursor_loop":
        return result(id_, {"tools": [ECHO], "nextCursor": "same-cursor"})
    tools = [ECHO]
    if mode == "huge":
        tools.append(tool("huge", "Answers with one very long line", {"bytes": {"type": "integer"}}))
    if mode == "list_changed":
        tools += [tool(f"extra{i}", f"added after call {i}") for i in range(1, calls_made + 1)]
    result(id_, {"tools": tools})


def answer_huge(id_, size):
    head = json.dumps({"jsonrpc": "2.0", "id": id_, "result": {"content": [{"type": "text", "text": ""}]}},
                      separators=(",", ":"))
    # Split the envelope around the empty text and pour `size` bytes of 'x' in between.
    cut = head.index('"text":""') + len('"text":"')
    before, after = head[:cut].encode(), head[cut:].encode()
    out.write(before)
    chunk = b"x" * MIB
    left = size
    while left > 0:
        n = min(left, MIB)
        out.write(chunk if n == MIB else chunk[:n])
        left -= n
    out.write(after + b"\n")
    out.flush()
    log(f"sent a {size + len(before) + len(after) + 1}-byte line")


def server_requests_dance(id_):
    for request in kit.ask_requests():
        write_line(request)
    got = {}
    while not all(i in got for i in kit.ASK_IDS):
        msg = read_message()
        if msg is None:
            log("stdin closed while waiting for the answers to p1 and 7")
            sys.exit(0)
        if "method" not in msg:  # an answer to one of our requests
            answer = kit.answer_of(msg)
            got[msg.get("id")] = answer
            log(f"got answer {json.dumps(answer)}")
            continue
        record(msg)
        if msg["method"] == "tools/call" and "id" in msg:
            deferred.append(msg)
        else:
            dispatch(msg)
    result(id_, text_result(kit.ask_text(got)))


def on_tools_call(id_, params):
    global calls_made
    name = params.get("name")
    args = params.get("arguments") or {}
    if mode == "crash":
        log("crashing mid-call with exit code 3")
        sys.stdout.flush()
        os._exit(3)
    if mode == "never_answer":
        log(f"never answering tools/call id {id_!r}")
        return
    if mode == "grandchild":
        child = subprocess.Popen(["sleep", "1000"])  # inherits our stdout (and stdin, stderr)
        log(f"grandchild pid {child.pid}; exiting 0 with stdout still held open by it")
        sys.stderr.flush()
        os._exit(0)
    if mode == "server_requests":
        return server_requests_dance(id_)
    if mode == "huge" and name == "huge":
        return answer_huge(id_, int(args.get("bytes", 100 * MIB)))
    calls_made += 1
    if name == "echo":
        result(id_, text_result(f"Echo: {args.get('message', '')}"))
    elif mode == "list_changed" and name.startswith("extra"):
        result(id_, text_result(f"called {name}"))
    elif mode == "paginated" and name in {f"t{i}" for i in range(1, 8)}:
        result(id_, text_result(f"called {name}"))
    else:
        error(id_, -32602, f"Unknown tool: {name}")
        return
    if mode == "list_changed":
        write_line({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})


def dispatch(msg):
    method = msg.get("method")
    id_ = msg.get("id")
    params = msg.get("params") or {}
    if "id" not in msg:  # a notification: ignored
        return
    if method == "initialize":
        on_initialize(id_)
    elif method == "ping" and mode == "never_answer":
        log(f"never answering ping id {id_!r}")
    elif method == "ping":
        result(id_, {})
    elif method == "tools/list":
        on_tools_list(id_, params)
    elif method == "tools/call":
        on_tools_call(id_, params)
    else:
        error(id_, -32601, f"Method not found: {method}")


def main():
    global mode
    mode = kit.parse(kit.arguments("Misbehaving MCP stdio server", MODES, "ok"), "faulty[{mode}]").mode
    log(f"starting, pid {os.getpid()}")
    if os.environ.get("KAGED_PID_FILE"):
        with open(os.environ["KAGED_PID_FILE"], "w", encoding="utf-8") as f:
            f.write(str(os.getpid()))
    if mode == "exit_before_init":
        log("exiting with code 1 before initialize")
        sys.exit(1)
    try:
        while True:
            if deferred:  # already recorded when it arrived
                dispatch(deferred.pop(0))
                continue
            msg = read_message()
            if msg is None:
                if mode == "linger":
                    log("stdin closed, staying until a signal ends me")
                    while True:
                        time.sleep(3600)
                log("stdin closed, exiting")
                return
            if "method" not in msg:
                log(f"ignoring an unexpected answer {json.dumps(msg)[:200]}")
                continue
            record(msg)
            dispatch(msg)
    except BrokenPipeError:
        # The client went away; leave quietly and keep Python from complaining at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        sys.exit(0)


if __name__ == "__main__":
    main()
