#!/usr/bin/env python3
"""An MCP server for kaged-mcp's task tests (long-running tools): it serves tasks in BOTH protocol
eras, the legacy experimental tasks of 2025-11-25 (SEP-1686) and the modern 2026-07-28 tasks
extension `io.modelcontextprotocol/tasks` (SEP-2663), with fault modes.

Usage:  python3 tasks_server.py stdio [options]
        python3 tasks_server.py http [--port N] [options]
Options: [--poll-interval-ms N] [--ttl-ms N] [--lose-tasks] [--cut-get N]
         [--expire-session-on-get N] [--no-task-capability] [--ignore-cancel] [--stats-file PATH]

Python 3 stdlib only. JSON-RPC 2.0. Logs only on stderr: one line per message received
(`tasks_server: <era> <method> id=<id>`; an answer from the client `answer id=<id>`), so a test can
grep e.g. `tasks/cancel`.
  stdio: one JSON message per line on stdin/stdout; each request is served on its own thread (so
         a blocked tasks/result never stops the reader; answers may come out of order when
         requests are pipelined); one writer of stdout lines at a time; exit 0 at stdin EOF.
  http:  127.0.0.1 (threads, HTTP/1.1, TCP_NODELAY). The first line on stdout is always `PORT=<n>`
         (flushed), so `--port 0` lets the OS pick. POST /mcp (answers application/json, but the
         legacy tasks/result below); GET /stats -> 200 the stats; any other path -> 404. Bodies over
         1 MiB -> 413. No Accept or Content-Type check.
Both: a line / body that is not JSON -> -32700 (HTTP 400); not a JSON-RPC message (a batch too)
-> -32600 (HTTP 400). The JSON-RPC error answering a request: legacy -> HTTP 200 (as the SDKs
answer it); modern -> unknown methods -32601 (HTTP 404), an unknown tool -32602 "Tool <name> not
found" (HTTP 400), other errors HTTP 400 (-32603: 500).

Era, decided per message: a request whose params._meta holds
io.modelcontextprotocol/protocolVersion, or whose method is server/discover, is MODERN; any other
message is LEGACY (initialize handshake).
Both eras share one process-wide task store (a task is served in the era of the request asking).

LEGACY (2025-11-25, basic/utilities/tasks.mdx + the TS SDK 1.32 experimental tasks):
  initialize -> protocolVersion (the client's if 2024-11-05, 2025-03-26, 2025-06-18 or 2025-11-25,
    else 2025-11-25), serverInfo {tasks-server, 1}, capabilities {tools: {}, tasks: {list: {},
    cancel: {}, requests: {tools: {call: {}}}}} (tasks omitted with --no-task-capability).
    stdio: any other request before initialize -> -32600 "server not initialized".
  HTTP: initialize issues `Mcp-Session-Id: <32 hex>`; every later legacy POST (requests,
    notifications, answers) must carry it: missing -> 400 (-32000 "Bad Request: Mcp-Session-Id
    header is required", id null), unknown, deleted or expired -> 404 (-32001 "Session not found").
    GET /mcp with a live session id -> 200 the session's standalone event stream (chunked,
    `event: message` / `data: <json>` per message, `: keepalive` every 2 s, ends when the session
    does); GET/DELETE without Mcp-Session-Id -> 405 (`Allow: POST`); unknown id -> 404;
    DELETE /mcp -> forgets the session, 200.
  ping -> {}; tools/list -> every tool but test_tool_with_task, each with execution.taskSupport
    (kept with --no-task-capability: a server whose tools say they need tasks but whose
    capabilities offer none, which a client must not task-augment); notifications are ignored.
  tools/call {name, arguments, task?}: `task` present (an object; its ttl is ignored: the server
    sets ttl, as receivers MAY):
      taskSupport forbidden (greet) -> -32601 "Tool <name> does not support task augmentation
        (taskSupport: 'forbidden')" (spec, tool-level negotiation: SHOULD -32601)
      else -> CreateTaskResult {task: Task} at once, status working, statusMessage
        "working on <tool>"; the job runs on a background thread.
    `task` absent: taskSupport required -> -32601 "Tool <name> requires task augmentation
      (taskSupport: 'required')" (spec MUST -32601; text of the TS SDK); else the tool runs inline.
    With --no-task-capability `task` is ignored and every tool runs inline (spec: a receiver not
    declaring the capability MUST process requests normally).
  Task = {taskId (uuid4), status, statusMessage?, createdAt, lastUpdatedAt (ISO 8601 UTC, ms,
    `Z`), ttl (--ttl-ms; null when 0), pollInterval (--poll-interval-ms)}.
  tasks/get {taskId} -> Task (no related-task _meta). Unknown, lost (--lose-tasks) -> -32602
    "Failed to retrieve task: Task not found"; past createdAt+ttl -> the task is deleted (its job
    stopped) and -32602 "Failed to retrieve task: Task has expired" (same for every tasks/*).
  tasks/result {taskId}: blocks until the task is terminal, delivering meanwhile every
    still-unanswered server request of the task (elicitation/create, below) on its own stream
    (stdio: lines on stdout before the answer; HTTP: see below); each tasks/result call (re)sends
    every request still unanswered, once per call. Then: completed, or failed with a tool result ->
    that CallToolResult plus _meta {io.modelcontextprotocol/related-task: {taskId}}; failed with a
    JSON-RPC error -> that error (protocol_error_job: -32603); cancelled -> -32603 "Task <id> was
    cancelled: it has no result" (the SDK's store answers "has no result stored" -> -32603).
    HTTP: a task unknown, lost or already terminal -> application/json; else 200
    text/event-stream (chunked): `event: message` / `data: <json>` per server request, `:
    keepalive` every 2 s, the answer last, then the stream ends.
  tasks/cancel {taskId} -> the Task, already `cancelled` (statusMessage "The task was cancelled
    by request."); its job is stopped. A terminal task -> -32602 "Cannot cancel task: already in
    terminal status '<status>'".
  tasks/list {cursor?} -> {tasks: [legacy Task, creation order]}, never a nextCursor; any cursor
    -> -32602 "Invalid cursor".  (tasks/* -> -32601 with --no-task-capability.)
  Status notifications: on every change of status (not of statusMessage alone; none at creation),
    notifications/tasks/status {Task} (no related-task _meta). stdio: a line on stdout. HTTP: on the
    standalone GET streams open for the task's session (the session of the latest request naming
    the task: tools/call, tasks/get, tasks/result, tasks/cancel), else not sent at all.
  Input: a job needing input (confirm_delete, multi_input) moves its task to input_required and
    queues one server request per question: {jsonrpc, id: "elicit-<n>" (a string), method
    elicitation/create, params {mode: form, message, requestedSchema, _meta
    {io.modelcontextprotocol/related-task: {taskId}}}}. It is never sent on its own: only on a
    tasks/result stream (spec's input_required flow; the SDK queues it the same way). The client's
    answer (a JSON-RPC response with that id; HTTP: POSTed with the session id -> 202) is taken
    once; when all are answered the task is back to `working` before that answer is acknowledged.
    An answer {action: accept, content} counts as given; an error answer as `cancel`.
  Outcome: a result with isError true -> status `failed` (spec: "for tool calls ... isError ...
    should reach failed"), statusMessage "Tool execution failed: <text>", tasks/result still the
    CallToolResult; except tool_error_job (status `completed` with isError true, a server ignoring
    that SHOULD). A JSON-RPC error -> `failed`, statusMessage the error message.

MODERN (2026-07-28; SEP-2575 per-request _meta, SEP-2243 headers, SEP-2663 tasks extension, as the
conformance scenarios tasks-* of @modelcontextprotocol/conformance 0.2.0-alpha.12 test it). Every
request, in this order:
    1. HTTP only: MCP-Protocol-Version and Mcp-Method headers present, Mcp-Method == method;
       tools/call: Mcp-Name present and == params.name; tasks/get, tasks/update, tasks/cancel with
       a string params.taskId: Mcp-Name present and == taskId (`=?base64?..?=` decoded first)
       -> else -32020 naming the header (HTTP 400)
    2. params._meta holds io.modelcontextprotocol/protocolVersion (string) and
       io.modelcontextprotocol/clientCapabilities (object) -> else -32602 (HTTP 400)
    3. HTTP only: MCP-Protocol-Version header == the _meta version -> else -32020
    4. the version is 2026-07-28 -> else -32022 "Unsupported protocol version", data {supported,
       requested}
  The client "declares the extension" on a request when its _meta clientCapabilities.extensions
  holds "io.modelcontextprotocol/tasks" (per request; nothing is remembered).
  server/discover -> {resultType complete, supportedVersions [2026-07-28], capabilities {tools: {},
    extensions: {"io.modelcontextprotocol/tasks": {}}} (no extensions with --no-task-capability;
    never a v1 `tasks` slot), _meta {io.modelcontextprotocol/serverInfo {tasks-server, 1}}, ttlMs 0,
    cacheScope public}.
  tools/list -> {resultType complete, tools (no execution field: SEP-2663 has no per-tool
    declaration), ttlMs 0, cacheScope public}.
  tools/call {name, arguments} (a legacy `task` param is ignored): taskSupport (modern column
    below) forbidden, or --no-task-capability -> runs inline; extension declared -> CreateTaskResult
    (flat: {resultType "task", taskId, status working, statusMessage, createdAt, lastUpdatedAt,
    ttlMs, pollIntervalMs}); not declared: optional -> inline; required -> -32021 "Missing required
    client capability", data {requiredCapabilities {extensions {"io.modelcontextprotocol/tasks":
    {}}}}. Inline results carry resultType "complete".
  tasks/get, tasks/update, tasks/cancel without the extension declared -> -32021 (as above) before
    the taskId is looked at; unknown/lost/expired taskId -> -32602 (as legacy).
  tasks/get -> {resultType complete, the Task fields (ttlMs, pollIntervalMs), and by status:
    input_required: inputRequests {<key>: {method: elicitation/create, params {mode form, message,
    requestedSchema}}} (only the unanswered ones; keys "elicit-<n>", never reused); completed:
    result (the CallToolResult as tools/call would have answered it, resultType complete, no
    related-task _meta); failed: error {code, message}}.
  tasks/update {taskId, inputResponses} -> {resultType complete}; responses to unknown or already
    answered keys are ignored; answering the last outstanding key moves the task to `working`
    before the ack.
  tasks/cancel -> {resultType complete}; a live task is `cancelled` before the ack and its job
    stopped; a terminal task is left alone (same ack: idempotent).
  Any other method (tasks/result, tasks/list, subscriptions/listen, ping, ...) -> -32601.
  Outcome: a result (isError or not) -> `completed`; a JSON-RPC error -> `failed` with `error`.
  No status notifications are sent in this era (SEP-2663: optional, via subscriptions/listen).

Tools (taskSupport legacy / modern), args:
  greet {name}            forbidden/forbidden  -> "Hello, <name>!" (name default "World")
  slow_compute {seconds}  required/optional    seconds: number 0..3600, default 1; statusMessage
                          "step i/n" every 0.25 s (n = ceil(seconds / 0.25))
                          -> "computed <seconds>";
                          modern optional because tasks-capability-negotiation requires the
                          inline fallback for a client without the extension
  failing_job {}          required/required    after 0.3 s an isError result "failing_job failed:
                          simulated failure" -> legacy `failed`; modern `completed` + isError
                          (SEP-2663 and tasks-lifecycle)
  protocol_error_job {}   required/required    after 0.3 s the JSON-RPC error -32603 "Internal
                          error: protocol_error_job crashed" -> `failed`
  tool_error_job {}       required/required    after 0.3 s `completed` with isError "tool_error_job
                          reported an error" (both eras)
  confirm_delete {filename|path}  required/required  input_required with one elicitation "Delete
                          <filename>?" (schema {confirm: boolean}); accept (content.confirm not
                          false) -> "deleted <filename>"; decline / confirm false -> isError
                          "delete of <filename> declined"; cancel or an error answer -> isError
                          "delete of <filename> cancelled"
  multi_input {}          required/required    two elicitations at once ("first"/"second", schema
                          {name: string}); -> "inputs: <name 1>, <name 2>" once both are answered
  optional_job {}         optional/optional    after 0.3 s "ran as task" (as a task) or "ran inline"
  never_ends {}           required/required    stays `working` until cancelled (inline: forever)
  test_tool_with_task {}  (modern only)/required  MRTR round 1 (no inputResponses.user_name) ->
                          {resultType input_required, inputRequests {user_name: elicitation
                          (schema {name: string})}, requestState}; the retry with
                          inputResponses.user_name -> a task that completes after 0.2 s with
                          "Hello, <content.name>!"
  A job whose tool needs input, run inline (--no-task-capability) -> isError "<tool> needs a task".
  Tool argument errors -> an isError result, never a task.

Faults:
  --poll-interval-ms N  pollInterval / pollIntervalMs (default 100; 0 is sent as 0)
  --ttl-ms N            ttl / ttlMs of every task (default 3600000; 0 -> null, unlimited)
  --lose-tasks          every task is "lost" by the store right after its creation answer:
                        tasks/get, tasks/result, tasks/cancel, tasks/update -> -32602 "Failed to
                        retrieve task: Task not found"; tasks/list omits it; its job still runs
                        (tool_runs counts it)
  --cut-get N           the N-th tasks/get received (both eras, counted from 1) is never answered:
                        HTTP: its TCP connection is closed at once; stdio: the process exits with
                        status 3. The task keeps running (HTTP); later tasks/get are served.
  --expire-session-on-get N  (legacy HTTP only) the N-th tasks/get received expires the session it
                        carries: answered 404 (-32001), that id is 404 from then on and its GET
                        streams end; a new initialize gets a new session (tasks live on).
  --no-task-capability  as described above for each era.
  --ignore-cancel       tasks/cancel (both eras) is counted (stats tasks_cancel) and logged, and
                        never answered; the task runs on. stdio: no line is written for it; HTTP:
                        its POST is held open, without a byte of answer, until the client leaves
                        (or 60 s, then the connection is closed).

Stats (--stats-file PATH rewritten atomically after every change; HTTP also GET /stats):
{"tool_runs": {tool: job bodies started (inline or task)}, "tasks_created": n, "tasks_get": n,
 "tasks_result": n, "tasks_update": n (each received, counted on arrival, even when refused),
 "tasks_cancel": [taskId of every tasks/cancel received, in order], "cancelled_tasks": [taskIds
 moved to cancelled by a cancel], "statuses": {taskId: last status}, "expired_tasks": [taskIds
 deleted for their ttl], "sessions": n (legacy initialize handled; HTTP: session ids issued),
 "deleted_sessions": n (HTTP: live sessions ended by a DELETE; a tasks/cancel after it would be
 answered 404 and not counted, so both counted means the cancel came first)}.
A DELETE of a live session logs `tasks_server: DELETE session` on stderr.
"""

