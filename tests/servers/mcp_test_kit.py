"""What kaged-mcp's hand-written Python test servers share: JSON-RPC messages, the stdio loop's
reading and writing, request and call logs, the stats file, the 2026-07-28 header and _meta
checks, and the HTTP plumbing (one quiet HTTP/1.1 handler, chunked bodies and event streams,
binding, the `PORT=<n>` line).

Python 3 stdlib only. Each server states its own wire in its docstring; this module decides
none of it: it holds only the pieces that several servers had written alike. The servers in
tests/servers/ import it as a sibling (Python puts a script's directory first on sys.path);
faulty/faulty.py puts its parent directory there first.
"""

import argparse
import base64
import errno
import json
import os
import re
import select
import socket
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LEGACY_VERSIONS = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
LATEST_LEGACY = "2025-11-25"
META_VERSION = "io.modelcontextprotocol/protocolVersion"
META_CAPS = "io.modelcontextprotocol/clientCapabilities"
META_SERVER = "io.modelcontextprotocol/serverInfo"
NO_ARGS = {"type": "object", "properties": {}}


# --- stderr -------------------------------------------------------------------------------------

_NAME = ["server"]


def name_as(name):
    """The prefix of every eprint() line: `<name>: <text>`."""
    _NAME[0] = name


def eprint(text):
    sys.stderr.write(f"{_NAME[0]}: {text}\n")
    sys.stderr.flush()


# --- JSON-RPC messages --------------------------------------------------------------------------

def dumps(value):
    """Compact JSON, as the servers write it on the wire."""
    return json.dumps(value, separators=(",", ":"))


def text_result(text, is_error=False):
    return {"content": [{"type": "text", "text": text}], "isError": is_error}


def result_msg(req_id, result):
    return {"jsonrpc": "2.0", "id": req_id, "result": result}


def error_msg(req_id, code, message):
    return {"jsonrpc": "2.0", "id": req_id, "error": {"code": code, "message": message}}


class RpcError(Exception):
    """A JSON-RPC error answering a request; status() is the 2026-07-28 HTTP binding's status."""

    def __init__(self, code, message, data=None):
        super().__init__(message)
        self.code, self.message, self.data = code, message, data

    def body(self):
        out = {"code": self.code, "message": self.message}
        if self.data is not None:
            out["data"] = self.data
        return out

    def status(self):
        return {-32601: 404, -32603: 500}.get(self.code, 400)


class ToolFail(Exception):
    """Ends a tool call with an isError result holding the message."""


def classify(msg, strict=True):
    """'request', 'notification', 'answer' (a result or error from the client) or None (not a
    JSON-RPC message). strict: `jsonrpc` must be "2.0"; not strict, it is not looked at."""
    if not isinstance(msg, dict) or (strict and msg.get("jsonrpc") != "2.0"):
        return None
    method = msg.get("method")
    if method is None and "id" in msg and ("result" in msg or "error" in msg):
        return "answer"
    if not isinstance(method, str):
        return None
    return "request" if "id" in msg else "notification"


def params_of(msg):
    """A request's params: {} when absent (or null); not an object -> -32602."""
    params = msg.get("params")
    if params is None:
        return {}
    if not isinstance(params, dict):
        raise RpcError(-32602, "params must be an object")
    return params


def initialize_result(params, capabilities, server_info, versions=LEGACY_VERSIONS):
    """A legacy initialize result: the client's protocolVersion if in `versions`, else 2025-11-25."""
    asked = params.get("protocolVersion")
    return {"protocolVersion": asked if asked in versions else LATEST_LEGACY,
            "capabilities": capabilities, "serverInfo": server_info}


# The two server requests of the `ask` tools (and faulty.py's server_requests): ping (id "p1") and
# sampling/createMessage (id 7); the tool answers with ask_text() of the client's two answers.
def ask_requests():
    return [{"jsonrpc": "2.0", "id": "p1", "method": "ping"},
            {"jsonrpc": "2.0", "id": 7, "method": "sampling/createMessage", "params": {
                "messages": [{"role": "user", "content": {"type": "text", "text": "Say hello"}}],
                "maxTokens": 16,
            }}]


