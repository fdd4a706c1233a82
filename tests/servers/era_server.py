#!/usr/bin/env python3
"""An MCP server for the protocol-era tests of kaged-mcp: legacy (2025-11-25, initialize handshake)
servers that mishandle a modern client, and modern (2026-07-28: no initialize, per-request _meta,
multi round-trip tools/call) servers.

Usage:  python3 era_server.py stdio [--mode MODE] [--versions V1,V2] [--ttl-ms N] [--stats-file PATH]
                                    [--legacy-after N]
        python3 era_server.py http [--port N] [--mode MODE] [--versions ...] [--ttl-ms N]
                                   [--stats-file PATH] [--legacy-after N]
                                   [--call-log FILE] [--bind-retry-ms N]

Python 3 stdlib only. JSON-RPC 2.0.
  stdio: one JSON message per line on stdin/stdout; logs only on stderr; exits 0 at stdin EOF.
  http:  127.0.0.1 (threads, HTTP/1.1, TCP_NODELAY). The first line on stdout is always `PORT=<n>`
         (flushed), so `--port 0` lets the OS pick; one line on stderr on start.
         POST /mcp -> application/json answers; a notification or an answer -> 202, no body;
         subscriptions/listen -> 200 text/event-stream (chunked), held open (see below);
         GET/DELETE /mcp -> 405 (`Allow: POST`); GET /stats -> 200 the stats (below); any other
         path -> 404. Never sends Mcp-Session-Id. Bodies over 1 MiB -> 413 (a bad length 400).
         No Accept or Content-Type check.
Both: a line / body that is not JSON -> -32700 (HTTP 400); not a JSON-RPC message (a batch too)
-> -32600 (HTTP 400); answers from the client (result/error, no method) are ignored.

Modes (--mode, default modern-only):
  exit-before-init    (stdio only) a legacy server: any request but `initialize` arriving before
                      `initialize` -> a line on stderr and exit status 3 at once
  silent-before-init  the same, but such requests are never answered (logged on stderr) and
                      the server keeps running; over HTTP (stateless, no session ids) their
                      POST is answered 202 Accepted with no body
    Legacy, after initialize (protocolVersion = the client's if 2024-11-05, 2025-03-26, 2025-06-18
    or 2025-11-25, else 2025-11-25; capabilities {tools: {}}; serverInfo {era-exit, 1}): tools/list
    (echo only), tools/call echo (another tool -> isError "unknown tool <name>"), ping -> {};
    unknown methods -32601; notifications ignored; _meta is ignored.
  modern-only         speaks only --versions (default 2026-07-28). Every request:
  input-required      (the same server; the multi round-trip tools behave alike in both)
    1. `initialize` -> -32601 "initialize is not supported: this server speaks only <versions>
       (per-request _meta)", data {"supported": [...]} (HTTP 404), before any other check;
       notifications -> ignored (HTTP 202), before any other check
    2. HTTP only: MCP-Protocol-Version and Mcp-Method headers present, Mcp-Method == method, for
       tools/call Mcp-Name present and == params.name (`=?base64?<b64>?=` decoded first)
       -> else -32020 naming the header (HTTP 400)
    3. params._meta holds io.modelcontextprotocol/protocolVersion (string) and
       io.modelcontextprotocol/clientCapabilities (object) -> else -32602 "missing required _meta
       field <name>" (HTTP 400)
    4. HTTP only: MCP-Protocol-Version header == the _meta version -> else -32020 (HTTP 400)
    5. the _meta version in --versions -> else -32022 "Unsupported protocol version", data
       {"supported": [...], "requested": v} (HTTP 400)
    6. server/discover -> {resultType complete, supportedVersions, capabilities {tools:
       {listChanged: true}}, _meta {serverInfo {era-modern, 1}}, ttlMs 0, cacheScope public};
       tools/list -> {resultType complete, tools, ttlMs (--ttl-ms, default 0), cacheScope public}
       (cursor ignored, no nextCursor); tools/call; subscriptions/listen (below); ping and any
       other method -> -32601 (HTTP 404)
    Every tools/call result carries resultType and _meta {io.modelcontextprotocol/serverInfo}.
    subscriptions/listen {notifications: {toolsListChanged, promptsListChanged,
       resourcesListChanged, resourceSubscriptions}} (all optional; notifications not an object
       -> -32602): only toolsListChanged is honoured. The server first sends the notification
       notifications/subscriptions/acknowledged {_meta {io.modelcontextprotocol/subscriptionId:
       the listen id, same JSON type}, notifications: {toolsListChanged: true} if asked, else {}};
       then, on each `bump`, notifications/tools/list_changed {_meta {...subscriptionId}} to the
       subscriptions that asked for toolsListChanged. The listen request itself is never answered
       (the server never ends a subscription on its own). It stays open until the client cancels:
         stdio: notifications/cancelled {requestId: the listen id (same JSON type)} -> forgotten,
                nothing more is sent for it; messages are whole lines on stdout (one writer at a
                time);
         HTTP:  the POST is answered 200, Content-Type text/event-stream, Cache-Control no-cache,
                X-Accel-Buffering no, Transfer-Encoding chunked, Connection close (each event
                one flushed chunk):
                `data: <ack>\n\n`, then `data: <notification>\n\n` per change, and `:\n\n` after
                every 1 s without a write; the client leaving (EOF on the socket, or a failed
                write) drops the subscription. Other requests are served meanwhile (threads).
Tools (modern; legacy serves echo only):
  echo {message}     -> "Echo: <message>"; with --call-log FILE each one executed appends its
                        message there (JSON-encoded, one line), so a test can prove nothing ran twice
  whoami {region?}   -> (region is annotated "x-mcp-header": "Region") a text holding the
                        compact JSON {"meta": params._meta, "headers": {the
                        mcp-protocol-version, mcp-method, mcp-name, mcp-session-id,
                        mcp-param-region headers received,
                        lower-cased; {} on stdio}, "id": the JSON-RPC id}
  end_listen {graceful?} -> ends every open subscriptions/listen; graceful: its listen is
                        answered {"resultType": "complete", "_meta": {subscriptionId}} first;
                        not graceful (HTTP only; stdio subscriptions are left open): the event
                        stream just ends (the chunked body is closed) -> "ended <n> subscriptions"
  cut_stream {}      -> HTTP: a text/event-stream with one event (`id: e1`, a
                        notifications/message), then the stream ends without the answer; stdio:
                        nothing is ever written for it
  hold {ms?}         -> sleeps ms milliseconds (default 300, at most 60000), counting the holds
                        running at once (stats holds_most) -> "held <ms> ms"; HTTP serves
                        requests on threads, so holds overlap; stdio serves one at a time
  no_answer {}       -> HTTP: the POST is answered 202 Accepted with no body; stdio: nothing is
                        ever written for it
  gen_<k> {}         -> "generation <k>"; tools/list lists ONE such tool, k = how many tools/list
                        were served so far, this one included (gen_1, then gen_2, ...)
  ask {}             -> input_required {"name": elicitation/create (form, "What is your name?",
                        schema {name: string})}, requestState "ask:<hex>"; the retry's
                        inputResponses.name: action accept -> "hello <content.name>", decline ->
                        "declined", cancel -> "cancelled"
  sample {}          -> input_required {"llm": sampling/createMessage ("What is 2+2?", maxTokens
                        10)}; a retry -> "sampled: <compact JSON of inputResponses.llm>"
                        (stats sampling_answered)
  roots {}           -> input_required {"r": roots/list}; a retry -> "roots: <JSON of
                        inputResponses.r>"
  state_only {rounds} -> (rounds default 2) input_required with only requestState
                        "so:<remaining>:<hex>" until retried `rounds` times, each retry echoing the
                        latest state (older ones are void), then "done after <rounds> rounds"
  loop {}            -> always input_required (ask's elicitation), never completes (loop_rounds)
  bump {}            -> n += 1 (a global counter, starting at 0); from then on tools/list also
                        lists added_<n> (only the latest); sends notifications/tools/list_changed
                        on every open subscription that asked for toolsListChanged (over stdio
                        before this result); -> "bumped <n> (notified <k> subscriptions)"
  added_<n> {}       -> "added <n>"
  shaped {mode}      -> outputSchema {n: integer, required}; mode "good": structuredContent {"n": 1},
                        "wrong": {"n": "one"}, "none": none, "error": isError and none; the text
                        is "shaped <mode>" (as in http_fault_server.py)
  versioned {v}      -> inputSchema {v: {const: <the bump count>}, required}, so it changes at each
                        bump -> "versioned <v>" (the server does not check v)
  draft7 {list}      -> inputSchema in draft-07 (`$schema`), `list` array-form `items` (a tuple, the
                        first item a string) -> "draft7 ok"
  freeze_list {}     -> from then on tools/list is never answered (HTTP: 202 with no body; stdio:
                        nothing is written; logged on stderr), then as bump (the subscriptions are
                        told the list changed) -> "frozen (notified <k> subscriptions)"
  anything else      -> isError "unknown tool <name>"
  A retry is a tools/call holding requestState or inputResponses. Its requestState must be one
  issued by the same tool (else isError "bad requestState"; loop accepts any), its JSON-RPC id must
  differ from that of the request the state answered (else isError "retry reused the request
  id"), and it must hold the tool's inputResponses key (else isError "missing inputResponses.<k>").
  States live in memory; only state_only's are used up.

--legacy-after N (modern modes only, both transports; default: never) simulates a server whose
operator downgraded it to a legacy-only (2025-11-25) server mid-life. The tools/call requests
served the modern way (past every check above, whatever their result: complete, isError or
input_required) are counted; once N of them have been served the server switches for good (N 0:
switched from the start; a modern tools/call beyond the N-th gets the -32022 below even while the
N-th is still running, so exactly N are served). After the switch:
  - a modern request (params._meta holding io.modelcontextprotocol/protocolVersion, whatever its
    method, server/discover and initialize included) -> -32022 "Unsupported protocol version",
    data {"supported": ["2025-11-25"], "requested": <that _meta value>} (HTTP 400,
    application/json), before any other check (HTTP: no header check at all);
  - any other request is served as by the legacy modes: initialize -> protocolVersion (the
    client's if 2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25, else 2025-11-25), capabilities
    {tools: {}}, serverInfo {era-switched, 1}; then tools/list (echo only), tools/call echo, ping
    -> {}; unknown methods -32601 (HTTP 404); notifications ignored (HTTP 202).
    stdio: a request other than initialize before initialize -> -32600 "server not initialized"
    (never silence, never an exit). HTTP: stateless (no Mcp-Session-Id, no initialize needed
    first), no header checks (the client sends MCP-Protocol-Version: 2025-11-25, no Mcp-Method).

Stats: {"mode", "requests": {method: n} (every request, counted on arrival), "tool_calls":
{name: n}, "errors": {"<code>": n} (JSON-RPC errors sent), "input_required": n, "sampling_answered":
n, "loop_rounds": n, "subscriptions_open": n (now), "subscriptions_total": n (ever acknowledged),
"mcp_gets": n (HTTP GET or DELETE of /mcp, each answered 405), "holds_most": n (the most `hold`
calls running at once), "switched": true once --legacy-after switched the server to legacy (else false)}.
HTTP: GET /stats. stdio: after every message, one line `STATS <json>` on
stderr. Both: --stats-file PATH is rewritten (atomically) after every message.
"""