import json
import math
import os
import queue
import secrets
import sys
import threading
import time
import uuid
from datetime import datetime, timezone

import mcp_test_kit as kit
from mcp_test_kit import (META_CAPS, META_SERVER, META_VERSION, NO_ARGS, RpcError, ToolFail, dumps,
                          eprint, text_result, write_line)

MODERN_VERSION = "2026-07-28"
RELATED_TASK = "io.modelcontextprotocol/related-task"
TASKS_EXT = "io.modelcontextprotocol/tasks"
SERVER_INFO = {"name": "tasks-server", "version": "1"}
TERMINAL = ("completed", "failed", "cancelled")
MAX_BODY = 1 << 20
KEEPALIVE_S = 2.0

ARGS = None
LOCK = threading.RLock()  # guards everything below
COND = threading.Condition(LOCK)  # notified on every task change
TASKS = {}  # taskId -> Task
PENDING = {}  # legacy server request id ("elicit-<n>") -> (Task, input entry)
SESSIONS = kit.Sessions(LOCK)  # legacy HTTP sessions
INPUT_SERIAL = 0
GETS_SEEN = 0  # tasks/get received so far
STDIO_INITIALIZED = False
STATS = kit.Stats(LOCK, {"tool_runs": {}, "tasks_created": 0, "tasks_get": 0, "tasks_result": 0,
                         "tasks_update": 0, "tasks_cancel": [], "cancelled_tasks": [],
                         "statuses": {}, "expired_tasks": [], "sessions": 0,
                         "deleted_sessions": 0})

