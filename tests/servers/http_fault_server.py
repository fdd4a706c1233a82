#!/usr/bin/env python3
"""An MCP server on the Streamable HTTP transport (2025-11-25) with faults on demand, for kaged-mcp's tests.

Usage:  python3 http_fault_server.py [--port N] [--mode MODE] [--answers sse|json] [--stateless]
                                     [--secret S] [--log FILE] [--call-log FILE] [--delay SECS]
                                     [--retry-ms N]
                                     [--chaos-every N] [--chaos-seed S] [--burst N]
                                     [--bind-retry-ms N] [--status N] [--verbs V,...] [--size N]

Python 3 stdlib only. Listens on 127.0.0.1 (threads, HTTP/1.1, TCP_NODELAY). The first line on
stdout is always `PORT=<n>` (flushed), so `--port 0` lets the OS pick; one line on stderr on start.

The transport (one endpoint, /mcp; any other path -> 404):
  POST /mcp, a request          -> --answers sse (default): 200 text/event-stream (chunked), one
                                   `event: message` / `id: <stream>-<n>` (n from 1) / `data: <json>`
                                   event per message, ended after the response;
                                   --answers json: 200 application/json, the response as the body
  POST /mcp, a notification or
             an answer to ours   -> 202, no body
  POST /mcp, errors              -> bad JSON, a batch or not JSON-RPC 400; Accept lacking
                                   application/json or text/event-stream 406; an unsupported
                                   MCP-Protocol-Version header 400
  GET  /mcp (Accept: text/event-stream)
                                -> 200 standalone stream: a notifications/message (level info, data
                                   "hello from GET") at once, then `: keepalive` every 5 s, plus any
                                   server request with no POST stream to ride (ask under --answers
                                   json); with `Last-Event-ID` it resumes a stream instead: a cut
                                   response stream (see cut_before_answer) or a standalone stream of
                                   the session; an unknown Last-Event-ID -> 404; no text/event-stream
                                   in Accept -> 406
  DELETE /mcp                   -> forgets the session, 200 (405 with --stateless)
Sessions (unless --stateless): initialize issues `Mcp-Session-Id: <32 hex>`; every later request
must carry it: missing 400, unknown, deleted or expired 404 (JSON-RPC error bodies, id null).
MCP: initialize (protocolVersion = the client's if 2025-03-26, 2025-06-18 or 2025-11-25, else
2025-11-25; serverInfo {name "http-fault", version "1"}; capabilities {tools: {listChanged: true}}),
ping, tools/list, tools/call; unknown methods -32601, unknown tools -32602. Tools:
  echo {message}  -> "Echo: <message>"; with --call-log FILE each executed echo appends its message
                     (JSON-encoded, one line) there, so a test can prove nothing ran twice
  big {n}         -> a text of n bytes ("x" repeated), one message, written in 64 KiB pieces
  endless {}      -> an answer that never ends: one `data:` line (or, with json answers, a body
                     `{"jsonrpc":"2.0","id":N,"result":{"content":[{"type":"text","text":"xxx...`)
                     growing by 64 KiB of "x" until the client goes away
  declared {n}    -> a JSON answer (whatever --answers says) declaring `Content-Length: <n>` (default
                     99999999999): the prefix of a filled answer, then one "x" every 200 ms (at most
                     60 s) until the client goes away
  ask {}          -> sends the requests ping (id "p1") and sampling/createMessage (id 7) on the POST's
                     stream (with json answers: on the session's GET stream), waits (up to 30 s) for
                     both answers to be POSTed on the same session, then answers with a text holding
                     the JSON {"ping": <answer>, "sampling": <answer>} (minus "jsonrpc"; null if none)
  slow {ms}       -> sleeps ms milliseconds, then "slept <ms>"
  (schema tools, for the validation tests; the same in era_server.py)
  shaped {mode}   -> outputSchema {n: integer, required}; mode "good": structuredContent {"n": 1},
                     "wrong": {"n": "one"}, "none": no structuredContent, "error": isError true and
                     none; each answer's text is "shaped <mode>"
  draft7 {list}   -> inputSchema in draft-07 (`$schema`), `list` an array-form `items` (tuple: the
                     first item a string); -> "draft7 ok"
  remote_ref {}   -> inputSchema {"$ref": "http://127.0.0.1:<port>/schema.json"} (GET
                     /schema.json on this server: 404, logged, so a test proves it was never
                     fetched); -> "remote_ref ok"
  bad_schema {}   -> inputSchema {"type": 12} (not a valid schema); -> "bad_schema ok"
  http_NNN {retry_after, body}
                  -> (any mode) the POST of that call is answered with status NNN and an empty body
                     (with `body`, that text as text/plain), with `Retry-After: <retry_after>` when
                     given; the call is not processed

Modes (--mode):
  ok                 as above
  expire_after_first the session of the first tools/call ever answered is forgotten as that answer is
                     sent (its id then gets 404, its GET streams end); later sessions live on
  cut_before_answer  each tools/call of echo gets a stream (even with --answers json) sending only a
                     priming event (`id: <stream>-0`, `retry: <--retry-ms, default 300>`, empty
                     `data:`) and then ending properly (last chunk) BEFORE the answer; the echo runs
                     once and its answer is kept; GET with `Last-Event-ID: <stream>-0` (and the
                     session id) -> 200 stream sending the answer as `id: <stream>-1`, then ending
                     (`<stream>-1` -> 200 stream ending at once); the log tells each GET's "resumed"
                     and "since_cut_ms"
  no_get             GET and DELETE -> 405 with `Allow: POST`
  auth               401 (text/plain body `unauthorized`) on every request unless
                     `Authorization: Bearer <secret>` (--secret, default s3cret); with no
                     Authorization header its `WWW-Authenticate` is `Bearer realm="mcp"` alone, with a
                     wrong one `Bearer realm="mcp", error="invalid_token", error_description="The token
                     expired at 10:00"` (RFC 6750 §3.1: no error code when no credentials were sent)
  forbidden          403 on every request (text/plain body `forbidden`, no WWW-Authenticate)
  host_check         403 on every request, text/plain body `Access is only allowed at localhost:8601`,
                     no WWW-Authenticate (as @playwright/mcp refuses a request whose Host it does not
                     serve)
  forbidden_noisy    403 on every request, text/plain, no WWW-Authenticate: a 10 KiB body that starts
                     with ANSI escapes (colour, an OSC window title), CR/LF, NUL, BEL, a U+202E override,
                     and `FAKE LOG LINE`, then "x" up to 10240 bytes
  slow_headers       every tools/call POST's response headers (and its processing) come after --delay
                     seconds
                     (default 30)
  malformed_sse      before each message on a POST's event stream: a `:` comment, an event with only
                     `id:`, a `data: not json` event, an event of type `weird` (its data a JSON-RPC
                     answer to the same id with the text "WRONG: event type weird"), a line without a
                     colon; CRLF and LF line endings mixed; the real message's `data:` split over two
                     lines (no effect on json answers)
  drop_first         the first GET and the first DELETE the server gets are read and their connection
                     closed without any answer (logged with status "dropped"), as a server does that
                     closes an idle keep-alive connection just as the client reuses it; every later one
                     as in ok
  chaos              (for the soak) each tools/call of echo draws one fault at random (--chaos-seed,
                     default from the clock): with odds 1/--chaos-every each (default 1000), the
                     session is forgotten as its answer is sent (as expire_after_first, any session,
                     any number of times), the answer stream is cut before the answer (as
                     cut_before_answer, resumable), or the answer comes after --delay seconds
                     (default 30; set it past the client's timeout); otherwise as in ok. Each fault
                     is one line on stderr, `chaos: expire|cut|slow <message>`
  expire_burst       the first --burst (default 8) tools/call POSTs of the first session are held until
                     all have arrived (at most 10 s), then the session is forgotten and each is
                     answered 404 (none is processed), as a server ends a session while several
                     calls are on their way; later sessions as in ok
  redirect           every POST -> 307 with `Location: http://127.0.0.2:<port>/mcp` (GET and DELETE as
                     in ok); a second listener on 127.0.0.2:<port> answers everything 404 and logs it
                     (with "listener": "127.0.0.2") so a test can prove nothing, and no Authorization
                     header, leaked
  later              --verbs (default POST,GET,DELETE; POST: tools/call only) answered --status (default
                     307), unprocessed: a 3xx with `Location` as in redirect, 401 `error="invalid_token"`
  drop_call          the first tools/call POST is dropped (not processed) as drop_first drops a GET
  big_get            GET streams start with a notifications/message of --size (3000000) bytes of "x"

--log FILE appends one JSON line per HTTP request, flushed, written before the response's last byte:
{"listener", "verb", "path", "status", "session" (the Mcp-Session-Id header or null),
"protocol_version" (the MCP-Protocol-Version header or null), "last_event_id" (header or null),
"accept" (header or null), "id", "method", "tool", "response" (true for a POSTed answer to our
request), "authorization" (true when an Authorization header was present; never its value),
"resumed" (GET: true when it resumed a stream; null otherwise)}; also "issued_session" on an
initialize that issued one, and "since_cut_ms" on a GET resuming a cut stream.
"""