ASK_IDS = ["p1", 7]
ASK_TOOL = {"name": "ask", "description": "Sends ping and sampling/createMessage to the client",
            "inputSchema": {"type": "object", "properties": {}}}


def ask_text(got):
    """The ask tool's text: {"ping": <answer to p1>, "sampling": <answer to 7>} (None if none)."""
    return json.dumps({"ping": got.get("p1"), "sampling": got.get(7)})


def answer_of(msg):
    """An answer from the client as the ask tools report it: the message minus "jsonrpc"."""
    return {k: v for k, v in msg.items() if k != "jsonrpc"}


class Sessions:
    """The live sessions by id (each has an `id`), under one lock (the server's own if given)."""

    def __init__(self, lock=None):
        self.lock = lock or threading.Lock()
        self._by_id = {}

    def add(self, session):
        with self.lock:
            self._by_id[session.id] = session

    def get(self, sid):
        with self.lock:
            return self._by_id.get(sid)

    def pop(self, sid):
        with self.lock:
            return self._by_id.pop(sid, None)


class AwaitedAnswers:
    """Answers the client POSTs to the server's requests, awaited by the request's sender."""

    def __init__(self):
        self.answers = {}
        self.answered = threading.Condition()

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
            self.answers[msg.get("id")] = answer_of(msg)
            self.answered.notify_all()


# --- stdio --------------------------------------------------------------------------------------

NOT_JSON = object()  # what stdin_messages() yields for a line that is not JSON
_OUT_LOCK = threading.Lock()


def stdin_messages():
    """(line, message) for each non-blank line of stdin, until EOF; message is NOT_JSON when the
    line does not parse."""
    for line in sys.stdin.buffer:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
        except (ValueError, RecursionError):
            msg = NOT_JSON
        yield line, msg


def serve_requests(answer, not_found=lambda msg: "method not found", write=None):
    """Answers each request on stdin until EOF: `answer(msg)` is its result, or None for a
    -32601 error whose message is `not_found(msg)`. Notifications and lines that are not a
    request are skipped. `write` sends one message (default: `write_line`)."""
    write = write or write_line
    for _, msg in stdin_messages():
        if not isinstance(msg, dict) or "method" not in msg or "id" not in msg:
            continue
        result = answer(msg)
        if result is None:
            write(error_msg(msg["id"], -32601, not_found(msg)))
        else:
            write(result_msg(msg["id"], result))


def write_line(msg):
    """One whole compact JSON line on stdout (one writer at a time); False if stdout is closed."""
    data = dumps(msg).encode() + b"\n"
    with _OUT_LOCK:
        try:
            sys.stdout.buffer.write(data)
            sys.stdout.buffer.flush()
            return True
        except (ValueError, OSError):
            return False


# --- files the tests read -----------------------------------------------------------------------

class JsonLines:
    """A file gaining one JSON line per append() (one writer at a time); no path: nothing written.
    The request logs (--log, KAGED_REQUEST_LOG) and the call logs (--call-log)."""

    def __init__(self, path=None):
        self.path = path
        self.lock = threading.Lock()

    def append(self, value):
        if not self.path:
            return
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(value) + "\n")


REQUEST_LOG = JsonLines()  # --log FILE, opened by parse()
CALL_LOG = JsonLines()  # --call-log FILE, opened by parse()