CUT = object()  # HTTP: close the connection without answering
EXPIRE = object()  # legacy HTTP: answer 404, the session is gone

# name -> (legacy taskSupport or None when not listed, modern taskSupport, description, inputSchema)
TOOLS = {
    "greet": ("forbidden", "forbidden", "Greets someone at once",
              {"type": "object", "properties": {"name": {"type": "string"}}}),
    "slow_compute": ("required", "optional", "Computes for `seconds` seconds",
                     {"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0},
                                                       "label": {"type": "string"}}}),
    "failing_job": ("required", "required", "Ends with a tool error (isError)", NO_ARGS),
    "protocol_error_job": ("required", "required", "Ends with a JSON-RPC error", NO_ARGS),
    "tool_error_job": ("required", "required", "Completes with isError true", NO_ARGS),
    "confirm_delete": ("required", "required", "Asks for confirmation, then deletes a file",
                       {"type": "object", "properties": {"filename": {"type": "string"},
                                                         "path": {"type": "string"}}}),
    "multi_input": ("required", "required", "Asks two questions at once", NO_ARGS),
    "optional_job": ("optional", "optional", "Runs as a task or inline", NO_ARGS),
    "never_ends": ("required", "required", "Works until cancelled", NO_ARGS),
    "test_tool_with_task": (None, "required", "Asks a name (MRTR), then runs as a task", NO_ARGS),
}


class Cancelled(Exception):
    """The job's task was cancelled (or expired): stop at once."""


