#!/usr/bin/env python3
"""An MCP server on the 2024-11-05 HTTP+SSE transport with faults on demand, for kaged-mcp's tests.

Usage:  python3 sse_fault_server.py [--port N] [--mode MODE] [--secret S] [--log FILE]
                                    [--endpoint-delay SECS]

Python 3 stdlib only. Listens on 127.0.0.1 (threads, HTTP/1.1). The first line on stdout is
always `PORT=<n>` (flushed), so `--port 0` lets the OS pick; one line on stderr on start.

The transport:
  GET  /sse                      -> 200 text/event-stream (chunked): first `event: endpoint` with
                                    `data: /messages?session_id=<32 hex>`, then one
                                    `event: message` per server message
  POST /messages?session_id=...  -> 202 Accepted (unknown session 404, bad JSON 400); the answer,
                                    if any, goes on that session's stream
  anything else                  -> 404
MCP: initialize (answers protocolVersion 2024-11-05), ping, tools/list, tools/call; notifications
ignored; unknown methods -32601. Tools:
  echo {message}  -> "Echo: <message>"
  big {n}         -> a text of n bytes ("x" repeated): one long `data:` line
  http_NNN {}     -> (any mode) the POST of that call is answered with status NNN and the call is
                     not processed: no answer ever comes on the stream
  endless {}      -> (not listed by tools/list) an answer event that never ends: `event: message`,
                     `data: {"jsonrpc":"2.0","id":N,"result":{"content":[{"type":"text","text":"xxx...`
                     growing by 64 KiB of "x" until the client goes away
  ask {}          -> sends the requests ping (id "p1") and sampling/createMessage (id 7) on the
                     stream, waits (up to 30 s) for both answers to be POSTed, then answers with a
                     text holding the JSON {"ping": <answer>, "sampling": <answer>} (minus "jsonrpc")

Modes (--mode):
  ok                plain LF events
  auth              401 (with WWW-Authenticate) on GET and POST unless `Authorization: Bearer <secret>`
                    or `X-API-Key: <secret>` (--secret, default s3cret)
  forbidden         403 on every request
  drop_after_first  the first stream ever opened is ended right after the first tools/call answer
  drop_random       after any tools/call answer, the stream ends with probability 1/--drop-every
                    (the soak test); with --call-log FILE each echo's `message` is appended there
                    (later streams behave as in ok, so a reconnecting client can go on)
  foreign_endpoint  the endpoint event is `http://127.0.0.2:<port>/messages?session_id=...`; a
                    second listener on 127.0.0.2:<port> accepts and logs anything sent there (with
                    "listener": "127.0.0.2" in the log) so a test can prove nothing leaked
  slow_endpoint     the stream's headers come at once, the endpoint event after --endpoint-delay
                    seconds (default 30)
  byte_at_a_time    every byte of the stream is its own chunk, written and flushed alone (TCP_NODELAY);
                    a leading BOM, CRLF line endings, a `retry: 3000` field, `: ping` comments before
                    and between events, and every message split over 2 `data:` lines
  crlf              CRLF line endings

--log FILE appends one JSON line per request: {"listener", "verb", "path", "status",
"session", "id", "method", "tool", "response" (true for a POSTed answer to our request),
"authorization" (true when an Authorization or X-API-Key header was present; never its value)}.
"""

import json
import queue
import random
import secrets
import threading
import time
from urllib.parse import parse_qs, urlsplit

import mcp_test_kit as kit
from mcp_test_kit import eprint, text_result

MODES = ["ok", "auth", "forbidden", "drop_after_first", "drop_random", "foreign_endpoint", "slow_endpoint",
         "byte_at_a_time", "crlf"]

ARGS = None
PORT = 0
SESSIONS = kit.Sessions()
FIRST_STREAM = {"taken": False}
FIRST_STREAM_LOCK = threading.Lock()

CLOSE = object()  # queued to end a stream


class Endless:
    """Queued to write an answer to `id_` that never ends."""

    def __init__(self, id_):
        self.id = id_


class Session(kit.AwaitedAnswers):
    """One SSE stream: its outgoing queue and the answers awaited from the client."""

    def __init__(self, drop_after_first_call):
        super().__init__()
        self.id = secrets.token_hex(16)
        self.out = queue.Queue()
        self.drop_after_first_call = drop_after_first_call

    def send(self, msg):
        self.out.put(msg)