class Stats(dict):
    """A server's stats: a dict guarded by `lock` (the server's own), published as one compact JSON
    line to `path` (set once the arguments are read), rewritten atomically so a reader never sees
    half a file; of two publishes racing, the newer snapshot is the one left in the file."""

    def __init__(self, lock, initial):
        super().__init__(initial)
        self.lock = lock
        self.path = None
        self._file_lock = threading.Lock()
        self._taken = self._written = 0

    def bump(self, key, sub=None):
        """stats[key] += 1, or stats[key][sub] += 1 (from 0)."""
        with self.lock:
            if sub is None:
                self[key] += 1
            else:
                self[key][sub] = self[key].get(sub, 0) + 1

    def json(self):
        with self.lock:
            return dumps(self)

    def publish(self):
        """Rewrites the file (if any) with the stats now; returns their JSON."""
        with self.lock:
            text = dumps(self)
            self._taken += 1
            serial = self._taken
        if self.path:
            with self._file_lock:
                if serial > self._written:
                    self._written = serial
                    tmp = f"{self.path}.tmp{os.getpid()}.{threading.get_ident()}"
                    with open(tmp, "w", encoding="utf-8") as f:
                        f.write(text + "\n")
                    os.replace(tmp, self.path)
        return text


# --- 2026-07-28 requests ------------------------------------------------------------------------

def header(headers, name):
    """A header's value as UTF-8 text (http.server decodes them as Latin-1), or None."""
    value = headers.get(name)
    if value is None:
        return None
    try:
        return value.encode("latin-1").decode("utf-8")
    except UnicodeError:
        return value


def decode_name(value):
    """Mcp-Name: plain, or `=?base64?<b64>?=` (padding optional, URL-safe alphabet too)."""
    m = re.fullmatch(r"=\?base64\?(.*)\?=", value)
    if not m:
        return value
    b64 = m.group(1) + "=" * (-len(m.group(1)) % 4)
    try:
        raw = base64.b64decode(b64.replace("-", "+").replace("_", "/"), validate=True)
        return raw.decode("utf-8")
    except ValueError:  # binascii.Error and UnicodeDecodeError too
        raise RpcError(-32020, f"Mcp-Name header {value!r} is not valid base64 UTF-8")


def check_method_headers(method, headers):
    """MCP-Protocol-Version present, Mcp-Method present and == method; else -32020."""
    if header(headers, "MCP-Protocol-Version") is None:
        raise RpcError(-32020, "missing MCP-Protocol-Version header")
    sent = header(headers, "Mcp-Method")
    if sent is None:
        raise RpcError(-32020, "missing Mcp-Method header")
    if sent != method:
        raise RpcError(-32020, f"Mcp-Method header {sent!r} does not match the body's method "
                               f"{method!r}")


def mcp_name(headers):
    """(the Mcp-Name header as sent, decoded); missing -> -32020."""
    sent = header(headers, "Mcp-Name")
    if sent is None:
        raise RpcError(-32020, "missing Mcp-Name header")
    return sent, decode_name(sent)


def check_meta(params, headers, versions):
    """params._meta with a string protocolVersion and an object clientCapabilities (else -32602),
    matching the MCP-Protocol-Version header over HTTP (headers not None; else -32020), one of
    `versions` (else -32022). Returns the _meta."""
    meta = params.get("_meta")
    meta = meta if isinstance(meta, dict) else {}
    if not isinstance(meta.get(META_VERSION), str):
        raise RpcError(-32602, f"missing required _meta field {META_VERSION}")
    if not isinstance(meta.get(META_CAPS), dict):
        raise RpcError(-32602, f"missing required _meta field {META_CAPS}")
    version = meta[META_VERSION]
    if headers is not None and header(headers, "MCP-Protocol-Version") != version:
        raise RpcError(-32020, f"MCP-Protocol-Version header "
                               f"{header(headers, 'MCP-Protocol-Version')!r} does not match _meta "
                               f"{META_VERSION} {version!r}")
    if version not in versions:
        raise RpcError(-32022, "Unsupported protocol version",
                       {"supported": list(versions), "requested": version})
    return meta


# --- HTTP ---------------------------------------------------------------------------------------