class Task:
    def __init__(self, tool, args, era, transport, session):
        now = time.time()
        self.id = str(uuid.uuid4())
        self.tool, self.args, self.era = tool, args, era
        self.transport, self.session = transport, session
        self.status, self.message = "working", f"working on {tool}"
        self.created = self.updated = now
        self.ttl = ARGS.ttl_ms if ARGS.ttl_ms > 0 else None
        self.poll = ARGS.poll_interval_ms
        self.result = self.error = None
        self.inputs = {}  # key -> {"key", "request": {method, params}, "response": None | dict}
        self.cancel = threading.Event()
        self.lost = ARGS.lose_tasks

    def base(self, era):
        out = {"taskId": self.id, "status": self.status}
        if self.message is not None:
            out["statusMessage"] = self.message
        out["createdAt"] = iso(self.created)
        out["lastUpdatedAt"] = iso(self.updated)
        if era == "legacy":
            out["ttl"] = self.ttl
            out["pollInterval"] = self.poll
        else:
            out["ttlMs"] = self.ttl
            out["pollIntervalMs"] = self.poll
        return out

    def detailed(self):
        """The modern tasks/get result."""
        out = {"resultType": "complete", **self.base("modern")}
        if self.status == "input_required":
            out["inputRequests"] = {k: {"method": e["request"]["method"],
                                        "params": modern_params(e["request"]["params"])}
                                    for k, e in self.inputs.items() if e["response"] is None}
        elif self.status == "completed" and self.result is not None:
            out["result"] = {"resultType": "complete", **self.result}
        elif self.status == "failed":
            if self.error is not None:
                out["error"] = self.error
            elif self.result is not None:  # a legacy task failed by a tool error
                out["result"] = {"resultType": "complete", **self.result}
        return out


class Session:
    def __init__(self, sid):
        self.id = sid
        self.streams = []  # queues of the open standalone GET streams


def iso(t):
    return datetime.fromtimestamp(t, timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def modern_params(params):
    return {k: v for k, v in params.items() if k != "_meta"}


def publish_stats():
    STATS.publish()


# --- the task store -----------------------------------------------------------------------------

def lookup(task_id, era, session=None):
    """The live task (under LOCK), else RpcError -32602."""
    if not isinstance(task_id, str):
        raise RpcError(-32602, "taskId must be a string")
    with LOCK:
        task = TASKS.get(task_id)
        if task is None or task.lost:
            raise RpcError(-32602, "Failed to retrieve task: Task not found")
        if task.ttl is not None and time.time() > task.created + task.ttl / 1000:
            del TASKS[task_id]
            task.cancel.set()
            STATS["expired_tasks"].append(task_id)
            COND.notify_all()
            expired = True
        else:
            expired = False
            if session is not None:
                task.session = session
    if expired:
        publish_stats()
        raise RpcError(-32602, "Failed to retrieve task: Task has expired")
    return task


def change(task, status=None, message=None, result=None, error=None, keep_message=False):
    """Moves a task on; a terminal task never changes. Sends the legacy status notification."""
    with LOCK:
        if task.status in TERMINAL:
            return False
        old = task.status
        if status is not None:
            task.status = status
        if not keep_message:
            task.message = message
        if result is not None:
            task.result = result
        if error is not None:
            task.error = error
        task.updated = time.time()
        STATS["statuses"][task.id] = task.status
        COND.notify_all()
        note = None
        if task.status != old and task.era == "legacy" and not task.lost:
            note = {"jsonrpc": "2.0", "method": "notifications/tasks/status",
                    "params": task.base("legacy")}
            transport, session = task.transport, task.session
    if note is not None:
        send_notification(note, transport, session)
    publish_stats()
    return True


def send_notification(note, transport, session):
    if transport == "stdio":
        write_line(note)
        return
    with LOCK:
        target = SESSIONS.get(session)
        streams = list(target.streams) if target else []
    for q in streams:
        q.put(note)


def create_task(tool, args, era, transport, session, body):
    task = Task(tool, args, era, transport, session)
    with LOCK:
        TASKS[task.id] = task
        STATS["tasks_created"] += 1
        STATS["statuses"][task.id] = task.status
        created = task.base(era)
    STATS.bump("tool_runs", tool)
    threading.Thread(target=run_task, args=(task, body), daemon=True).start()
    publish_stats()
    return created


def run_task(task, body):
    try:
        outcome = body(JobCtx(task))
    except Cancelled:
        return
    except ToolFail as fail:
        outcome = ("result", text_result(str(fail), True))
    except Exception as exc:  # a bug: the task fails with -32603
        eprint(f"job {task.tool} crashed: {exc!r}")
        outcome = ("error", {"code": -32603, "message": f"Internal error: {exc}"})
    kind, value = outcome
    if kind == "error":
        change(task, "failed", value["message"], error=value)
    elif value.get("isError") and task.era == "legacy" and task.tool != "tool_error_job":
        change(task, "failed", f"Tool execution failed: {value['content'][0]['text']}",
               result=value)
    else:
        change(task, "completed", None, result=value)


def cancel_task(task):
    """True when the task moved to cancelled."""
    moved = change(task, "cancelled", "The task was cancelled by request.")
    task.cancel.set()
    with LOCK:
        for key in [k for k, (t, _) in PENDING.items() if t is task]:
            del PENDING[key]
        if moved:
            STATS["cancelled_tasks"].append(task.id)
        COND.notify_all()
    publish_stats()
    return moved


def answer_input(task, entry, response):
    """Records one input answer (taken once); back to working once all are answered."""
    with LOCK:
        if entry["response"] is not None or task.status in TERMINAL:
            return
        entry["response"] = response
        PENDING.pop(entry["key"], None)
        done = all(e["response"] is not None for e in task.inputs.values())
        COND.notify_all()
    if done:
        change(task, "working", "resuming")


# --- jobs ---------------------------------------------------------------------------------------

class JobCtx:
    """What a job body sees: its task (None when run inline)."""

    def __init__(self, task):
        self.task = task

    def message(self, text):
        if self.task is not None:
            change(self.task, message=text)

    def sleep(self, seconds):
        if self.task is None:
            time.sleep(seconds)
        elif self.task.cancel.wait(seconds):
            raise Cancelled()

    def forever(self):
        if self.task is None:
            threading.Event().wait()
        self.task.cancel.wait()
        raise Cancelled()

    def ask(self, questions):
        """Asks elicitations (message, schema) at once; their answers, in order."""
        global INPUT_SERIAL
        task = self.task
        if task is None:
            raise ToolFail("this tool needs a task")
        entries = []
        with LOCK:
            for message, schema in questions:
                INPUT_SERIAL += 1
                key = f"elicit-{INPUT_SERIAL}"
                params = {"mode": "form", "message": message, "requestedSchema": schema,
                          "_meta": {RELATED_TASK: {"taskId": task.id}}}
                entry = {"key": key, "request": {"method": "elicitation/create", "params": params},
                         "response": None}
                task.inputs[key] = entry
                entries.append(entry)
                if task.era == "legacy":
                    PENDING[key] = (task, entry)
        change(task, "input_required", "waiting for input")
        with COND:
            while not all(e["response"] is not None for e in entries):
                if task.cancel.is_set():
                    raise Cancelled()
                COND.wait(0.5)
        if task.cancel.is_set():
            raise Cancelled()
        with LOCK:
            resumed = task.status == "input_required"
        if resumed:
            change(task, "working", "resuming")
        return [e["response"] for e in entries]


def accepted(response):
    return isinstance(response, dict) and response.get("action") == "accept"


def content_of(response):
    content = response.get("content") if isinstance(response, dict) else None
    return content if isinstance(content, dict) else {}


def after(seconds, outcome):
    """A job body that ends with `outcome` after `seconds` (stopped at once by a cancel)."""
    def body(ctx):
        ctx.sleep(seconds)
        return outcome
    return body


def make_body(name, args, mode):
    """A job body for the tool (mode "task" or "inline"), or raises ToolFail on bad arguments."""
    if name == "greet":
        who = args.get("name", "World")
        return lambda ctx: ("result", text_result(f"Hello, {who}!"))
    if name == "slow_compute":
        seconds = args.get("seconds", 1)
        if (not isinstance(seconds, (int, float)) or isinstance(seconds, bool)
                or not 0 <= seconds <= 3600):
            raise ToolFail("seconds must be a number within 0..3600")
        shown = str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))

        def slow(ctx):
            steps = math.ceil(seconds / 0.25)
            left = float(seconds)
            for i in range(1, steps + 1):
                ctx.message(f"step {i}/{steps}")
                ctx.sleep(min(0.25, left))
                left -= 0.25
            return ("result", text_result(f"computed {shown}"))
        return slow
    if name == "failing_job":
        return after(0.3, ("result", text_result("failing_job failed: simulated failure", True)))
    if name == "protocol_error_job":
        return after(0.3, ("error", {"code": -32603,
                                     "message": "Internal error: protocol_error_job crashed"}))
    if name == "tool_error_job":
        return after(0.3, ("result", text_result("tool_error_job reported an error", True)))
    if name == "confirm_delete":
        target = args.get("filename", args.get("path", "unnamed"))
        if not isinstance(target, str):
            raise ToolFail("filename must be a string")

        def confirm(ctx):
            if ctx.task is None:
                raise ToolFail("confirm_delete needs a task")
            (answer,) = ctx.ask([(f"Delete {target}?", {
                "type": "object", "properties": {"confirm": {"type": "boolean"}},
                "required": ["confirm"]})])
            if accepted(answer) and content_of(answer).get("confirm") is not False:
                return ("result", text_result(f"deleted {target}"))
            if isinstance(answer, dict) and answer.get("action") in ("decline", "accept"):
                return ("result", text_result(f"delete of {target} declined", True))
            return ("result", text_result(f"delete of {target} cancelled", True))
        return confirm
    if name == "multi_input":
        def multi(ctx):
            if ctx.task is None:
                raise ToolFail("multi_input needs a task")
            schema = {"type": "object", "properties": {"name": {"type": "string"}},
                      "required": ["name"]}
            answers = ctx.ask([("What is the first name?", schema),
                               ("What is the second name?", schema)])
            names = [str(content_of(a).get("name")) if accepted(a) else f"({a.get('action')})"
                     if isinstance(a, dict) else "(none)" for a in answers]
            return ("result", text_result(f"inputs: {', '.join(names)}"))
        return multi
    if name == "optional_job":
        return after(0.3, ("result", text_result("ran as task" if mode == "task" else "ran inline")))
    if name == "never_ends":
        def never(ctx):
            ctx.forever()
        return never
    if name == "test_tool_with_task":
        return after(0.2, ("result", text_result(f"Hello, {args.get('__user_name', 'someone')}!")))
    raise RpcError(-32602, f"Tool {name} not found")