TOOLS = [
    {"name": "echo", "description": "Echo the message back",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
    {"name": "big", "description": "A text of n bytes",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    kit.ASK_TOOL,
]


def ask(session, id_):
    for request in kit.ask_requests():
        session.send(request)
    text = kit.ask_text(session.await_answers(kit.ASK_IDS, timeout=30))
    session.send(kit.result_msg(id_, text_result(text)))


def handle_message(session, msg):
    """Answers one client message on the session's stream."""
    if "method" not in msg:
        session.deliver_answer(msg)
        return
    if "id" not in msg:
        return  # notification
    id_, method, params = msg["id"], msg["method"], msg.get("params") or {}

    def answer(result):
        session.send({"jsonrpc": "2.0", "id": id_, "result": result})

    if method == "initialize":
        answer({"protocolVersion": "2024-11-05", "capabilities": {"tools": {}},
                "serverInfo": {"name": f"sse-fault-{ARGS.mode}", "version": "0.0.1"}})
    elif method == "ping":
        answer({})
    elif method == "tools/list":
        answer({"tools": TOOLS})
    elif method == "tools/call":
        name, args = params.get("name"), params.get("arguments") or {}
        if name == "echo":
            kit.CALL_LOG.append(args.get("message"))
            answer(text_result(f"Echo: {args.get('message', '')}"))
        elif name == "big":
            answer(text_result("x" * int(args.get("n", 0))))
        elif name == "endless":
            session.send(Endless(id_))
            return
        elif name == "ask":
            threading.Thread(target=ask, args=(session, id_), daemon=True).start()
            return
        else:
            session.send({"jsonrpc": "2.0", "id": id_,
                          "error": {"code": -32602, "message": f"Unknown tool: {name}"}})
            return
        if session.drop_after_first_call:
            session.send(CLOSE)
        elif ARGS.mode == "drop_random" and random.randrange(ARGS.drop_every) == 0:
            session.send(CLOSE)
    else:
        session.send({"jsonrpc": "2.0", "id": id_,
                      "error": {"code": -32601, "message": f"Method not found: {method}"}})


class Handler(kit.Handler):
    server_version = "sse-fault-server/0.1"
    listener = "127.0.0.1"

    # --- helpers ------------------------------------------------------------------------------

    def has_auth_header(self):
        return "Authorization" in self.headers or "X-API-Key" in self.headers

    def authorized(self):
        if ARGS.mode == "forbidden":
            return False
        if ARGS.mode != "auth" or kit.bearer_is(self.headers, ARGS.secret):
            return True
        return self.headers.get("X-API-Key", "") == ARGS.secret

    def plain(self, status, body, extra_headers=()):
        self.reply(status, body.encode(), "text/plain; charset=utf-8", extra_headers)

    def refuse(self):
        if ARGS.mode == "forbidden":
            self.plain(403, "forbidden")
            return 403
        self.plain(401, "unauthorized", [("WWW-Authenticate", 'Bearer realm="sse-fault-server"')])
        return 401

    def log(self, status, **fields):
        entry = {"listener": self.listener, "verb": self.command, "path": self.path,
                 "status": status, "authorization": self.has_auth_header()}
        entry.update(fields)
        kit.REQUEST_LOG.append(entry)

    # --- GET /sse -------------------------------------------------------------------------------

    def do_GET(self):
        if urlsplit(self.path).path != "/sse" or self.listener != "127.0.0.1":
            self.plain(404, "not found")
            self.log(404)
            return
        if not self.authorized():
            self.log(self.refuse())
            return
        drop = False
        if ARGS.mode == "drop_after_first":
            with FIRST_STREAM_LOCK:
                drop = not FIRST_STREAM["taken"]
                FIRST_STREAM["taken"] = True
        session = Session(drop_after_first_call=drop)
        SESSIONS.add(session)
        self.log(200, session=session.id)
        try:
            self.stream(session)
        except (BrokenPipeError, ConnectionResetError):
            eprint(f"stream {session.id} closed by the client")
        finally:
            SESSIONS.pop(session.id)
            self.close_connection = True

    def stream(self, session):
        self.start_stream()
        self.wfile.flush()

        if ARGS.mode == "byte_at_a_time":
            self.write_sse("\ufeffretry: 3000\r\n: ping\r\n\r\n")
        if ARGS.mode == "slow_endpoint":
            eprint(f"waiting {ARGS.endpoint_delay} s before the endpoint event")
            time.sleep(ARGS.endpoint_delay)
        endpoint = f"/messages?session_id={session.id}"
        if ARGS.mode == "foreign_endpoint":
            endpoint = f"http://127.0.0.2:{PORT}{endpoint}"
        self.write_sse(self.event("endpoint", endpoint))

        while True:
            try:
                msg = session.out.get(timeout=0.5)
            except queue.Empty:
                continue
            if msg is CLOSE:
                eprint(f"ending stream {session.id} after the first tools/call answer")
                self.end_chunks()
                return
            if isinstance(msg, Endless):
                eprint(f"an endless answer to id {msg.id} on stream {session.id}")
                prefix = '{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"' % (
                    json.dumps(msg.id))
                self.write_chunk(f"event: message\ndata: {prefix}".encode())
                piece = b"x" * 65536
                while True:
                    self.write_chunk(piece)
            data = kit.dumps(msg)
            if ARGS.mode == "byte_at_a_time":
                self.write_sse(": ping\r\n\r\n")
                # Split between the first key and the rest: "\n" joins data lines, valid JSON space.
                rest = kit.dumps(kit.answer_of(msg))
                data = '{"jsonrpc":"2.0",\n' + rest[1:]
            self.write_sse(self.event("message", data))

    def event(self, name, data):
        eol = "\n" if ARGS.mode in ("ok", "auth", "drop_after_first", "foreign_endpoint",
                                    "slow_endpoint") else "\r\n"
        lines = [f"event: {name}"] + [f"data: {part}" for part in data.split("\n")]
        return eol.join(lines) + eol + eol

    def write_sse(self, text):
        data = text.encode()
        if ARGS.mode == "byte_at_a_time":
            for i in range(len(data)):
                self.wfile.write(b"1\r\n" + data[i:i + 1] + b"\r\n")
                self.wfile.flush()
        else:
            self.write_chunk(data)

    # --- POST /messages -------------------------------------------------------------------------

    def do_POST(self):
        body = kit.read_body(self)
        url = urlsplit(self.path)
        if url.path != "/messages" or self.listener != "127.0.0.1":
            self.plain(404, "not found")
            self.log(404, body_bytes=len(body))
            return
        if not self.authorized():
            self.log(self.refuse())
            return
        session_id = (parse_qs(url.query).get("session_id") or [""])[0]
        session = SESSIONS.get(session_id)
        if session is None:
            self.plain(404, "unknown session")
            self.log(404, session=session_id)
            return
        try:
            msg = json.loads(body)
            if not isinstance(msg, dict):
                raise ValueError("not an object")
        except ValueError:
            self.plain(400, "bad JSON")
            self.log(400, session=session_id)
            return
        fields = {"session": session_id, "id": msg.get("id")}
        if "method" in msg:
            fields["method"] = msg["method"]
            if msg["method"] == "tools/call":
                fields["tool"] = (msg.get("params") or {}).get("name")
        else:
            fields["response"] = True
        tool = fields.get("tool")
        if isinstance(tool, str) and tool.startswith("http_") and tool[5:].isdigit():
            # The POST itself is answered with that status; the call is never processed.
            # Logged before answering, so a client that reads the log after its answer sees it.
            status = int(tool[5:])
            self.log(status, **fields)
            self.plain(status, "refused by the test server")
            return
        # Logged before answering (as above), so a client that closes after its 202 finds it.
        self.log(202, **fields)
        self.plain(202, "Accepted")
        handle_message(session, msg)


class ForeignHandler(Handler):
    listener = "127.0.0.2"


def main():
    global ARGS, PORT
    parser = kit.arguments("MCP HTTP+SSE server with faults on demand", MODES, "ok",
                           flags=["port", "secret", "log", "call-log"])
    parser.add_argument("--endpoint-delay", type=float, default=30.0)
    parser.add_argument("--drop-every", type=int, default=1000)
    ARGS = kit.parse(parser, "sse_fault_server[{mode}]")

    httpd = kit.PlainServer(("127.0.0.1", ARGS.port), Handler)
    PORT = httpd.server_address[1]
    if ARGS.mode == "foreign_endpoint":
        foreign = kit.PlainServer(("127.0.0.2", PORT), ForeignHandler)
        threading.Thread(target=foreign.serve_forever, daemon=True).start()
    kit.serve(httpd, f"listening on 127.0.0.1:{PORT}")


if __name__ == "__main__":
    main()
