"""A 2025-11-25 tasks server on the official Python SDK (mcp 1.30.0), for kaged-mcp's task tests.

Built on the SDK's experimental tasks API: lowlevel `Server` + `server.experimental.enable_tasks()`
(in-memory store and queue); task tools declare `execution.taskSupport: "required"`, call_tool does
`ctx.experimental.validate_task_mode(...)` then `ctx.experimental.run_task(work)`, and the bodies use
`ServerTaskContext.update_status` / `.elicit`. Only mcp 1.x has this (2.x dropped tasks): run it
with .peers/venv-mcp1/bin/python.

Usage:
  python py_tasks_server.py stdio
  python py_tasks_server.py streamable-http [--port N]
      stateful Streamable HTTP on 127.0.0.1, POST/GET/DELETE /mcp, answers as text/event-stream
      (SSE), Mcp-Session-Id issued by initialize. The first stdout line is `PORT=<n>` (flushed),
      also when --port N is given; --port 0 or none lets the OS pick (SsePeer::start_reporting_port).
      DNS-rebinding protection as FastMCP sets it for 127.0.0.1 (Host 127.0.0.1:*/localhost:*).
  stderr: `py_tasks_server: ...` lines (start, `research body started (n) topic=... task=<id>`,
  `confirm body started (n) ...`, cancellations); the SDK adds `WARNING:root:Response ID
  'task-...' cannot be normalized to match pending requests` for every elicitation answer
  (harmless: the answer is still routed) and `Tool 'x' not listed, ...` for unknown tools.

initialize (client capabilities {"elicitation": {}}) answers
  {"protocolVersion":"2025-11-25","capabilities":{"experimental":{},"tools":{"listChanged":false},
   "tasks":{"list":{},"cancel":{},"requests":{"tools":{"call":{}}}}},
   "serverInfo":{"name":"kaged-py-tasks-server","version":"1.30.0"}}
  (serverInfo.version is the SDK's version). No client `tasks` capability is needed.

Tools (tools/list: research and confirm carry "execution":{"taskSupport":"required"}, quick and
counter have no `execution`; input is validated against inputSchema BEFORE any task is created):
  research {topic}  task: update_status "gathering <topic>", ~0.3 s, "writing <topic>", ~0.3 s,
                    then completed with {"content":[{"type":"text","text":"report on <topic>"}],
                    "isError":false}.
  confirm {item}    task: elicits "Proceed with <item>?" (schema {type: object, properties: {ok:
                    {type: boolean}}, required: [ok]}); accept with ok true -> "done <item>"
                    (isError false); decline, cancel, accept without ok true, or a JSON-RPC error
                    answer -> "skipped <item>" with isError true. Either way the TASK is
                    `completed` (an isError result is not a failed task). Client without the
                    elicitation capability -> the task is `failed`, statusMessage "Client does not
                    support elicitation capability". confirm never sets a statusMessage.
  quick {}          normal tool -> {"content":[{"type":"text","text":"quick"}],"isError":false}
  counter {}        normal tool -> text `{"research": n, "confirm": m}`: how many times each task
                    body has STARTED since the process started (all sessions), e.g.
                    {"content":[{"type":"text","text":"{\"research\": 4, \"confirm\": 5}"}],"isError":false}
  unknown tool      -> {"content":[{"type":"text","text":"Unknown tool: <name>"}],"isError":true}

Observed wire (stdio and HTTP alike unless said; ids/times abbreviated):
  tools/call research + params.task {"ttl":60000} -> CreateTaskResult at once:
    {"task":{"taskId":"19a498e6b3124b03b40ab0cce5ea86c2:44f1d07b-a164-43c3-b372-4ea462d8fd78",
     "status":"working","createdAt":"2026-12-02T14:51:00.914096Z",
     "lastUpdatedAt":"2026-12-02T14:51:00.914096Z","ttl":60000,"pollInterval":500}}
    taskId = "<32-hex session scope>:<uuid4>"; pollInterval always 500; the requested ttl is
    echoed; params.task {} -> no "ttl" key at all. No _meta on CreateTaskResult.
  tasks/get -> the bare task (no "task" wrapper, no _meta):
    {"taskId":"…","status":"working","statusMessage":"gathering bees","createdAt":"…",
     "lastUpdatedAt":"…","ttl":60000,"pollInterval":500}
    statuses seen: working, input_required, completed, failed, cancelled. statusMessage keeps the
    last update_status text, also once completed/cancelled ("writing bees"); absent if never set.
  tasks/result -> blocks until the task is terminal (while working, the POST/stdio request just
    waits), then the stored CallToolResult plus related-task _meta, repeatable:
    {"_meta":{"io.modelcontextprotocol/related-task":{"taskId":"…"}},
     "content":[{"type":"text","text":"report on bees"}],"isError":false}
    For a cancelled or failed task: ONLY {"_meta":{"io.modelcontextprotocol/related-task":{…}}}
    (no content, no isError, no JSON-RPC error).
  confirm: tasks/get shows "input_required" (no statusMessage) right after the CreateTaskResult;
    the elicitation is sent ONLY on tasks/result (over HTTP: on that tasks/result POST's SSE
    stream, never on GET), as a request with a STRING id "task-<taskId>-<decimal int>":
    {"method":"elicitation/create","params":{"mode":"form","message":"Proceed with deploy?",
     "requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}},"required":["ok"]},
     "_meta":{"io.modelcontextprotocol/related-task":{"taskId":"…"}}},"jsonrpc":"2.0",
     "id":"task-19a4…:ee3e0816-…-139845575772992"}
    The answer (same string id; over HTTP a separate POST, answered 202) resumes the body; the
    same tasks/result then returns the final result ("done deploy" / "skipped nuke").
  required tool without params.task -> NOT a JSON-RPC error, a tool error result:
    {"content":[{"type":"text","text":"This tool requires task-augmented invocation"}],"isError":true}
    quick WITH params.task -> {"content":[{"type":"text","text":"This tool does not support
    task-augmented invocation"}],"isError":true}. research with bad arguments (with or without
    params.task) -> {"content":[{"type":"text","text":"Input validation error: 'topic' is a
    required property"}],"isError":true}, no task created.
  tasks/cancel of a running research -> the task with status "cancelled":
    {"taskId":"…","status":"cancelled","statusMessage":"gathering wasps","createdAt":"…",
     "lastUpdatedAt":"…","ttl":60000,"pollInterval":500}; later tasks/get says cancelled forever.
    Again -> error {"code":-32602,"message":"Cannot cancel task in terminal state 'cancelled'"}
    (or 'completed'). Unknown id (tasks/get, tasks/result, tasks/cancel) -> error
    {"code":-32602,"message":"Task not found: nope"}. tasks/list -> {"tasks":[<the session's own
    tasks, tasks/get shape>]}, no nextCursor.
    The SDK does NOT stop the body on cancel; this server's bodies notice and quit (see _gone).
    Cancelling a confirm that waits for input: a later tasks/result STILL delivers the queued
    elicitation, and after the answer returns only the bare _meta result.
  notifications/tasks/status: sent by update_status and on completed/failed (complete()/fail()),
    never for input_required or cancelled, and never before the CreateTaskResult:
    {"method":"notifications/tasks/status","params":{"taskId":"…","status":"working",
     "statusMessage":"gathering bees","createdAt":"…","lastUpdatedAt":"…","ttl":60000,
     "pollInterval":500},"jsonrpc":"2.0"}   (a completed one: "status":"completed")
    Over HTTP they go ONLY to the standalone GET /mcp SSE stream; with no GET stream open they
    are silently dropped (never on the tools/call or tasks/result POST streams).
  ttl: the store drops a task ttl ms after its CREATION even while it runs (and resets the
    clock when it turns terminal); afterwards tasks/get -> -32602 "Task not found: <id>".
  HTTP sessions: a task belongs to the session that created it. A new session (initialize
    again, new Mcp-Session-Id) asking for an old taskId gets -32602 "Task not found: <id>" from
    tasks/get, tasks/result and tasks/cancel, and tasks/list -> {"tasks":[]}; the old session
    still sees it. A session's running bodies are cancelled when the session ends (DELETE).

Deviations from the bare SDK (SDK bugs that would break tests; see _SessionTaskSupport, _gone):
  - one task group per session instead of one shared attribute (bare SDK: after ANY HTTP session
    ends, task calls in the other sessions answer {"content":[{"type":"text","text":"TaskSupport
    not running. Ensure Server.run() is active."}],"isError":true}; at stdin EOF it waits for
    running bodies: a confirm waiting for input never exits, a research exits 1).
  - a body whose task was cancelled or expired ends quietly (bare SDK: its completion raises
    ValueError inside the task group and kills the stdio server / the HTTP session).
"""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar

import anyio
import mcp.types as types
from anyio.abc import TaskGroup
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.experimental.task_support import TaskSupport
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import McpError
from mcp.shared.experimental.tasks.helpers import is_terminal

import mcp_test_kit as kit

try:
    from importlib.metadata import version as _pkg_version

    SDK_VERSION = _pkg_version("mcp")
except Exception:  # pragma: no cover - metadata missing in odd installs
    SDK_VERSION = "unknown"

# mcp 1.30 warns on every use of the experimental tasks API; keep stderr readable.
warnings.filterwarnings("ignore", category=DeprecationWarning)

# The session whose Server.run() is current (set by _SessionTaskSupport.run, inherited by the
# session's request handlers, which run_task calls from).
_session_group: ContextVar[TaskGroup | None] = ContextVar("py_tasks_server_session_group", default=None)


class _SessionTaskSupport(TaskSupport):
    """TaskSupport with one task group per session (the SDK's keeps ONE for all sessions).

    mcp 1.30's TaskSupport.run() stores the session's task group in a single attribute: each new
    session overwrites it and any session that ends sets it to None, after which run_task fails
    in every other live session ("TaskSupport not running. Ensure Server.run() is active.") until
    some session initializes again. Its run() also waits for the bodies at session end: at stdin
    EOF a confirm parked on its elicitation keeps the process alive forever, and a research body
    dies sending its next status notification (ClosedResourceError, exit status 1). Here each
    session gets its own group (a ContextVar, inherited by the session's request handlers) and
    the session's bodies are cancelled when it ends.
    """

    @property
    def task_group(self) -> TaskGroup:
        group = _session_group.get()
        if group is None:
            raise RuntimeError("TaskSupport not running. Ensure Server.run() is active.")
        return group

    @asynccontextmanager
    async def run(self) -> AsyncIterator[None]:
        async with anyio.create_task_group() as group:
            token = _session_group.set(group)
            try:
                yield
            finally:
                group.cancel_scope.cancel()
                _session_group.reset(token)