def run_inline(name, body):
    STATS.bump("tool_runs", name)
    publish_stats()
    try:
        kind, value = body(JobCtx(None))
    except ToolFail as fail:
        return text_result(str(fail), True)
    if kind == "error":
        raise RpcError(value["code"], value["message"])
    return value


# --- legacy era ---------------------------------------------------------------------------------

def legacy(method, params, transport, session, deliver=None):
    """The result of a legacy request (deliver: tasks/result's way to send server requests)."""
    global STDIO_INITIALIZED
    if method == "initialize":
        caps = {"tools": {}}
        if not ARGS.no_task_capability:
            caps["tasks"] = {"list": {}, "cancel": {}, "requests": {"tools": {"call": {}}}}
        with LOCK:
            STDIO_INITIALIZED = True
            if transport == "stdio":
                STATS["sessions"] += 1
        publish_stats()
        return kit.initialize_result(params, caps, SERVER_INFO)
    if transport == "stdio" and not STDIO_INITIALIZED:
        raise RpcError(-32600, f"server not initialized: {method} before initialize")
    if method == "ping":
        return {}
    if method == "tools/list":
        tools = []
        for name, (support, _, desc, schema) in TOOLS.items():
            if support is None:
                continue
            tool = {"name": name, "description": desc, "inputSchema": schema,
                    "execution": {"taskSupport": support}}
            tools.append(tool)
        return {"tools": tools}
    if method == "tools/call":
        return legacy_call(params, transport, session)
    if method.startswith("tasks/") and ARGS.no_task_capability:
        raise RpcError(-32601, f"Method not found: {method}")
    if method == "tasks/get":
        with LOCK:
            return lookup(params.get("taskId"), "legacy", session).base("legacy")
    if method == "tasks/result":
        return legacy_result(params.get("taskId"), session, deliver)
    if method == "tasks/cancel":
        task = lookup(params.get("taskId"), "legacy", session)
        with LOCK:
            status = task.status
        if status in TERMINAL:
            raise RpcError(-32602, f"Cannot cancel task: already in terminal status '{status}'")
        cancel_task(task)
        with LOCK:
            return task.base("legacy")
    if method == "tasks/list":
        if params.get("cursor") is not None:
            raise RpcError(-32602, "Invalid cursor")
        with LOCK:
            tasks = [t for t in TASKS.values() if t.era == "legacy" and not t.lost]
        out = []
        for t in tasks:
            try:
                out.append(lookup(t.id, "legacy").base("legacy"))
            except RpcError:
                pass
        return {"tasks": out}
    raise RpcError(-32601, f"Method not found: {method}")


