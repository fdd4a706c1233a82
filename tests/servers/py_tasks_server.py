"""DRAFT"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import warnings

import anyio
import mcp.types as types
from mcp.server.experimental.task_context import ServerTaskContext
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import McpError
from mcp.shared.experimental.tasks.helpers import is_terminal

try:
    from importlib.metadata import version as _pkg_version

    SDK_VERSION = _pkg_version("mcp")
except Exception:  # pragma: no cover - metadata missing in odd installs
    SDK_VERSION = "unknown"

# mcp 1.30 warns on every use of the experimental tasks API; keep stderr readable.
warnings.filterwarnings("ignore", category=DeprecationWarning)

server: Server = Server("kaged-py-tasks-server")
task_support = server.experimental.enable_tasks()

# How many times each task tool's body has started (process-wide, all sessions).
_started = {"research": 0, "confirm": 0}

STEP_SECONDS = 0.3

OBJECT_STRING = lambda key: {  # noqa: E731
    "type": "object",
    "properties": {key: {"type": "string"}},
    "required": [key],
}

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


async def _cancelled(task: ServerTaskContext) -> bool:
    """True if the task went terminal behind the body's back (tasks/cancel).

    The SDK's tasks/cancel only marks the task `cancelled` in the store; the body keeps running,
    and run_task's wrapper would then call complete() on a cancelled task. The store refuses
    that (ValueError), the wrapper's fail() is refused the same way, and the exception escapes
    into TaskSupport's task group, which tears the session down. So, once cancelled, copy the
    stored state into the context, which makes the wrapper skip complete().
    """
    stored = await task_support.store.get_task(task.task_id)
    if stored is not None and is_terminal(stored.status):
        task._ctx._task = stored  # noqa: SLF001 - see above; mcp is pinned to 1.30.0
        return True
    return False


async def _research(topic: str, task: ServerTaskContext) -> types.CallToolResult:
    _started["research"] += 1
    _log(f"research body started ({_started['research']}) topic={topic!r} task={task.task_id}")
    for step in ("gathering", "writing"):
        if await _cancelled(task):
            _log(f"research {topic!r}: cancelled before {step}")
            return _text(f"cancelled {topic}", is_error=True)
        await task.update_status(f"{step} {topic}")
        await anyio.sleep(STEP_SECONDS)
    if await _cancelled(task):
        _log(f"research {topic!r}: cancelled before its result")
        return _text(f"cancelled {topic}", is_error=True)
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
    if await _cancelled(task):
        return _text(f"cancelled {item}", is_error=True)
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
        return await ctx.experimental.run_task(lambda task: _research(topic, task))
    item = arguments["item"]
    return await ctx.experimental.run_task(lambda task: _confirm(item, task))


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

    async def endpoint(scope, receive, send) -> None:
        await manager.handle_request(scope, receive, send)

    app = Starlette(routes=[Route("/mcp", endpoint=endpoint)], lifespan=lambda _app: manager.run())

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    sock.set_inheritable(True)
    print(f"PORT={sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(app, log_level="warning")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["stdio", "streamable-http"])
    parser.add_argument("--port", type=int, default=0, help="streamable-http: port on 127.0.0.1 (0: any)")
    args = parser.parse_args()
    http = args.transport == "streamable-http"
    _log(f"mcp {SDK_VERSION} starting, transport={args.transport}" + (f" port={args.port}" if http else ""))
    if http:
        _run_streamable_http(args.port)
    else:
        anyio.run(_run_stdio)


if __name__ == "__main__":
    main()