import json
import queue
import random
import secrets
import threading
import time

import mcp_test_kit as kit
from mcp_test_kit import dumps, eprint, text_result

MODES = ["ok", "expire_after_first", "cut_before_answer", "no_get", "auth", "forbidden", "host_check",
         "forbidden_noisy", "slow_headers", "malformed_sse", "redirect", "drop_first", "chaos",
         "expire_burst", "later", "drop_call", "big_get"]
REFUSING = ("forbidden", "host_check", "forbidden_noisy")  # modes refusing every request with 403
NOISY_HEAD = ("\x1b[31mred\x1b[0m \x1b]0;owned\x07\r\nFAKE LOG LINE\x00\x07 \u202eesrever"
              " the rest is x: ")
NOISY_BODY = (NOISY_HEAD.encode() + b"x" * 10240)[:10240]
VERSIONS = ["2025-03-26", "2025-06-18", "2025-11-25"]
LATEST = "2025-11-25"
PIECE = 64 * 1024
KEEPALIVE_SECS = 5.0

ARGS = None
PORT = 0
SESSIONS = kit.Sessions()
EXPIRED = {"done": False}  # expire_after_first: has a session been forgotten yet
EXPIRED_LOCK = threading.Lock()
DROPPED = set()  # drop_first: the verbs whose first request was dropped
DROPPED_LOCK = threading.Lock()
BURST = {"arrived": 0, "first": None}  # expire_burst: the held POSTs, the first session's id
BURST_COND = threading.Condition()
CHAOS = random.Random()  # chaos: the draws (seeded in main)
CHAOS_LOCK = threading.Lock()