import json
import queue
import re
import secrets
import sys
import threading
import time

import mcp_test_kit as kit
from mcp_test_kit import (META_SERVER, META_VERSION, NO_ARGS, RpcError, ToolFail, dumps, eprint,
                          text_result, write_line)

MODES = ("exit-before-init", "silent-before-init", "modern-only", "input-required")
LEGACY_MODES = ("exit-before-init", "silent-before-init")
META_SUB_ID = "io.modelcontextprotocol/subscriptionId"
SERVER_INFO = {"name": "era-modern", "version": "1"}
MAX_BODY = 1 << 20

ARGS = None
VERSIONS = []
LOCK = threading.Lock()  # guards everything below
STATS = kit.Stats(LOCK, {"mode": None, "mcp_gets": 0, "holds_most": 0, "requests": {}, "tool_calls": {}, "errors": {}, "input_required": 0,
         "sampling_answered": 0, "loop_rounds": 0, "subscriptions_open": 0,
         "subscriptions_total": 0, "switched": False})
LISTS_SERVED = 0
FROZEN = False  # freeze_list: tools/list is no longer answered
BUMPS = 0  # the `bump` counter n
HOLDS = 0  # the `hold` calls running now
SUBS = {}  # serial -> Subscription, the open ones
SUB_SERIAL = 0
KEEPALIVE_S = 1.0
STATES = {}  # requestState -> {"tool", "id" (of the request it answered), ...}
INITIALIZED = False  # legacy modes; modern modes after the --legacy-after switch (stdio)
SWITCHED = False  # --legacy-after: the server now speaks legacy only
MODERN_CALLS_TAKEN = 0  # --legacy-after: modern tools/call admitted (served or being served)
MODERN_CALLS_SERVED = 0  # --legacy-after: modern tools/call served
SWITCHED_VERSIONS = ["2025-11-25"]
NO_ANSWER = object()  # a tools/call result: HTTP 202 with no body, no line on stdio
CUT_STREAM = object()  # a tools/call result: HTTP an event stream cut before the answer
PLAIN_REFUSAL = object()  # --refuse-listen plain: HTTP 405 text/plain to subscriptions/listen
END_GRACEFUL = object()  # queued to an HTTP subscription: answer its listen, end the stream
END_ABRUPT = object()  # queued to an HTTP subscription: end the stream without an answer