server: Server = Server("kaged-py-tasks-server")
task_support = server.experimental.enable_tasks()
task_support.__class__ = _SessionTaskSupport  # same store, queue and result handler

# How many times each task tool's body has started (process-wide, all sessions).
_started = {"research": 0, "confirm": 0}

STEP_SECONDS = 0.3

def OBJECT_STRING(key: str) -> dict:
    return {"type": "object", "properties": {key: {"type": "string"}}, "required": [key]}

TOOLS = [
    types.Tool(
        name="research",
        description="Research a topic as a task: two status steps, then a report.",
        inputSchema=OBJECT_STRING("topic"),
        execution=types.ToolExecution(taskSupport="required"),
    ),
    types.Tool(
        name="confirm",
        description="Ask the user (elicitation, as a task) whether to proceed with an item.",
        inputSchema=OBJECT_STRING("item"),
        execution=types.ToolExecution(taskSupport="required"),
    ),
    types.Tool(
        name="quick",
        description="A normal tool (no task): answers 'quick'.",
        inputSchema={"type": "object", "properties": {}},
    ),
    types.Tool(
        name="counter",
        description='How many times research and confirm bodies have started: {"research": n, "confirm": m}.',
        inputSchema={"type": "object", "properties": {}},
    ),
]
TASK_MODE = {t.name: (t.execution.taskSupport if t.execution else None) for t in TOOLS}


def _log(line: str) -> None:
    print(f"py_tasks_server: {line}", file=sys.stderr, flush=True)


def _text(text: str, *, is_error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=is_error)


async def _gone(task: ServerTaskContext) -> bool:
    """True if the task went terminal (tasks/cancel) or vanished (its ttl ran out) meanwhile.

    The SDK's tasks/cancel only marks the task `cancelled` in the store, and the store drops a
    task `ttl` ms after its creation even while it runs; either way the body keeps running, and
    run_task's wrapper would then call complete() on it. The store refuses that (ValueError), the
    wrapper's fail() is refused the same way, and the exception escapes into the session's task
    group, which kills the whole server (stdio) or the HTTP session. So mark the context's own
    copy of the task terminal, which makes the wrapper skip complete().
    """
    stored = await task_support.store.get_task(task.task_id)
    if stored is None:
        task._ctx._task = task.task.model_copy(update={"status": "failed"})  # noqa: SLF001
        return True
    if is_terminal(stored.status):
        task._ctx._task = stored  # noqa: SLF001 - see above; mcp is pinned to 1.30.0
        return True
    return False