def new_stream_id():
    return secrets.token_hex(8)


class Session(kit.AwaitedAnswers):
    """One MCP session: answers awaited from the client, its GET streams' outbox, cut streams."""

    def __init__(self, id_):
        super().__init__()
        self.id = id_
        self.alive = True
        self.outbox = queue.Queue()  # server messages for a GET stream
        self.cut = {}  # stream id -> {"answer": msg, "cut_at": monotonic or None}
        self.get_streams = set()  # ids of standalone streams opened so far (resumable)
        self.lock = threading.Lock()


STATELESS = Session(None)  # with --stateless, the one "session" everything shares


def forget(session):
    session.alive = False
    SESSIONS.pop(session.id)


def as_int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


class Body:
    """A JSON message to write: prefix, then `fill` bytes of "x" (None: forever), then suffix."""

    SENTINEL = "\u0000FILL\u0000"

    def __init__(self, msg, fill=0, filled=False):
        text = dumps(msg)
        mark = dumps(self.SENTINEL)[1:-1]
        if filled:
            head, _, tail = text.partition(mark)
            self.prefix, self.suffix, self.fill = head.encode(), tail.encode(), fill
        else:
            self.prefix, self.suffix, self.fill = text.encode(), b"", 0

    @classmethod
    def filled(cls, id_, fill):
        return cls({"jsonrpc": "2.0", "id": id_, "result": text_result(cls.SENTINEL)}, fill, True)

    def length(self):
        return None if self.fill is None else len(self.prefix) + self.fill + len(self.suffix)

    def pieces(self):
        """The bytes after the prefix."""
        if self.fill is None:
            chunk = b"x" * PIECE
            while True:
                yield chunk
        left = self.fill
        chunk = b"x" * min(PIECE, left)
        while left > 0:
            n = min(PIECE, left)
            yield chunk if n == len(chunk) else chunk[:n]
            left -= n
        if self.suffix:
            yield self.suffix


TOOLS = [
    {"name": "echo", "description": "Echo the message back",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}},
                     "required": ["message"]}},
    {"name": "big", "description": "A text of n bytes",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}},
    {"name": "endless", "description": "An answer that never ends",
     "inputSchema": {"type": "object", "properties": {}}},
    {"name": "declared", "description": "A JSON answer declaring n bytes, trickling",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    kit.ASK_TOOL,
    {"name": "slow", "description": "Sleeps ms milliseconds",
     "inputSchema": {"type": "object", "properties": {"ms": {"type": "integer"}}, "required": ["ms"]}},
]