def legacy_call(params, transport, session):
    name = params.get("name")
    entry = TOOLS.get(name) if isinstance(name, str) else None
    if entry is None or entry[0] is None:
        raise RpcError(-32602, f"Tool {name} not found")
    support = entry[0]
    args = params.get("arguments") or {}
    if not isinstance(args, dict):
        raise RpcError(-32602, "arguments must be an object")
    as_task = isinstance(params.get("task"), dict) and not ARGS.no_task_capability
    if as_task and support == "forbidden":
        raise RpcError(-32601, f"Tool {name} does not support task augmentation "
                               f"(taskSupport: 'forbidden')")
    if not as_task and support == "required" and not ARGS.no_task_capability:
        raise RpcError(-32601, f"Tool {name} requires task augmentation (taskSupport: 'required')")
    try:
        body = make_body(name, args, "task" if as_task else "inline")
    except ToolFail as fail:
        return text_result(str(fail), True)
    if not as_task:
        return run_inline(name, body)
    return {"task": create_task(name, args, "legacy", transport, session, body)}


def legacy_result(task_id, session, deliver):
    """tasks/result: blocks until terminal, delivering the task's unanswered requests."""
    task = lookup(task_id, "legacy", session)
    sent = set()
    while True:
        with LOCK:
            task = lookup(task_id, "legacy")
            status = task.status
            todo = [e for e in task.inputs.values()
                    if e["response"] is None and e["key"] not in sent and task.era == "legacy"]
        if status in TERMINAL:
            break
        for e in todo:
            sent.add(e["key"])
            deliver({"jsonrpc": "2.0", "id": e["key"], **e["request"]})
        with COND:
            if task.status not in TERMINAL:
                COND.wait(0.5)
        deliver(None)  # a chance for a keepalive, or to notice the client left
    with LOCK:
        if task.status == "cancelled":
            raise RpcError(-32603, f"Task {task.id} was cancelled: it has no result")
        if task.error is not None:
            raise RpcError(task.error["code"], task.error["message"], task.error.get("data"))
        result = dict(task.result)
    meta = dict(result.get("_meta") or {})
    meta[RELATED_TASK] = {"taskId": task.id}
    result["_meta"] = meta
    return result


def legacy_answer(msg):
    """A JSON-RPC response from the client: the answer to one of our elicitation requests."""
    key = msg.get("id")
    with LOCK:
        hit = PENDING.get(key) if isinstance(key, str) else None
    if hit is None:
        eprint(f"answer to unknown request id {key!r}; ignored")
        return
    task, entry = hit
    if "error" in msg:
        response = {"action": "cancel", "error": msg["error"]}
    else:
        response = msg.get("result")
    answer_input(task, entry, response if isinstance(response, dict) else {"action": "cancel"})


# --- modern era ---------------------------------------------------------------------------------

def check_headers(method, params, headers):
    kit.check_method_headers(method, headers)
    want = None
    if method == "tools/call":
        want = params.get("name")
    elif method in ("tasks/get", "tasks/update", "tasks/cancel") and isinstance(
            params.get("taskId"), str):
        want = params["taskId"]
    if want is not None or method == "tools/call":
        sent, name = kit.mcp_name(headers)
        if name != want:
            raise RpcError(-32020, f"Mcp-Name header {sent!r} does not match the body's "
                                   f"{'name' if method == 'tools/call' else 'taskId'} {want!r}")


def missing_ext():
    return RpcError(-32021, "Missing required client capability",
                    {"requiredCapabilities": {"extensions": {TASKS_EXT: {}}}})


def modern(method, params, headers):
    if headers is not None:
        check_headers(method, params, headers)
    ext = kit.check_meta(params, headers, [MODERN_VERSION])[META_CAPS].get("extensions")
    declared = isinstance(ext, dict) and TASKS_EXT in ext
    if method == "server/discover":
        capabilities = {"tools": {}}
        if not ARGS.no_task_capability:
            capabilities["extensions"] = {TASKS_EXT: {}}
        return {"resultType": "complete", "supportedVersions": [MODERN_VERSION],
                "capabilities": capabilities, "_meta": {META_SERVER: SERVER_INFO}, "ttlMs": 0,
                "cacheScope": "public"}
    if method == "tools/list":
        tools = [{"name": n, "description": d, "inputSchema": s}
                 for n, (_, _, d, s) in TOOLS.items()]
        return {"resultType": "complete", "tools": tools, "ttlMs": 0, "cacheScope": "public"}
    if method == "tools/call":
        return modern_call(params, declared)
    if method in ("tasks/get", "tasks/update", "tasks/cancel") and not ARGS.no_task_capability:
        if not declared:
            raise missing_ext()
        task = lookup(params.get("taskId"), "modern")
        if method == "tasks/get":
            with LOCK:
                return task.detailed()
        if method == "tasks/cancel":
            with LOCK:
                live = task.status not in TERMINAL
            if live:
                cancel_task(task)
            return {"resultType": "complete"}
        responses = params.get("inputResponses")
        if not isinstance(responses, dict):
            raise RpcError(-32602, "inputResponses must be an object")
        for key, response in responses.items():
            with LOCK:
                entry = task.inputs.get(key)
            if entry is not None:
                answer_input(task, entry, response if isinstance(response, dict)
                             else {"action": "cancel"})
        return {"resultType": "complete"}
    raise RpcError(-32601, f"Method not found: {method}")


def modern_call(params, declared):
    name = params.get("name")
    entry = TOOLS.get(name) if isinstance(name, str) else None
    if entry is None:
        raise RpcError(-32602, f"Tool {name} not found")
    support = entry[1]
    args = params.get("arguments") or {}
    if not isinstance(args, dict):
        raise RpcError(-32602, "arguments must be an object")
    tasks_on = not ARGS.no_task_capability
    as_task = tasks_on and support != "forbidden" and declared
    if tasks_on and support == "required" and not declared:
        raise missing_ext()
    if name == "test_tool_with_task":
        answer = (params.get("inputResponses") or {}).get("user_name")
        if not isinstance(answer, dict):
            return {"resultType": "input_required", "inputRequests": {"user_name": {
                "method": "elicitation/create", "params": {
                    "mode": "form", "message": "What is your name?",
                    "requestedSchema": {"type": "object",
                                        "properties": {"name": {"type": "string"}},
                                        "required": ["name"]}}}},
                "requestState": f"name:{secrets.token_hex(8)}"}
        args = dict(args, __user_name=str(content_of(answer).get("name", "someone")))
    try:
        body = make_body(name, args, "task" if as_task else "inline")
    except ToolFail as fail:
        return {"resultType": "complete", **text_result(str(fail), True)}
    if not as_task:
        return {"resultType": "complete", **run_inline(name, body)}
    return {"resultType": "task", **create_task(name, args, "modern", None, None, body)}