class _Gone(Exception):
    """A body noticed its task was cancelled or expired."""


def _guarded(name: str, label: str, body):
    """run_task's work: body, but a task cancelled or expired meanwhile ends quietly (see _gone)."""

    async def work(task: ServerTaskContext) -> types.CallToolResult:
        try:
            result = await body(task)
        except anyio.get_cancelled_exc_class():
            _log(f"{name} {label!r}: body cancelled (its session ended)")
            raise
        except Exception as err:
            if await _gone(task):
                _log(f"{name} {label!r}: task cancelled or expired ({type(err).__name__}: {err})")
                return _text(f"cancelled {label}", is_error=True)
            raise
        if await _gone(task):
            _log(f"{name} {label!r}: task cancelled or expired before its result")
            return _text(f"cancelled {label}", is_error=True)
        _log(f"{name} {label!r}: body finished")
        return result

    return work


async def _research(topic: str, task: ServerTaskContext) -> types.CallToolResult:
    _started["research"] += 1
    _log(f"research body started ({_started['research']}) topic={topic!r} task={task.task_id}")
    for step in ("gathering", "writing"):
        if await _gone(task):
            raise _Gone(f"before {step}")
        await task.update_status(f"{step} {topic}")
        await anyio.sleep(STEP_SECONDS)
    return _text(f"report on {topic}")


async def _confirm(item: str, task: ServerTaskContext) -> types.CallToolResult:
    _started["confirm"] += 1
    _log(f"confirm body started ({_started['confirm']}) item={item!r} task={task.task_id}")
    try:
        answer = await task.elicit(
            message=f"Proceed with {item}?",
            requestedSchema={
                "type": "object",
                "properties": {"ok": {"type": "boolean"}},
                "required": ["ok"],
            },
        )
    except McpError as err:
        if err.error.code == types.INVALID_REQUEST and "elicitation capability" in err.error.message:
            raise  # no elicitation capability: the task fails
        _log(f"confirm {item!r}: the elicitation failed: {err.error.code} {err.error.message}")
        answer = None
    if answer is not None and answer.action == "accept" and (answer.content or {}).get("ok") is True:
        return _text(f"done {item}")
    return _text(f"skipped {item}", is_error=True)


@server.list_tools()
async def list_tools() -> list[types.Tool]:
    return TOOLS


@server.call_tool()
async def call_tool(name: str, arguments: dict):
    if name not in TASK_MODE:
        raise ValueError(f"Unknown tool: {name}")
    ctx = server.request_context
    # required without params.task, or a normal tool with params.task: McpError(-32601), which
    # the lowlevel call_tool wrapper turns into an isError result with the error's message.
    ctx.experimental.validate_task_mode(TASK_MODE[name])
    if name == "quick":
        return [types.TextContent(type="text", text="quick")]
    if name == "counter":
        return [types.TextContent(type="text", text=json.dumps(_started))]
    if name == "research":
        topic = arguments["topic"]
        return await ctx.experimental.run_task(
            _guarded("research", topic, lambda task: _research(topic, task))
        )
    item = arguments["item"]
    return await ctx.experimental.run_task(_guarded("confirm", item, lambda task: _confirm(item, task)))


async def _run_stdio() -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


def _run_streamable_http(port: int) -> None:
    import uvicorn
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=False,
        stateless=False,
        # What FastMCP sets up for a 127.0.0.1 host.
        security_settings=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        ),
    )

    class Endpoint:  # an ASGI app (a plain function would be wrapped as a GET-only endpoint)
        async def __call__(self, scope, receive, send) -> None:
            await manager.handle_request(scope, receive, send)

    app = Starlette(routes=[Route("/mcp", endpoint=Endpoint())], lifespan=lambda _app: manager.run())

    sock, _ = kit.announced_socket(port)
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def main() -> None:
    args = kit.sdk_arguments(__doc__)
    http = args.transport == "streamable-http"
    _log(f"mcp {SDK_VERSION} starting, transport={args.transport}" + (f" port={args.port}" if http else ""))
    if http:
        _run_streamable_http(args.port)
    else:
        anyio.run(_run_stdio)


if __name__ == "__main__":
    main()