def schema_tools():
    """The schema tools (see the docstring); remote_ref's $ref names this server's port."""
    return [
        {"name": "shaped", "description": "Structured content of the shape asked for",
         "inputSchema": {"type": "object", "properties": {"mode": {"type": "string"}}},
         "outputSchema": {"type": "object", "properties": {"n": {"type": "integer"}},
                          "required": ["n"]}},
        {"name": "draft7", "description": "A draft-07 input schema",
         "inputSchema": {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
                         "properties": {"list": {"type": "array", "items": [{"type": "string"}]}}}},
        {"name": "remote_ref", "description": "An input schema that is a remote $ref",
         "inputSchema": {"$ref": f"http://127.0.0.1:{PORT}/schema.json"}},
        {"name": "bad_schema", "description": "An input schema that is not a schema",
         "inputSchema": {"type": 12}},
    ]


def shaped_result(mode):
    result = text_result(f"shaped {mode}")
    if mode == "good":
        result["structuredContent"] = {"n": 1}
    elif mode == "wrong":
        result["structuredContent"] = {"n": "one"}
    elif mode == "error":
        result["isError"] = True
    return result


class Handler(kit.Handler):
    server_version = "http-fault-server/0.1"
    listener = "127.0.0.1"

    # --- helpers ------------------------------------------------------------------------------

    def read_body(self):
        return kit.read_body(self)

    def start_log(self):
        self.entry = {
            "listener": self.listener, "verb": self.command, "path": self.path, "status": None,
            "session": self.headers.get("Mcp-Session-Id"),
            "protocol_version": self.headers.get("MCP-Protocol-Version"),
            "last_event_id": self.headers.get("Last-Event-ID"),
            "accept": self.headers.get("Accept"),
            "host": self.headers.get_all("Host") or [],
            "id": None, "method": None, "tool": None, "response": False,
            "authorization": "Authorization" in self.headers,
            "resumed": None,
        }

    def log(self, status, **fields):
        self.entry["status"] = status
        self.entry.update(fields)
        kit.REQUEST_LOG.append(self.entry)

    def note_message(self, msg):
        """Copies id, method and tool of a parsed message into the log entry."""
        if not isinstance(msg, dict):
            return
        self.entry["id"] = msg.get("id")
        if "method" in msg:
            self.entry["method"] = msg["method"]
            if msg["method"] == "tools/call" and isinstance(msg.get("params"), dict):
                self.entry["tool"] = msg["params"].get("name")
        elif "result" in msg or "error" in msg:
            self.entry["response"] = True

    def reply(self, status, body=b"", content_type=None, headers=(), **fields):
        """A whole response with Content-Length; logged first."""
        self.log(status, **fields)
        super().reply(status, body, content_type, headers)

    def authorized(self):
        if ARGS.mode in REFUSING:
            return False
        return ARGS.mode != "auth" or kit.bearer_is(self.headers, ARGS.secret)

    def refuse(self):
        if ARGS.mode == "forbidden":
            self.reply(403, b"forbidden", "text/plain; charset=utf-8")
        elif ARGS.mode == "host_check":
            self.reply(403, b"Access is only allowed at localhost:8601", "text/plain; charset=utf-8")
        elif ARGS.mode == "forbidden_noisy":
            self.reply(403, NOISY_BODY, "text/plain; charset=utf-8")
        elif "Authorization" in self.headers:
            challenge = ('Bearer realm="mcp", error="invalid_token", '
                         'error_description="The token expired at 10:00"')
            self.reply(401, b"unauthorized", "text/plain; charset=utf-8",
                       [("WWW-Authenticate", challenge)])
        else:
            self.reply(401, b"unauthorized", "text/plain; charset=utf-8",
                       [("WWW-Authenticate", 'Bearer realm="mcp"')])

    def accepts(self, *types):
        accept = self.headers.get("Accept", "").lower()
        return all(t in accept for t in types)

    def version_ok(self):
        refusal = kit.unsupported_version(self.headers, VERSIONS)
        if refusal is None:
            return True
        self.rpc_error(400, -32000, refusal)
        return False

    def session(self):
        """The request's session, or None after answering 400/404."""
        if ARGS.stateless:
            return STATELESS
        return self.session_from(SESSIONS)

    def versioned_session(self):
        """A GET's or DELETE's session, or None once answered (a bad MCP-Protocol-Version, 400/404)."""
        return self.session() if self.version_ok() else None

    def common_checks(self):
        """Path, auth; False once answered."""
        if self.path_only() != "/mcp":
            self.not_found()
            return False
        if not self.authorized():
            self.refuse()
            return False
        return True

    # --- chunked event streams ----------------------------------------------------------------

    def start_stream(self, status=200, headers=(), **fields):
        self.log(status, **fields)
        super().start_stream(status, headers)

    def event(self, stream_id, n, body, split=False):
        """One `event: message`; with split, its data over two `data:` lines."""
        head = f"event: message\nid: {stream_id}-{n}\ndata: ".encode()
        prefix = body.prefix
        if split and prefix.startswith(b'{"jsonrpc":"2.0",'):
            cut = len(b'{"jsonrpc":"2.0",')
            head += prefix[:cut] + b"\r\ndata: "
            prefix = prefix[cut:]
        self.write_chunk(head + prefix)
        for piece in body.pieces():
            self.write_chunk(piece)
        self.write_chunk(b"\n\n")

    def junk(self, stream_id, req_id):
        wrong = dumps({"jsonrpc": "2.0", "id": req_id,
                       "result": text_result("WRONG: event type weird")})
        self.write_chunk(": a comment before the message\r\n\r\n"
                   f"id: {stream_id}-junk\n\n"
                   "data: not json\r\n\n"
                   f"event: weird\ndata: {wrong}\r\n\r\n"
                   "a line without a colon\n\r\n")

    # --- GET /mcp -----------------------------------------------------------------------------

    def dropped_first(self, verb, mode="drop_first"):
        """In `mode`: closes the connection of the first `verb` request without an answer."""
        if ARGS.mode != mode:
            return False
        with DROPPED_LOCK:
            if verb in DROPPED:
                return False
            DROPPED.add(verb)
        self.log("dropped")
        self.drop()
        return True

    def get_or_delete(self):
        """The checks GET and DELETE share: False once answered (or dropped)."""
        self.start_log()
        self.read_body()
        if self.dropped_first(self.command):
            return False
        if self.command == "GET":
            self.entry["resumed"] = False
        if not self.common_checks():
            return False
        if ARGS.mode == "later" and self.command in ARGS.verbs.split(","):
            self.later()
            return False
        if ARGS.mode == "no_get":
            self.reply(405, b"", headers=[("Allow", "POST")])
            return False
        return True

    def do_GET(self):
        if not self.get_or_delete():
            return
        if not self.accepts("text/event-stream"):
            self.rpc_error(406, -32000, "Not Acceptable: Accept must list text/event-stream")
            return
        session = self.versioned_session()
        if session is None:
            return
        last = self.headers.get("Last-Event-ID")
        if last is None:
            stream_id = new_stream_id()
            with session.lock:
                session.get_streams.add(stream_id)
            self.standalone(session, stream_id, 0)
            return
        stream_id, _, n = last.strip().rpartition("-")
        n = int(n) if n.isdigit() else -1
        with session.lock:
            cut = session.cut.get(stream_id)
            standalone = stream_id in session.get_streams
        if cut is not None and n >= 0:
            since = None
            if cut["cut_at"] is not None:
                since = round((time.monotonic() - cut["cut_at"]) * 1000)
            eprint(f"resuming stream {stream_id} after event {n}, {since} ms after the cut")
            try:
                self.start_stream(resumed=True, since_cut_ms=since)
                if n == 0:
                    self.event(stream_id, 1, Body(cut["answer"]))
                self.end_chunks()
            except (BrokenPipeError, ConnectionResetError):
                self.close_connection = True
            return
        if standalone and n >= 0:
            self.standalone(session, stream_id, n, resumed=True)
            return
        self.rpc_error(404, -32001, f"Unknown Last-Event-ID {last}")

    def standalone(self, session, stream_id, last_n, resumed=False):
        n = last_n
        try:
            self.start_stream(resumed=resumed)
            if not resumed and ARGS.mode == "big_get":
                n += 1
                self.event(stream_id, n, Body({"jsonrpc": "2.0", "method": "notifications/message",
                                               "params": {"level": "info", "data": Body.SENTINEL}},
                                              ARGS.size, True))
            if not resumed:
                n += 1
                self.event(stream_id, n, Body({
                    "jsonrpc": "2.0", "method": "notifications/message",
                    "params": {"level": "info", "data": "hello from GET"}}))
            next_keepalive = time.monotonic() + KEEPALIVE_SECS
            while session.alive:
                try:
                    msg = session.outbox.get(timeout=0.25)
                except queue.Empty:
                    msg = None
                if msg is not None:
                    n += 1
                    self.event(stream_id, n, Body(msg))
                if time.monotonic() >= next_keepalive:
                    self.write_chunk(": keepalive\n\n")
                    next_keepalive += KEEPALIVE_SECS
            eprint(f"session {session.id} is gone: ending GET stream {stream_id}")
            self.end_chunks()
        except (BrokenPipeError, ConnectionResetError):
            eprint(f"GET stream {stream_id} closed by the client")
            self.close_connection = True

    # --- DELETE /mcp --------------------------------------------------------------------------

    def do_DELETE(self):
        if not self.get_or_delete():
            return
        if ARGS.stateless:
            self.reply(405, b"", headers=[("Allow", "GET, POST")])
            return
        session = self.versioned_session()
        if session is None:
            return
        forget(session)
        eprint(f"session {session.id} deleted")
        self.reply(200)

    # --- POST /mcp ----------------------------------------------------------------------------

    def do_POST(self):
        self.start_log()
        body = self.read_body()
        try:
            msg = json.loads(body)
        except ValueError:
            msg = None
        self.note_message(msg)
        if not self.common_checks():
            return
        if ARGS.mode == "redirect":
            self.reply(307, b"", headers=[("Location", f"http://127.0.0.2:{PORT}/mcp")])
            return
        if ARGS.mode == "slow_headers" and self.entry.get("method") == "tools/call":
            time.sleep(ARGS.delay)
        if not self.accepts("application/json", "text/event-stream"):
            self.rpc_error(406, -32000,
                           "Not Acceptable: Accept must list application/json and text/event-stream")
            return
        if not self.version_ok():
            return
        if not isinstance(msg, dict):
            code, text = (-32700, "Parse error") if msg is None else (-32600, "Invalid Request")
            self.rpc_error(400, code, text)
            return
        is_request = "method" in msg and "id" in msg
        is_notification = "method" in msg and "id" not in msg
        is_response = "method" not in msg and "id" in msg and ("result" in msg or "error" in msg)
        if not (is_request or is_notification or is_response):
            self.rpc_error(400, -32600, "Invalid Request")
            return
        headers = []
        if is_request and msg["method"] == "initialize":
            session = STATELESS
            if not ARGS.stateless:
                session = Session(secrets.token_hex(16))
                SESSIONS.add(session)
                headers.append(("Mcp-Session-Id", session.id))
                self.entry["issued_session"] = session.id
        else:
            session = self.session()
            if session is None:
                return
        tool = self.entry["tool"]
        if tool is not None and self.dropped_first("tools/call", "drop_call"):
            return
        if ARGS.mode == "later" and tool is not None and "POST" in ARGS.verbs.split(","):
            self.later()
            return
        if ARGS.mode == "expire_burst" and is_request and msg["method"] == "tools/call":
            if self.burst(session):
                return
        if isinstance(tool, str) and tool.startswith("http_") and tool[5:].isdigit():
            self.http_status(int(tool[5:]), msg)
            return
        if not is_request:
            if is_response:
                session.deliver_answer(msg)
            self.reply(202)
            return
        try:
            self.answer(session, msg, headers)
        except (BrokenPipeError, ConnectionResetError):
            eprint(f"the client went away while answering {msg.get('method')} id {msg.get('id')}")
            self.close_connection = True

    def http_status(self, status, msg):
        """The http_NNN tools: status NNN, its body and Retry-After from the call's arguments."""
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        args = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        headers = []
        if isinstance(args.get("retry_after"), str):
            headers.append(("Retry-After", args["retry_after"]))
        body = args.get("body")
        if isinstance(body, str):
            self.reply(status, body.encode(), "text/plain; charset=utf-8", headers)
        else:
            self.reply(status, b"", headers=headers)

    def later(self):
        headers = [("Location", f"http://127.0.0.2:{PORT}/mcp")] if ARGS.status // 100 == 3 else []
        if ARGS.status == 401:
            headers.append(("WWW-Authenticate", 'Bearer realm="mcp", error="invalid_token"'))
        self.reply(ARGS.status, b"", headers=headers)

    def burst(self, session):
        """expire_burst: holds the first session's first --burst calls, then 404s them all."""
        with BURST_COND:
            if BURST["first"] is None:
                BURST["first"] = session.id
            if session.id != BURST["first"] or BURST["arrived"] >= ARGS.burst:
                return False
            BURST["arrived"] += 1
            BURST_COND.notify_all()
            BURST_COND.wait_for(lambda: BURST["arrived"] >= ARGS.burst, timeout=10)
        forget(session)
        self.rpc_error(404, -32001, "Session not found")
        return True

    def answer(self, session, msg, headers):
        id_, method = msg["id"], msg["method"]
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        out = Reply(self, session, id_, headers)

        def result(res):
            out.final(Body({"jsonrpc": "2.0", "id": id_, "result": res}))

        def error(code, text):
            out.final(Body({"jsonrpc": "2.0", "id": id_, "error": {"code": code, "message": text}}))

        if method == "initialize":
            asked = params.get("protocolVersion")
            result({"protocolVersion": asked if asked in VERSIONS else LATEST,
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "http-fault", "version": "1"}})
            return
        if method == "ping":
            result({})
            return
        if method == "tools/list":
            result({"tools": TOOLS + schema_tools()})
            return
        if method != "tools/call":
            error(-32601, f"Method not found: {method}")
            return
        name = params.get("name")
        args = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        if ARGS.mode == "expire_after_first":
            out.before_final = lambda: self.expire(session)
        if name == "echo":
            message = args.get("message", "")
            kit.CALL_LOG.append(message)
            answer = {"jsonrpc": "2.0", "id": id_, "result": text_result(f"Echo: {message}")}
            fault = self.chaos() if ARGS.mode == "chaos" else None
            if fault:
                eprint(f"chaos: {fault} {message}")
            if fault == "expire" and session is not STATELESS:
                out.before_final = lambda: forget(session)
            elif fault == "slow":
                time.sleep(ARGS.delay)
            if ARGS.mode == "cut_before_answer" or fault == "cut":
                out.cut(answer)
            else:
                out.final(Body(answer))
        elif name == "big":
            out.final(Body.filled(id_, max(0, as_int(args.get("n")))))
        elif name == "endless":
            out.final(Body.filled(id_, None))
        elif name == "declared":
            out.declared(Body.filled(id_, None), as_int(args.get("n", 99999999999)))
        elif name == "shaped":
            result(shaped_result(args.get("mode")))
        elif name in ("draft7", "remote_ref", "bad_schema"):
            result(text_result(f"{name} ok"))
        elif name == "slow":
            ms = max(0, as_int(args.get("ms")))
            time.sleep(ms / 1000)
            result(text_result(f"slept {ms}"))
        elif name == "ask":
            for request in kit.ask_requests():
                out.request(request)
            result(text_result(kit.ask_text(session.await_answers(kit.ASK_IDS, timeout=30))))
        else:
            error(-32602, f"Unknown tool: {name}")

    def chaos(self):
        """chaos: the fault drawn for this call, or None."""
        with CHAOS_LOCK:
            draw = CHAOS.randrange(ARGS.chaos_every)
        return {0: "expire", 1: "cut", 2: "slow"}.get(draw) if ARGS.chaos_every >= 3 else None

    def expire(self, session):
        with EXPIRED_LOCK:
            if EXPIRED["done"] or session is STATELESS:
                return
            EXPIRED["done"] = True
        forget(session)
        eprint(f"session {session.id} expired after its first tools/call")