# --- one message --------------------------------------------------------------------------------

def is_modern(msg):
    params = msg.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return (msg.get("method") == "server/discover"
            or (isinstance(meta, dict) and META_VERSION in meta))


def count_request(method):
    """Counts tasks/* on arrival; the fault (CUT, EXPIRE) this tasks/get triggers, else None."""
    global GETS_SEEN
    fault = None
    with LOCK:
        if method == "tasks/get":
            STATS["tasks_get"] += 1
            GETS_SEEN += 1
            if ARGS.cut_get is not None and GETS_SEEN == ARGS.cut_get:
                fault = CUT
            elif ARGS.expire_session_on_get is not None and GETS_SEEN == ARGS.expire_session_on_get:
                fault = EXPIRE
        elif method == "tasks/result":
            STATS["tasks_result"] += 1
        elif method == "tasks/update":
            STATS["tasks_update"] += 1
    publish_stats()
    return fault


def note_cancel(params):
    with LOCK:
        STATS["tasks_cancel"].append(params.get("taskId"))
    publish_stats()


def serve(msg, transport, headers=None, session=None, deliver=None):
    """(HTTP status, answer or None) for one parsed request (method and id present)."""
    req_id, method = msg["id"], msg["method"]
    try:
        params = kit.params_of(msg)
        if method == "tasks/cancel":
            note_cancel(params)
        modern_era = is_modern(msg)
        if modern_era:
            result = modern(method, params, headers)
        else:
            result = legacy(method, params, transport, session, deliver)
    except RpcError as err:
        # A legacy (2025-11-25) server answers a request's JSON-RPC error with 200, as the SDKs
        # do; the 2026-07-28 binding maps it to an HTTP status.
        status = err.status() if is_modern(msg) else 200
        return status, {"jsonrpc": "2.0", "id": req_id, "error": err.body()}
    return 200, {"jsonrpc": "2.0", "id": req_id, "result": result}


class ClientGone(Exception):
    pass


def safe_serve(msg, transport, **kw):
    """serve(), a bug in it answered -32603 (HTTP 500); a client leaving a stream (ClientGone)
    propagates."""
    try:
        return serve(msg, transport, **kw)
    except ClientGone:
        raise
    except Exception as exc:
        eprint(f"internal error: {exc!r}")
        return 500, kit.error_msg(msg.get("id"), -32603, f"Internal error: {exc}")


def log_message(kind, msg):
    if kind == "answer":
        eprint(f"answer id={msg.get('id')!r}")
    else:
        era = "modern" if is_modern(msg) else "legacy"
        eprint(f"{era} {msg['method']}" + (f" id={msg['id']!r}" if kind == "request" else ""))


# --- stdio --------------------------------------------------------------------------------------

def stdio_request(msg):
    if msg["method"] == "tasks/get" and count_request("tasks/get") is CUT:
        eprint(f"--cut-get {ARGS.cut_get}: tasks/get number {ARGS.cut_get}; exiting with status 3")
        publish_stats()
        sys.stderr.flush()
        os._exit(3)
    if msg["method"] in ("tasks/result", "tasks/update"):
        count_request(msg["method"])
    if msg["method"] == "tasks/cancel" and ARGS.ignore_cancel:
        note_cancel(kit.params_of(msg))
        eprint("--ignore-cancel: tasks/cancel not answered")
        return

    def deliver(request):
        if request is not None:
            write_line(request)
    _, answer = safe_serve(msg, "stdio", deliver=deliver)
    write_line(answer)
    publish_stats()


def serve_stdio():
    eprint("serving stdio (legacy 2025-11-25 and modern 2026-07-28 tasks)")
    publish_stats()
    for line, msg in kit.stdin_messages():
        if msg is kit.NOT_JSON:
            eprint(f"parse error on a line of {len(line)} bytes")
            write_line(kit.error_msg(None, -32700, "Parse error"))
            continue
        kind = kit.classify(msg)
        if kind is None:
            req_id = msg.get("id") if isinstance(msg, dict) else None
            write_line(kit.error_msg(req_id, -32600, "Invalid Request"))
            continue
        log_message(kind, msg)
        if kind == "answer":
            legacy_answer(msg)
        elif kind == "request":
            threading.Thread(target=stdio_request, args=(msg,), daemon=True).start()
    eprint("stdin closed; exiting")
    publish_stats()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


# --- http ---------------------------------------------------------------------------------------

