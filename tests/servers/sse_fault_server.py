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

import argparse
import json
import queue
import random
import secrets
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

MODES = ["ok", "auth", "forbidden", "drop_after_first", "drop_random", "foreign_endpoint", "slow_endpoint",
         "byte_at_a_time", "crlf"]

ARGS = None
PORT = 0
SESSIONS = {}  # session id -> Session
SESSIONS_LOCK = threading.Lock()
LOG_LOCK = threading.Lock()
FIRST_STREAM = {"taken": False}
FIRST_STREAM_LOCK = threading.Lock()

CLOSE = object()  # queued to end a stream
CALL_LOG_LOCK = threading.Lock()


def eprint(text):
    sys.stderr.write(f"sse_fault_server[{ARGS.mode}]: {text}\n")
    sys.stderr.flush()


def log_entry(entry):
    if not ARGS.log:
        return
    with LOG_LOCK, open(ARGS.log, "a", encoding="utf-8") as f:
        f.write(json.dumps(entry) + "\n")


class Session:
    """One SSE stream: its outgoing queue and the answers awaited from the client."""

    def __init__(self, drop_after_first_call):
        self.id = secrets.token_hex(16)
        self.out = queue.Queue()
        self.drop_after_first_call = drop_after_first_call
        self.answers = {}
        self.answered = threading.Condition()

    def send(self, msg):
        self.out.put(msg)

    def await_answers(self, ids, timeout):
        deadline = time.monotonic() + timeout
        with self.answered:
            while not all(i in self.answers for i in ids):
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                self.answered.wait(left)
            return {i: self.answers.pop(i, None) for i in ids}

    def deliver_answer(self, msg):
        with self.answered:
            self.answers[msg.get("id")] = {k: v for k, v in msg.items() if k != "jsonrpc"}
            self.answered.notify_all()


def text_result(text):
    return {"content": [{"type": "text", "text": text}], "isError": False}


TOOLS = [
    {"name": "echo", "description": "Echo the message back",
     "inputSchema": {"type": "object", "properties": {"message": {"type": "string"}}}},
    {"name": "big", "description": "A text of n bytes",
     "inputSchema": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    {"name": "ask", "description": "Sends ping and sampling/createMessage to the client",
     "inputSchema": {"type": "object", "properties": {}}},
]


def ask(session, id_):
    session.send({"jsonrpc": "2.0", "id": "p1", "method": "ping"})
    session.send({"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {
        "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
        "maxTokens": 16,
    }})
    got = session.await_answers(["p1", 7], timeout=30)
    text = json.dumps({"ping": got["p1"], "sampling": got[7]})
    session.send({"jsonrpc": "2.0", "id": id_, "result": text_result(text)})


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
            if ARGS.call_log:
                with CALL_LOG_LOCK, open(ARGS.call_log, "a", encoding="utf-8") as f:
                    f.write(json.dumps(args.get("message")) + "\n")
            answer(text_result(f"Echo: {args.get('message', '')}"))
        elif name == "big":
            answer(text_result("x" * int(args.get("n", 0))))
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


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "sse-fault-server/0.1"
    listener = "127.0.0.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):  # keep stderr quiet; --log has the facts
        pass

    # --- helpers ------------------------------------------------------------------------------

    def has_auth_header(self):
        return "Authorization" in self.headers or "X-API-Key" in self.headers

    def authorized(self):
        if ARGS.mode == "forbidden":
            return False
        if ARGS.mode != "auth":
            return True
        auth = self.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip() == ARGS.secret:
            return True
        return self.headers.get("X-API-Key", "") == ARGS.secret

    def plain(self, status, body, extra_headers=()):
        data = body.encode()
        self.send_response(status)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        for k, v in extra_headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

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
        log_entry(entry)

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
        with SESSIONS_LOCK:
            SESSIONS[session.id] = session
        self.log(200, session=session.id)
        try:
            self.stream(session)
        except (BrokenPipeError, ConnectionResetError):
            eprint(f"stream {session.id} closed by the client")
        finally:
            with SESSIONS_LOCK:
                SESSIONS.pop(session.id, None)
            self.close_connection = True

    def stream(self, session):
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
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
                self.wfile.write(b"0\r\n\r\n")
                self.wfile.flush()
                return
            data = json.dumps(msg, separators=(",", ":"))
            if ARGS.mode == "byte_at_a_time":
                self.write_sse(": ping\r\n\r\n")
                # Split between the first key and the rest: "\n" joins data lines, valid JSON space.
                rest = json.dumps({k: v for k, v in msg.items() if k != "jsonrpc"},
                                  separators=(",", ":"))
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
            self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
            self.wfile.flush()

    # --- POST /messages -------------------------------------------------------------------------

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        url = urlsplit(self.path)
        if url.path != "/messages" or self.listener != "127.0.0.1":
            self.plain(404, "not found")
            self.log(404, body_bytes=len(body))
            return
        if not self.authorized():
            self.log(self.refuse())
            return
        session_id = (parse_qs(url.query).get("session_id") or [""])[0]
        with SESSIONS_LOCK:
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
        self.plain(202, "Accepted")
        self.log(202, **fields)
        handle_message(session, msg)


class ForeignHandler(Handler):
    listener = "127.0.0.2"


def main():
    global ARGS, PORT
    parser = argparse.ArgumentParser(description="MCP HTTP+SSE server with faults on demand")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port")
    parser.add_argument("--mode", choices=MODES, default="ok")
    parser.add_argument("--secret", default="s3cret")
    parser.add_argument("--log", default=None, help="append one JSON line per request here")
    parser.add_argument("--endpoint-delay", type=float, default=30.0)
    parser.add_argument("--drop-every", type=int, default=1000)
    parser.add_argument("--call-log", default=None)
    ARGS = parser.parse_args()

    ThreadingHTTPServer.daemon_threads = True
    httpd = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    PORT = httpd.server_address[1]
    if ARGS.mode == "foreign_endpoint":
        foreign = ThreadingHTTPServer(("127.0.0.2", PORT), ForeignHandler)
        threading.Thread(target=foreign.serve_forever, daemon=True).start()
    print(f"PORT={PORT}", flush=True)
    eprint(f"listening on 127.0.0.1:{PORT}")
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