ECHO = {"name": "echo", "description": "Echoes the message back",
        "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                        "required": ["message"]}}
ASK_REQUEST = {"method": "elicitation/create", "params": {
    "mode": "form", "message": "What is your name?",
    "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}},
                        "required": ["name"]}}}
SAMPLE_REQUEST = {"method": "sampling/createMessage", "params": {
    "messages": [{"role": "user", "content": {"type": "text", "text": "What is 2+2?"}}],
    "maxTokens": 10}}
ROOTS_REQUEST = {"method": "roots/list", "params": {}}


class Listen:
    """What process() answers for an accepted subscriptions/listen: the transport opens it."""

    def __init__(self, req_id, tools):
        self.req_id, self.tools = req_id, tools


class Subscription:
    """An open subscriptions/listen. stdio: delivered as stdout lines at once; HTTP: queued for
    the handler thread holding the event stream."""

    def __init__(self, req_id, tools, transport):
        self.req_id, self.tools, self.transport = req_id, tools, transport
        self.queue = queue.Queue() if transport == "http" else None
        self.serial = None

    def ack(self):
        honoured = {"toolsListChanged": True} if self.tools else {}
        return {"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"_meta": {META_SUB_ID: self.req_id}, "notifications": honoured}}

    def deliver(self, msg):
        """Sends one notification; False when it surely did not go out."""
        if self.queue is not None:
            self.queue.put(msg)
            return True
        return write_line(msg)


def open_subscription(sub):
    global SUB_SERIAL
    with LOCK:
        SUB_SERIAL += 1
        sub.serial = SUB_SERIAL
        SUBS[sub.serial] = sub
        STATS["subscriptions_total"] += 1
        STATS["subscriptions_open"] = len(SUBS)


def close_subscription(sub):
    """Forgets sub; True if it was open."""
    with LOCK:
        was_open = SUBS.pop(sub.serial, None) is not None
        STATS["subscriptions_open"] = len(SUBS)
    return was_open


def cancel_stdio_subscriptions(request_id):
    """notifications/cancelled over stdio: forgets the subscriptions whose listen id is
    request_id (the same JSON value and type)."""
    key = json.dumps(request_id)
    with LOCK:
        gone = [s for s in SUBS.values()
                if s.transport == "stdio" and json.dumps(s.req_id) == key]
    for sub in gone:
        close_subscription(sub)
    return len(gone)


def publish_stats(stderr):
    text = STATS.publish()
    if stderr:
        sys.stderr.write(f"STATS {text}\n")
        sys.stderr.flush()


def error_response(req_id, err):
    STATS.bump("errors", str(err.code))
    return {"jsonrpc": "2.0", "id": req_id, "error": err.body()}


# --- message entry point ------------------------------------------------------------------------

def process(msg, headers=None):
    """(HTTP status, answer or None) for one parsed message; headers is None on stdio."""
    kind = kit.classify(msg)
    if kind is None:
        req_id = msg.get("id") if isinstance(msg, dict) else None
        return 400, error_response(req_id, RpcError(-32600, "Invalid Request"))
    if kind == "answer":
        return 202, None  # an answer to a request we never send; ignored
    method = msg["method"]
    if kind == "notification":
        # notifications are ignored in every mode, but for notifications/cancelled of a stdio
        # subscription (modern modes)
        if (method == "notifications/cancelled" and headers is None
                and ARGS.mode not in LEGACY_MODES and isinstance(msg.get("params"), dict)
                and "requestId" in msg["params"]):
            cancel_stdio_subscriptions(msg["params"]["requestId"])
        return 202, None
    req_id = msg["id"]
    STATS.bump("requests", method)
    try:
        params = kit.params_of(msg)
        if ARGS.mode in LEGACY_MODES:
            result = legacy(method, params)
            if result is None:
                return None, None
        else:
            with LOCK:
                switched = SWITCHED
            if switched:
                result = switched_legacy(method, params, headers)
            else:
                result = modern(method, params, req_id, headers)
            if isinstance(result, Listen):
                return 200, result
            if result is PLAIN_REFUSAL:
                return 405, PLAIN_REFUSAL
            if result is NO_ANSWER:
                return 202, None
            if result is CUT_STREAM:
                return 200, CUT_STREAM
    except RpcError as err:
        return err.status(), error_response(req_id, err)
    return 200, {"jsonrpc": "2.0", "id": req_id, "result": result}


def safe_process(msg, headers=None):
    """process(), a bug in it answered -32603 (HTTP 500) instead of ending the server."""
    try:
        return process(msg, headers)
    except Exception as exc:
        eprint(f"internal error: {exc!r}")
        req_id = msg.get("id") if isinstance(msg, dict) else None
        return 500, error_response(req_id, RpcError(-32603, f"Internal error: {exc}"))


# --- legacy modes -------------------------------------------------------------------------------

def legacy(method, params):
    """The result of a legacy request; None (silent-before-init) means no answer at all."""
    if method == "initialize":
        return legacy_initialize(params, "era-exit")
    if not INITIALIZED:
        if ARGS.mode == "exit-before-init":
            publish_stats(True)
            eprint(f"{method} arrived before initialize; exiting with status 3")
            sys.exit(3)
        eprint(f"{method} arrived before initialize; ignored, no answer")
        return None
    return legacy_served(method, params)


def legacy_initialize(params, server_name):
    global INITIALIZED
    with LOCK:
        INITIALIZED = True
    return kit.initialize_result(params, {"tools": {}}, {"name": server_name, "version": "1"})


def legacy_served(method, params):
    """A legacy request after initialize (ping, tools/list, tools/call echo)."""
    if method == "ping":
        return {}
    if method == "tools/list":
        return {"tools": [ECHO]}
    if method == "tools/call":
        name = params.get("name")
        STATS.bump("tool_calls", str(name))
        if name != "echo":
            return text_result(f"unknown tool {name}", True)
        message = (params.get("arguments") or {}).get("message")
        if not isinstance(message, str):
            return text_result("echo needs a string message", True)
        return text_result(f"Echo: {message}")
    raise RpcError(-32601, f"Method not found: {method}")


def switched_legacy(method, params, headers):
    """A request after the --legacy-after switch: modern ones refused, the rest legacy."""
    meta = params.get("_meta")
    if isinstance(meta, dict) and META_VERSION in meta:
        raise switch_error(meta[META_VERSION])
    if method == "initialize":
        return legacy_initialize(params, "era-switched")
    if headers is None and not INITIALIZED:
        raise RpcError(-32600, f"server not initialized: {method} before initialize (this server "
                               f"now speaks only {', '.join(SWITCHED_VERSIONS)})")
    return legacy_served(method, params)


def switch_error(version):
    return RpcError(-32022, "Unsupported protocol version",
                    {"supported": SWITCHED_VERSIONS, "requested": version})


def take_modern_call(version):
    """--legacy-after: admits one more modern tools/call, or raises -32022 if N are taken."""
    global MODERN_CALLS_TAKEN
    with LOCK:
        if ARGS.legacy_after is None:
            return
        if SWITCHED or MODERN_CALLS_TAKEN >= ARGS.legacy_after:
            raise switch_error(version)
        MODERN_CALLS_TAKEN += 1


def end_modern_call(served):
    """--legacy-after: a modern tools/call admitted by take_modern_call() ended."""
    global MODERN_CALLS_TAKEN, MODERN_CALLS_SERVED, SWITCHED
    with LOCK:
        if ARGS.legacy_after is None:
            return
        if not served:
            MODERN_CALLS_TAKEN -= 1
            return
        MODERN_CALLS_SERVED += 1
        switching = MODERN_CALLS_SERVED >= ARGS.legacy_after and not SWITCHED
        if switching:
            SWITCHED = True
            STATS["switched"] = True
    if switching:
        eprint(f"served {ARGS.legacy_after} modern tools/call; switched to legacy "
               f"{', '.join(SWITCHED_VERSIONS)} only")


# --- modern modes -------------------------------------------------------------------------------

def check_headers(method, params, headers):
    kit.check_method_headers(method, headers)
    if method == "tools/call":
        sent, name = kit.mcp_name(headers)
        if name != params.get("name"):
            raise RpcError(-32020, f"Mcp-Name header {sent!r} does not match params.name "
                                   f"{params.get('name')!r}")


def modern(method, params, req_id, headers):
    global LISTS_SERVED
    if method == "initialize":
        raise RpcError(-32601, f"initialize is not supported: this server speaks only "
                               f"{', '.join(VERSIONS)} (per-request _meta)", {"supported": VERSIONS})
    if headers is not None:
        check_headers(method, params, headers)
    version = kit.check_meta(params, headers, VERSIONS)[META_VERSION]
    if method == "server/discover":
        return {"resultType": "complete", "supportedVersions": VERSIONS,
                "capabilities": {"tools": {"listChanged": True}},
                "_meta": {META_SERVER: SERVER_INFO}, "ttlMs": 0, "cacheScope": "public"}
    if method == "tools/list":
        with LOCK:
            frozen = FROZEN
        if frozen:
            eprint("tools/list not answered (frozen)")
            return NO_ANSWER
        with LOCK:
            LISTS_SERVED += 1
            k = LISTS_SERVED
        return {"resultType": "complete", "tools": modern_tools(k), "ttlMs": ARGS.ttl_ms,
                "cacheScope": "public"}
    if method == "tools/call":
        take_modern_call(version)
        try:
            result = call_tool(params, req_id, headers)
        except BaseException:
            end_modern_call(False)
            raise
        end_modern_call(True)
        if result is NO_ANSWER or result is CUT_STREAM:
            return result
        result.setdefault("resultType", "complete")
        result["_meta"] = {META_SERVER: SERVER_INFO}
        return result
    if method == "subscriptions/listen":
        if ARGS.refuse_listen == "plain" and headers is not None:
            return PLAIN_REFUSAL
        if ARGS.refuse_listen is not None:
            raise RpcError(-32601, "Method not found: subscriptions/listen (refused on purpose)")
        wanted = params.get("notifications", {})
        if not isinstance(wanted, dict):
            raise RpcError(-32602, "subscriptions/listen params.notifications must be an object")
        return Listen(req_id, wanted.get("toolsListChanged") is True)
    if method == "ping":
        raise RpcError(-32601, f"Method not found: ping (removed in {', '.join(VERSIONS)})")
    raise RpcError(-32601, f"Method not found: {method}")


def modern_tools(k):
    with LOCK:
        n = BUMPS
    def tool(name, description, schema=NO_ARGS):
        return {"name": name, "description": description, "inputSchema": schema}
    return [
        ECHO,
        tool("whoami", "The request's _meta, MCP headers and JSON-RPC id",
             {"type": "object", "properties": {
                 "region": {"type": "string", "x-mcp-header": "Region"}}}),
        tool("ask", "Asks the user's name (elicitation via input_required)"),
        tool("sample", "Asks the client's LLM (sampling via input_required)"),
        tool("roots", "Asks the client's roots (roots/list via input_required)"),
        tool("state_only", "input_required with only a requestState, `rounds` times",
             {"type": "object", "properties": {"rounds": {"type": "integer", "minimum": 0}}}),
        tool("loop", "input_required forever"),
        tool("end_listen", "Ends every open subscriptions/listen: graceful (a complete result) or "
             "not (HTTP only: the stream ends without one)",
             {"type": "object", "properties": {"graceful": {"type": "boolean"}}}),
        tool("cut_stream", "HTTP: an event stream with one event (id e1) that ends before the "
             "answer; stdio: no answer"),
        tool("hold", "Sleeps ms milliseconds (default 300); counts the holds running at once",
             {"type": "object", "properties": {"ms": {"type": "integer", "minimum": 0}}}),
        tool("no_answer", "HTTP: the POST is answered 202 Accepted with no body; stdio: no answer"),
        tool(f"gen_{k}", f"Generation {k} of the tool list"),
        dict(tool("shaped", "Structured content of the shape asked for",
                  {"type": "object", "properties": {"mode": {"type": "string"}}}),
             outputSchema={"type": "object", "properties": {"n": {"type": "integer"}},
                           "required": ["n"]}),
        tool("versioned", "Its input schema changes at each bump: v must be the bump count",
             {"type": "object", "properties": {"v": {"const": n}}, "required": ["v"]}),
        tool("draft7", "A draft-07 input schema",
             {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
              "properties": {"list": {"type": "array", "items": [{"type": "string"}]}}}),
        tool("bump", "Adds a tool (added_<n>) and notifies the toolsListChanged subscriptions"),
        tool("freeze_list", "Stops answering tools/list and says the list changed"),
    ] + ([tool(f"added_{n}", f"Added by bump number {n}")] if n else [])


def issue(tool, req_id, state, requests=None, **keep):
    """An input_required result, its requestState remembered with the id it answers."""
    with LOCK:
        STATES[state] = {"tool": tool, "id": req_id, **keep}
        STATS["input_required"] += 1
    result = {"resultType": "input_required", "requestState": state}
    if requests is not None:
        result["inputRequests"] = requests
    return result


def redeem(tool, params, req_id, key=None, use_up=False):
    """The record of a retry's requestState (and its inputResponses[key]), or ToolFail."""
    state = params.get("requestState")
    with LOCK:
        record = STATES.get(state) if isinstance(state, str) else None
        if record is None or record["tool"] != tool:
            raise ToolFail("bad requestState")
        if record["id"] == req_id:
            raise ToolFail("retry reused the request id")
        if use_up:
            del STATES[state]
    if key is None:
        return record, None
    responses = params.get("inputResponses")
    if not isinstance(responses, dict) or key not in responses:
        raise ToolFail(f"missing inputResponses.{key}")
    return record, responses[key]


def nonce():
    return secrets.token_hex(8)


def call_tool(params, req_id, headers):
    name = params.get("name")
    if not isinstance(name, str):
        raise RpcError(-32602, "tools/call needs a string params.name")
    STATS.bump("tool_calls", name)
    args = params.get("arguments")
    args = args if isinstance(args, dict) else {}
    retry = "requestState" in params or "inputResponses" in params
    try:
        if name == "echo":
            if not isinstance(args.get("message"), str):
                raise ToolFail("echo needs a string message")
            kit.CALL_LOG.append(args["message"])
            return text_result(f"Echo: {args['message']}")
        if name == "shaped":
            mode = args.get("mode")
            result = text_result(f"shaped {mode}", is_error=mode == "error")
            if mode in ("good", "wrong"):
                result["structuredContent"] = {"n": 1 if mode == "good" else "one"}
            return result
        if name == "draft7":
            return text_result("draft7 ok")
        if name == "versioned":
            return text_result(f"versioned {args.get('v')}")
        if name == "whoami":
            seen = {}
            if headers is not None:
                for h in ("mcp-protocol-version", "mcp-method", "mcp-name", "mcp-session-id",
                          "mcp-param-region"):
                    if headers.get(h) is not None:
                        seen[h] = headers.get(h)
            return text_result(dumps({"meta": params.get("_meta"), "headers": seen, "id": req_id}))
        m = re.fullmatch(r"gen_(\d+)", name)
        if m:
            return text_result(f"generation {m.group(1)}")
        if name == "ask":
            if not retry:
                return issue("ask", req_id, f"ask:{nonce()}", {"name": ASK_REQUEST})
            _, answer = redeem("ask", params, req_id, "name")
            action = answer.get("action") if isinstance(answer, dict) else None
            if action == "accept":
                content = answer.get("content")
                who = content.get("name") if isinstance(content, dict) else None
                return text_result(f"hello {who}")
            if action in ("decline", "cancel"):
                return text_result({"decline": "declined", "cancel": "cancelled"}[action])
            raise ToolFail(f"unexpected elicitation answer {dumps(answer)}")
        if name == "sample":
            if not retry:
                return issue("sample", req_id, f"sample:{nonce()}", {"llm": SAMPLE_REQUEST})
            _, answer = redeem("sample", params, req_id, "llm")
            STATS.bump("sampling_answered")
            return text_result(f"sampled: {dumps(answer)}")
        if name == "roots":
            if not retry:
                return issue("roots", req_id, f"roots:{nonce()}", {"r": ROOTS_REQUEST})
            _, answer = redeem("roots", params, req_id, "r")
            return text_result(f"roots: {dumps(answer)}")
        if name == "state_only":
            if not retry:
                rounds = args.get("rounds", 2)
                if not isinstance(rounds, int) or isinstance(rounds, bool) or rounds < 0:
                    raise ToolFail("rounds must be a non-negative integer")
                if rounds == 0:
                    return text_result("done after 0 rounds")
                return issue("state_only", req_id, f"so:{rounds}:{nonce()}", rounds=rounds,
                             remaining=rounds)
            record, _ = redeem("state_only", params, req_id, use_up=True)
            remaining = record["remaining"] - 1
            if remaining == 0:
                return text_result(f"done after {record['rounds']} rounds")
            return issue("state_only", req_id, f"so:{remaining}:{nonce()}",
                         rounds=record["rounds"], remaining=remaining)
        m = re.fullmatch(r"added_(\d+)", name)
        if m:
            return text_result(f"added {m.group(1)}")
        if name == "bump":
            return bump_tool()
        if name == "freeze_list":
            return freeze_list_tool()
        if name == "no_answer":
            return NO_ANSWER
        if name == "hold":
            return hold_tool(args.get("ms", 300))
        if name == "cut_stream":
            return CUT_STREAM
        if name == "end_listen":
            return end_listen_tool(args.get("graceful") is True)
        if name == "loop":
            STATS.bump("loop_rounds")
            return issue("loop", req_id, f"loop:{nonce()}", {"name": ASK_REQUEST})
        return text_result(f"unknown tool {name}", True)
    except ToolFail as fail:
        return text_result(str(fail), True)


def hold_tool(ms):
    global HOLDS
    if not isinstance(ms, int) or isinstance(ms, bool) or not 0 <= ms <= 60_000:
        raise ToolFail("ms must be an integer within 0..60000")
    with LOCK:
        HOLDS += 1
        STATS["holds_most"] = max(STATS["holds_most"], HOLDS)
    try:
        time.sleep(ms / 1000)
    finally:
        with LOCK:
            HOLDS -= 1
    return text_result(f"held {ms} ms")


def end_listen_tool(graceful):
    """Ends every open subscription: graceful -> its listen request is answered
    {resultType: complete} first; else (HTTP) its stream just ends. stdio ends only gracefully."""
    with LOCK:
        targets = list(SUBS.values())
    ended = 0
    for sub in targets:
        if sub.transport == "stdio" and not graceful:
            continue
        if sub.transport == "stdio":
            close_subscription(sub)
            write_line(listen_complete(sub))
        else:
            sub.deliver(END_GRACEFUL if graceful else END_ABRUPT)
        ended += 1
    return text_result(f"ended {ended} subscriptions")


def listen_complete(sub):
    return {"jsonrpc": "2.0", "id": sub.req_id,
            "result": {"resultType": "complete", "_meta": {META_SUB_ID: sub.req_id}}}


def freeze_list_tool():
    global FROZEN
    with LOCK:
        FROZEN = True
    told = bump_tool()["content"][0]["text"].split("(", 1)[1]
    return text_result(f"frozen ({told}")


def bump_tool():
    global BUMPS
    with LOCK:
        BUMPS += 1
        n = BUMPS
        targets = [s for s in SUBS.values() if s.tools]
    notified = 0
    for sub in targets:
        note = {"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": {"_meta": {META_SUB_ID: sub.req_id}}}
        if sub.deliver(note):
            notified += 1
    return text_result(f"bumped {n} (notified {notified} subscriptions)")


# --- stdio --------------------------------------------------------------------------------------

def serve_stdio():
    era = "legacy 2025-11-25" if ARGS.mode in LEGACY_MODES else f"versions {','.join(VERSIONS)}"
    eprint(f"serving stdio ({era})")
    for line, msg in kit.stdin_messages():
        if msg is kit.NOT_JSON:
            eprint(f"parse error on a line of {len(line)} bytes")
            answer = error_response(None, RpcError(-32700, "Parse error"))
        else:
            answer = safe_process(msg)[1]
            if answer is CUT_STREAM:
                answer = None
        if isinstance(answer, Listen):
            sub = Subscription(answer.req_id, answer.tools, "stdio")
            open_subscription(sub)
            answer = sub.ack()
        # Published before the answer is written: a client that ends the process on reading
        # it (a refused initialize) must find the request counted already.
        publish_stats(True)
        if answer is not None and not write_line(answer):
            eprint("stdout closed; exiting")
            return 0
    eprint("stdin closed; exiting")
    return 0


# --- http ---------------------------------------------------------------------------------------

class Handler(kit.Handler):
    server_version = "era-server/0.1"

    def do_GET(self):
        if self.command == "GET" and self.path_only() == "/stats":
            self.reply(200, STATS.json().encode(), "application/json")
        elif self.path_only() == "/mcp":
            with LOCK:
                STATS["mcp_gets"] += 1
            publish_stats(False)
            self.reply(405, b"", headers=[("Allow", "POST")])
        else:
            self.not_found()

    do_DELETE = do_GET

    def do_POST(self):
        if self.path_only() != "/mcp":
            self.not_found()
            return
        body = self.read_capped_body(MAX_BODY)
        if body is None:
            return
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            status, answer = 400, error_response(None, RpcError(-32700, "Parse error"))
        else:
            status, answer = safe_process(msg, self.headers)
        if isinstance(answer, Listen):
            self.serve_listen(Subscription(answer.req_id, answer.tools, "http"))
            return
        publish_stats(False)
        if answer is PLAIN_REFUSAL:
            self.reply(405, b"no subscriptions here", "text/plain; charset=utf-8")
            return
        if answer is CUT_STREAM:
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Transfer-Encoding", "chunked")
            # Announced: a client must not reuse this connection, which closes after the body.
            self.send_header("Connection", "close")
            self.end_headers()
            note = {"jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "the answer will not come"}}
            self.write_chunk(b"id: e1\ndata: " + dumps(note).encode() + b"\n\n")
            self.end_chunks()
            return
        if answer is None:
            self.reply(status or 202)
        else:
            self.reply_json(status, answer)

    def serve_listen(self, sub):
        """The event stream of one subscription, until the client leaves."""
        open_subscription(sub)
        publish_stats(False)
        try:
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Cache-Control", "no-cache")
            self.send_header("X-Accel-Buffering", "no")
            self.send_header("Transfer-Encoding", "chunked")
            # The connection closes with the stream: announced, so it is never reused.
            self.send_header("Connection", "close")
            self.end_headers()
            self.write_chunk(b"data: " + dumps(sub.ack()).encode() + b"\n\n")
            last_write = time.monotonic()
            while True:
                try:
                    item = sub.queue.get(timeout=0.2)
                except queue.Empty:
                    if self.client_gone():
                        break
                    if time.monotonic() - last_write >= KEEPALIVE_S:
                        self.write_chunk(b":\n\n")
                        last_write = time.monotonic()
                    continue
                if item is END_GRACEFUL:
                    self.write_chunk(b"data: " + dumps(listen_complete(sub)).encode() + b"\n\n")
                if item is END_GRACEFUL or item is END_ABRUPT:
                    self.end_chunks()
                    break
                self.write_chunk(b"data: " + dumps(item).encode() + b"\n\n")
                last_write = time.monotonic()
        except (BrokenPipeError, ConnectionResetError, ConnectionAbortedError, OSError):
            pass
        finally:
            self.close_connection = True
            close_subscription(sub)
            publish_stats(False)


def serve_http():
    httpd = kit.bind(lambda: kit.Server(("127.0.0.1", ARGS.port), Handler), ARGS.bind_retry_ms)
    return kit.serve(httpd, f"listening on 127.0.0.1:{httpd.server_address[1]} "
                            f"(versions {','.join(VERSIONS)})")


def main():
    global ARGS, VERSIONS, SWITCHED
    parser = kit.arguments("MCP server for the protocol-era tests", MODES, "modern-only",
                           transport=True, flags=["port", "bind-retry-ms", "call-log", "stats-file"])
    parser.add_argument("--versions", default="2026-07-28",
                        help="modern modes: comma-separated supported protocol versions")
    parser.add_argument("--ttl-ms", type=int, default=0, help="ttlMs of tools/list")
    parser.add_argument("--refuse-listen", choices=["json", "plain"], default=None,
                        help="modern modes: refuse subscriptions/listen (still offering "
                             "tools.listChanged): json -> -32601 (HTTP 404 with the JSON-RPC "
                             "error); plain -> HTTP 405 text/plain (stdio: as json)")
    parser.add_argument("--legacy-after", type=int, default=None, metavar="N",
                        help="modern modes: switch to a legacy-only (2025-11-25) server once N "
                             "modern tools/call were served")
    ARGS = kit.parse(parser, "era_server[{mode}]", STATS)
    if ARGS.transport == "http" and ARGS.mode == "exit-before-init":
        parser.error(f"--mode {ARGS.mode} is stdio only")
    if ARGS.legacy_after is not None:
        if ARGS.mode in LEGACY_MODES:
            parser.error(f"--legacy-after is for the modern modes, not --mode {ARGS.mode}")
        if ARGS.legacy_after < 0:
            parser.error("--legacy-after must be >= 0")
    if ARGS.legacy_after == 0:
        SWITCHED = True
        STATS["switched"] = True
    VERSIONS = [v.strip() for v in ARGS.versions.split(",") if v.strip()]
    if not VERSIONS:
        parser.error("--versions names no version")
    STATS["mode"] = ARGS.mode
    sys.exit(serve_stdio() if ARGS.transport == "stdio" else serve_http())


if __name__ == "__main__":
    main()