class Handler(kit.Handler):
    server_version = "tasks-server/0.1"

    def session_of(self):
        """The legacy session id named by Mcp-Session-Id, or None after answering 400/404."""
        session = self.session_from(SESSIONS)
        return None if session is None else session.id

    def do_GET(self):
        path = self.path_only()
        if path == "/stats":
            self.reply(200, STATS.json().encode(), "application/json")
            return
        self.get_or_delete(path, self.standalone)

    def do_DELETE(self):
        def delete(sid):
            eprint("DELETE session")
            end_session(sid)
            with LOCK:
                STATS["deleted_sessions"] += 1
            publish_stats()
            self.reply(200)
        self.get_or_delete(self.path_only(), delete)

    def get_or_delete(self, path, then):
        """GET or DELETE /mcp: then(session id) for a live session; else 404 / 405 / 400."""
        if path != "/mcp":
            self.not_found()
            return
        if not self.headers.get("Mcp-Session-Id"):
            self.reply(405, b"", headers=[("Allow", "POST")])
            return
        sid = self.session_of()
        if sid is not None:
            then(sid)

    def start_stream(self, headers=()):
        super().start_stream(headers=headers)
        self.last_write = time.monotonic()

    def chunk(self, data):
        try:
            self.write_chunk(data)
        except OSError:
            raise ClientGone()
        self.last_write = time.monotonic()

    def event(self, msg):
        self.chunk(b"event: message\ndata: " + dumps(msg).encode() + b"\n\n")

    def end_stream(self):
        try:
            self.end_chunks()
        except OSError:
            self.close_connection = True

    def standalone(self, sid):
        """The session's standalone event stream (legacy status notifications)."""
        q = queue.Queue()
        with LOCK:
            session = SESSIONS.get(sid)
            if session is None:
                self.rpc_error(404, -32001, "Session not found")
                return
            session.streams.append(q)
        self.close_connection = True
        try:
            self.start_stream([("Connection", "close")])
            while True:
                try:
                    item = q.get(timeout=0.2)
                except queue.Empty:
                    if self.client_gone():
                        break
                    if time.monotonic() - self.last_write >= KEEPALIVE_S:
                        self.chunk(b": keepalive\n\n")
                    continue
                if item is None:  # the session ended
                    self.end_stream()
                    break
                self.event(item)
        except (ClientGone, OSError):
            pass
        finally:
            with LOCK:
                if q in session.streams:
                    session.streams.remove(q)

    def do_POST(self):
        if self.path_only() != "/mcp":
            self.not_found()
            return
        body = self.read_capped_body(MAX_BODY, chunked=False)
        if body is None:
            return
        try:
            msg = json.loads(body)
        except (ValueError, RecursionError):
            self.reply_json(400, kit.error_msg(None, -32700, "Parse error"))
            return
        kind = kit.classify(msg)
        if kind is None:
            req_id = msg.get("id") if isinstance(msg, dict) else None
            self.reply_json(400, kit.error_msg(req_id, -32600, "Invalid Request"))
            return
        log_message(kind, msg)
        modern_msg = kind == "request" and is_modern(msg)
        fault = count_request(msg["method"]) if kind == "request" else None
        if fault is CUT:
            eprint(f"--cut-get {ARGS.cut_get}: closing the connection without an answer")
            self.drop()
            return
        if kind == "request" and msg["method"] == "tasks/cancel" and ARGS.ignore_cancel:
            note_cancel(kit.params_of(msg))
            eprint("--ignore-cancel: tasks/cancel not answered")
            deadline = time.monotonic() + 60
            while not self.client_gone() and time.monotonic() < deadline:
                time.sleep(0.05)
            self.drop()
            return
        if modern_msg:
            status, answer = safe_serve(msg, "http", headers=self.headers)
            self.reply_json(status, answer)
            publish_stats()
            return
        if kind == "request" and msg["method"] == "initialize":
            sid = secrets.token_hex(16)
            status, answer = safe_serve(msg, "http", session=sid)
            headers = []
            if "result" in answer:
                with LOCK:
                    SESSIONS.add(Session(sid))
                    STATS["sessions"] += 1
                headers.append(("Mcp-Session-Id", sid))
            self.reply_json(status, answer, headers)
            publish_stats()
            return
        sid = self.session_of()
        if sid is None:
            return
        if fault is EXPIRE:
            eprint(f"--expire-session-on-get {ARGS.expire_session_on_get}: session {sid} expired")
            end_session(sid)
            self.rpc_error(404, -32001, "Session not found")
            return
        if kind == "notification":
            self.reply(202)
            return
        if kind == "answer":
            legacy_answer(msg)
            self.reply(202)
            return
        if msg["method"] == "tasks/result":
            self.tasks_result(msg, sid)
            return
        status, answer = safe_serve(msg, "http", session=sid)
        self.reply_json(status, answer)
        publish_stats()

    def tasks_result(self, msg, sid):
        """Legacy tasks/result: JSON when unknown, lost or terminal; else an event stream."""
        params = msg.get("params") if isinstance(msg.get("params"), dict) else {}
        with LOCK:
            task = TASKS.get(params.get("taskId"))
            quick = task is None or task.lost or task.status in TERMINAL
        if quick:
            status, answer = safe_serve(msg, "http", session=sid)
            self.reply_json(status, answer)
            return
        self.close_connection = True
        try:
            self.start_stream([("Connection", "close")])

            def deliver(request):
                if request is not None:
                    self.event(request)
                elif self.client_gone():
                    raise ClientGone()
                elif time.monotonic() - self.last_write >= KEEPALIVE_S:
                    self.chunk(b": keepalive\n\n")
            _, answer = safe_serve(msg, "http", session=sid, deliver=deliver)
            self.event(answer)
            self.end_stream()
        except (ClientGone, OSError):
            eprint("tasks/result: the client left the stream")
        publish_stats()


def end_session(sid):
    with LOCK:
        session = SESSIONS.pop(sid)
        streams = list(session.streams) if session else []
    for q in streams:
        q.put(None)


def serve_http():
    httpd = kit.Server(("127.0.0.1", ARGS.port), Handler)
    publish_stats()
    return kit.serve(httpd, f"listening on 127.0.0.1:{httpd.server_address[1]} (legacy 2025-11-25 "
                            f"and modern 2026-07-28 tasks)")


def main():
    global ARGS
    parser = kit.arguments("MCP task server (2025-11-25 and 2026-07-28)", transport=True,
                           flags=["port", "stats-file"])
    parser.add_argument("--poll-interval-ms", type=int, default=100)
    parser.add_argument("--ttl-ms", type=int, default=3_600_000, help="0: unlimited (null)")
    parser.add_argument("--lose-tasks", action="store_true")
    parser.add_argument("--cut-get", type=int, default=None, metavar="N")
    parser.add_argument("--expire-session-on-get", type=int, default=None, metavar="N")
    parser.add_argument("--no-task-capability", action="store_true")
    parser.add_argument("--ignore-cancel", action="store_true")
    ARGS = kit.parse(parser, "tasks_server", STATS)
    if ARGS.poll_interval_ms < 0 or ARGS.ttl_ms < 0:
        parser.error("--poll-interval-ms and --ttl-ms must be >= 0")
    for name in ("cut_get", "expire_session_on_get"):
        if getattr(ARGS, name) is not None and getattr(ARGS, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1")
    sys.exit(serve_stdio() if ARGS.transport == "stdio" else serve_http())


if __name__ == "__main__":
    main()