def read_chunked(rfile, max_body=None):
    """A chunked body (trailers read and dropped); None once it would grow past max_body (or a
    chunk size is negative); ValueError on a chunk size that is not a number."""
    data = b""
    while True:
        size = int(rfile.readline(1024).split(b";")[0].strip() or b"0", 16)
        if size < 0 or (max_body is not None and len(data) + size > max_body):
            return None
        if size == 0:
            while rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                pass
            return data
        data += rfile.read(size)
        rfile.readline(1024)


def read_body(handler, max_body=None):
    """The request's body (chunked or Content-Length); None when over max_body. A bad length or
    chunk size raises ValueError."""
    if "chunked" in handler.headers.get("Transfer-Encoding", "").lower():
        return read_chunked(handler.rfile, max_body)
    length = int(handler.headers.get("Content-Length") or 0)
    if max_body is not None and length > max_body:
        return None
    return handler.rfile.read(length) if length else b""


def bearer_is(headers, secret):
    """`Authorization: Bearer <secret>`."""
    scheme, _, token = headers.get("Authorization", "").partition(" ")
    return scheme.lower() == "bearer" and token.strip() == secret


def unsupported_version(headers, versions):
    """The 400 text for an MCP-Protocol-Version header not in versions, else None."""
    version = headers.get("MCP-Protocol-Version")
    if version is None or version in versions:
        return None
    return f"Bad Request: unsupported MCP-Protocol-Version {version}"


class Handler(BaseHTTPRequestHandler):
    """HTTP/1.1 with TCP_NODELAY, no access log on stderr (the servers write their own lines)."""

    protocol_version = "HTTP/1.1"

    def setup(self):
        super().setup()
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format, *args):
        pass

    def path_only(self):
        return urlsplit(self.path).path

    def reply(self, status, body=b"", content_type=None, headers=()):
        """A whole response with Content-Length."""
        self.send_response(status)
        if content_type:
            self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        if body:
            self.wfile.write(body)

    def reply_json(self, status, value, headers=()):
        self.reply(status, dumps(value).encode(), "application/json", headers)

    def rpc_error(self, status, code, message, headers=()):
        """A JSON-RPC error with id null as the whole answer."""
        self.reply(status, dumps(error_msg(None, code, message)).encode(), "application/json",
                   headers)

    def not_found(self):
        self.reply(404, b"not found", "text/plain; charset=utf-8")

    def read_capped_body(self, max_body, chunked=True):
        """The body, or None after answering 400 (a bad length or chunk) or 413 (over max_body)
        and closing the connection. chunked=False: Transfer-Encoding is not looked at."""
        if chunked and "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            try:
                body = read_chunked(self.rfile, max_body)
                status = 413 if body is None else None
            except ValueError:
                body, status = None, 400
        else:
            text = self.headers.get("Content-Length") or "0"
            length = int(text) if text.isdigit() else -1
            status = 400 if length < 0 else 413 if length > max_body else None
            body = self.rfile.read(length) if status is None and length else b""
        if status is not None:
            self.close_connection = True
            self.reply(status, b"bad body", "text/plain; charset=utf-8")
            return None
        return body

    def session_from(self, sessions):
        """The session named by Mcp-Session-Id in `sessions`, or None after answering 400 (no
        header) or 404 (unknown), JSON-RPC errors with id null."""
        sid = self.headers.get("Mcp-Session-Id")
        if not sid:
            self.rpc_error(400, -32000, "Bad Request: Mcp-Session-Id header is required")
            return None
        session = sessions.get(sid)
        if session is None:
            self.rpc_error(404, -32001, "Session not found")
        return session

    def start_stream(self, status=200, headers=()):
        """The head of a chunked text/event-stream answer (no-cache), then `headers`."""
        self.send_response(status)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()

    def write_chunk(self, data):
        """One chunk (text is UTF-8 encoded; nothing for no data: an empty chunk would end the body)."""
        if isinstance(data, str):
            data = data.encode()
        if data:
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

    def end_chunks(self):
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def client_gone(self):
        """True when the client closed its end (EOF or a reset on the socket)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            if not readable:
                return False
            return self.connection.recv(1, socket.MSG_PEEK) == b""
        except (OSError, ValueError):
            return True

    def drop(self):
        """Closes the connection without a byte of answer."""
        self.close_connection = True
        try:
            self.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


class PlainServer(ThreadingHTTPServer):
    """Threads that never hold the process up."""

    daemon_threads = True


class Server(PlainServer):
    """A deeper accept queue, and nothing on stderr for a connection that broke."""

    request_queue_size = 128

    def handle_error(self, request, client_address):
        pass


def bind(make, retry_ms=0):
    """make() (a server bound to its port), tried again every 10 ms for up to retry_ms while the
    port is still taken: a replacement started before the old process is killed takes the port
    as soon as it is free (--bind-retry-ms; the soak restarts a server this way)."""
    deadline = time.monotonic() + retry_ms / 1000
    while True:
        try:
            return make()
        except OSError as e:
            if e.errno != errno.EADDRINUSE or time.monotonic() >= deadline:
                raise
            time.sleep(0.01)


def serve(httpd, banner):
    """`PORT=<n>` on stdout (flushed), the banner on stderr, then serves until interrupted."""
    print(f"PORT={httpd.server_address[1]}", flush=True)
    eprint(banner)
    try:
        httpd.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def announced_socket(port):
    """(a socket listening on 127.0.0.1:port, its port) for a server run on a socket it is given
    (uvicorn), the port already announced: `PORT=<n>` on stdout, flushed. port 0: the OS picks."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.set_inheritable(True)
    bound = sock.getsockname()[1]
    print(f"PORT={bound}", flush=True)
    return sock, bound