class Reply:
    """How one POSTed request is answered: an event stream or a JSON body."""

    def __init__(self, handler, session, req_id, headers):
        self.h = handler
        self.session = session
        self.req_id = req_id
        self.headers = headers
        self.sse = ARGS.answers == "sse"
        self.stream_id = new_stream_id()
        self.n = 0
        self.started = False
        self.before_final = None

    def start(self):
        if not self.started:
            self.started = True
            self.h.start_stream(headers=self.headers)

    def send(self, body):
        self.start()
        if ARGS.mode == "malformed_sse":
            self.h.junk(self.stream_id, self.req_id)
        self.n += 1
        self.h.event(self.stream_id, self.n, body, split=ARGS.mode == "malformed_sse")

    def request(self, msg):
        """A server request tied to this call: on the stream, else on a GET stream."""
        if self.sse:
            self.send(Body(msg))
        else:
            self.session.outbox.put(msg)

    def final(self, body):
        if self.before_final:
            self.before_final()
        if self.sse:
            self.send(body)
            self.h.end_chunks()
            return
        length = body.length()
        self.h.log(200)
        self.h.send_response(200)
        self.h.send_header("Content-Type", "application/json")
        if length is None:
            self.h.send_header("Transfer-Encoding", "chunked")
        else:
            self.h.send_header("Content-Length", str(length))
        for k, v in self.headers:
            self.h.send_header(k, v)
        self.h.end_headers()
        write = self.h.write_chunk if length is None else self.h.wfile.write
        write(body.prefix)
        for piece in body.pieces():
            write(piece)
        if length is None:
            self.h.end_chunks()

    def declared(self, body, length):
        """declared: a JSON body declaring `length` bytes, trickling one byte every 200 ms."""
        self.h.log(200)
        self.h.send_response(200)
        self.h.send_header("Content-Type", "application/json")
        self.h.send_header("Content-Length", str(length))
        for k, v in self.headers:
            self.h.send_header(k, v)
        self.h.end_headers()
        self.h.wfile.write(body.prefix)
        self.h.wfile.flush()
        for _ in range(300):
            time.sleep(0.2)
            self.h.wfile.write(b"x")
            self.h.wfile.flush()
        self.h.close_connection = True

    def cut(self, answer):
        """cut_before_answer: keep the answer, send the priming event, end the stream."""
        with self.session.lock:
            self.session.cut[self.stream_id] = {"answer": answer, "cut_at": None}
        if self.before_final:
            self.before_final()
        self.h.start_stream(headers=self.headers)
        self.h.write_chunk(f"id: {self.stream_id}-0\nretry: {ARGS.retry_ms}\ndata:\n\n")
        with self.session.lock:
            self.session.cut[self.stream_id]["cut_at"] = time.monotonic()
        self.h.end_chunks()
        eprint(f"stream {self.stream_id} cut before the answer to id {self.req_id}")