# --- command lines ------------------------------------------------------------------------------

FLAGS = {
    "port": dict(type=int, default=0, help="HTTP: the port on 127.0.0.1, 0 picks a free one"),
    "bind-retry-ms": dict(type=int, default=0, metavar="N",
                          help="HTTP: keep trying to bind a taken --port this long"),
    "log": dict(default=None, metavar="FILE", help="append one JSON line per request here"),
    "call-log": dict(default=None, metavar="FILE",
                     help="append each executed echo's message here (JSON, one a line)"),
    "stats-file": dict(default=None, metavar="PATH",
                       help="rewrite the stats here (atomically) after each change"),
    "secret": dict(default="s3cret", help="auth: the secret a request must carry"),
}


def add_flags(parser, *names):
    """The flags several servers share (FLAGS), by name."""
    for name in names:
        parser.add_argument(f"--{name}", **FLAGS[name])


def arguments(description, modes=None, default_mode=None, transport=False, flags=()):
    """A parser with [transport {stdio,http}], [--mode], and the shared `flags`."""
    parser = argparse.ArgumentParser(description=description)
    if transport:
        parser.add_argument("transport", choices=["stdio", "http"])
    if modes is not None:
        parser.add_argument("--mode", choices=modes, default=default_mode)
    add_flags(parser, *flags)
    return parser


def sdk_arguments(doc):
    """The command line of the servers on the PyPI `mcp` SDK (py_resources_server.py,
    py_tasks_server.py): transport stdio | streamable-http, --port."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("transport", choices=["stdio", "streamable-http"])
    parser.add_argument("--port", type=int, default=0,
                        help="streamable-http: port on 127.0.0.1 (0: any)")
    return parser.parse_args()


def parse(parser, name, stats=None):
    """parser.parse_args(), then: eprint() lines named `name` (formatted with the arguments, e.g.
    "era_server[{mode}]"), REQUEST_LOG and CALL_LOG opened to --log and --call-log, and
    stats (if any) published to --stats-file."""
    args = parser.parse_args()
    name_as(name.format(**vars(args)))
    REQUEST_LOG.path = getattr(args, "log", None)
    CALL_LOG.path = getattr(args, "call_log", None)
    if stats is not None:
        stats.path = args.stats_file
    return args