class ForeignHandler(Handler):
    """redirect: the listener on 127.0.0.2 logs whatever reaches it and answers 404."""

    listener = "127.0.0.2"

    def foreign(self):
        self.start_log()
        body = self.read_body()
        try:
            self.note_message(json.loads(body))
        except ValueError:
            pass
        eprint(f"something reached 127.0.0.2: {self.command} {self.path}")
        self.reply(404, b"not found", "text/plain; charset=utf-8")

    do_GET = do_POST = do_DELETE = do_PUT = do_PATCH = do_HEAD = do_OPTIONS = foreign


def main():
    global ARGS, PORT
    parser = kit.arguments("MCP Streamable HTTP server with faults on demand", MODES, "ok",
                           flags=["port", "bind-retry-ms", "log", "call-log", "secret"])
    parser.add_argument("--answers", choices=["sse", "json"], default="sse")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--delay", type=float, default=30.0, help="slow_headers: seconds")
    parser.add_argument("--retry-ms", type=int, default=300, help="cut_before_answer: retry field")
    parser.add_argument("--burst", type=int, default=8, help="expire_burst: calls held")
    parser.add_argument("--chaos-every", type=int, default=1000, help="chaos: odds 1/N per fault")
    parser.add_argument("--status", type=int, default=307, help="later: the status")
    parser.add_argument("--verbs", default="POST,GET,DELETE", help="later: the verbs refused")
    parser.add_argument("--size", type=int, default=3000000, help="big_get: the data's bytes")
    parser.add_argument("--chaos-seed", type=int, default=None, help="chaos: seed of the draws")
    ARGS = kit.parse(parser, "http_fault_server[{mode}]")
    CHAOS.seed(ARGS.chaos_seed)

    httpd = kit.bind(lambda: kit.PlainServer(("127.0.0.1", ARGS.port), Handler),
                     ARGS.bind_retry_ms)
    PORT = httpd.server_address[1]
    if ARGS.mode in ("redirect", "later"):
        foreign = kit.PlainServer(("127.0.0.2", PORT), ForeignHandler)
        threading.Thread(target=foreign.serve_forever, daemon=True).start()
    kit.serve(httpd, f"listening on 127.0.0.1:{PORT} (answers {ARGS.answers}"
                     f"{', stateless' if ARGS.stateless else ''})")


if __name__ == "__main__":
    main()
