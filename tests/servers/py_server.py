"""A small MCP server on the official Python SDK, for kaged-mcp's integration tests.

One file for both pinned SDK lines (installed by .ci/install-peers):
  mcp 1.30.0  ->  from mcp.server.fastmcp import FastMCP, Context
  mcp 2.3.0   ->  from mcp.server.mcpserver import MCPServer, Context

Usage:
  python py_server.py stdio
  python py_server.py sse --port N        (listens on 127.0.0.1; GET /sse, POST /messages/?session_id=...)
  python py_server.py streamable-http --port N [--stateless] [--json]
                                          (listens on 127.0.0.1; POST/GET/DELETE /mcp)
      --stateless  stateless_http=True: no mcp-session-id, a fresh session per request
      --json       json_response=True: answers are application/json, not text/event-stream
      sample/sample_raw send sampling/createMessage on the tools/call POST's SSE answer; with
      --json, on the standalone GET /mcp stream (open one first, or 1.x never answers the call)

Tools:
  echo(message)  -> "Echo: <message>"                   (text only, no structuredContent)
  big(n)         -> a text of n bytes, "x" repeated       (text only)
  slow(ms)       -> sleeps ms milliseconds, then "slept <ms>"
  fail()         -> raises, so the result has isError: true
  sample()       -> sends sampling/createMessage to the client; returns the answer's text or
                    "sampling error: <error>" (the refusal is caught, so the call itself succeeds)
  sample_raw()   -> the same request, the error not caught: 1.x turns it into an isError result,
                    2.x fails the whole tools/call with the client's JSON-RPC error
  idem()         -> readOnlyHint + idempotentHint; returns how many times it was called ("1", "2", ...)
  add(a, b)      -> a + b (ints), typed: the SDK derives inputSchema {a: integer, b: integer} and
                    outputSchema {result: integer} from the signature, and sends structuredContent
                    {"result": a + b}
  weather(city)  -> a Weather (pydantic: temperature number, conditions string), typed: outputSchema
                    from the model, structuredContent the model's fields
"""

from __future__ import annotations

import argparse
import sys

import anyio
import mcp.types as types
from pydantic import BaseModel

try:  # mcp 2.x
    from mcp.server.mcpserver import Context, MCPServer as _Server
    from mcp.server.mcpserver.exceptions import ToolError

    SDK_LINE = 2
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as _Server
    from mcp.server.fastmcp.exceptions import ToolError

    SDK_LINE = 1

try:
    from importlib.metadata import version as _pkg_version

    SDK_VERSION = _pkg_version("mcp")
except Exception:  # pragma: no cover - metadata missing in odd installs
    SDK_VERSION = "unknown"

server = _Server("kaged-py-test-server")

# Text only: a tool returning str would otherwise also fill structuredContent {"result": ...}.
TEXT_ONLY = {"structured_output": False}

_idem_calls = 0


@server.tool(**TEXT_ONLY)
def echo(message: str) -> str:
    """Echo the message back, prefixed with 'Echo: '."""
    return f"Echo: {message}"


@server.tool(**TEXT_ONLY)
def big(n: int) -> str:
    """Return a text of n bytes ('x' repeated)."""
    return "x" * n


@server.tool(**TEXT_ONLY)
async def slow(ms: int) -> str:
    """Sleep ms milliseconds, then answer."""
    await anyio.sleep(ms / 1000)
    return f"slept {ms}"


@server.tool(**TEXT_ONLY)
def fail() -> str:
    """Always fails; the result comes back with isError: true."""
    raise ToolError("fail tool failed on purpose")


# streamable-http only: where sample/sample_raw send their sampling/createMessage.
#   True  (SSE answers): related_request_id=<the tools/call id>, as the SDKs' own ctx.elicit does,
#         so the request rides the tools/call POST's text/event-stream answer.
#   False (--json, and stdio/sse, whose calls are unchanged): no related_request_id; on
#         streamable-http the request goes to the standalone GET /mcp stream (an application/json
#         answer cannot carry it: 1.x would drop it and hang the call, 2.x refuses at once).
_SAMPLING_ON_POST_STREAM = False


def _sampling_request(ctx: Context) -> dict:
    related = {"related_request_id": ctx.request_id} if _SAMPLING_ON_POST_STREAM else {}
    return dict(
        **related,
        messages=[
            types.SamplingMessage(
                role="user", content=types.TextContent(type="text", text="Say hello")
            )
        ],
        max_tokens=16,
    )


def _sampling_text(result) -> str:
    content = getattr(result, "content", None)
    text = getattr(content, "text", None)
    return f"sampled: {text}" if text is not None else f"sampled: {result!r}"


@server.tool(**TEXT_ONLY)
async def sample(ctx: Context) -> str:
    """Ask the client for a sampling/createMessage; report its answer or its error."""
    try:
        result = await ctx.session.create_message(**_sampling_request(ctx))
    except Exception as exc:  # the client's refusal arrives as an exception
        return f"sampling error: {exc}"
    return _sampling_text(result)


@server.tool(**TEXT_ONLY)
async def sample_raw(ctx: Context) -> str:
    """Like sample, but a refusal is not caught (1.x: isError result; 2.x: JSON-RPC error)."""
    result = await ctx.session.create_message(**_sampling_request(ctx))
    return _sampling_text(result)


@server.tool(
    annotations=types.ToolAnnotations.model_validate(
        {"readOnlyHint": True, "idempotentHint": True}
    ),
    **TEXT_ONLY,
)
def idem() -> str:
    """Read-only and idempotent; returns how many times it has been called."""
    global _idem_calls
    _idem_calls += 1
    return str(_idem_calls)


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers (typed: the SDK generates the input and output schemas)."""
    return a + b


class Weather(BaseModel):
    """Weather in a city."""

    temperature: float
    conditions: str


@server.tool()
def weather(city: str) -> Weather:
    """The weather in a city (typed: the output schema comes from the model)."""
    return Weather(temperature=21.5, conditions=f"sunny in {city}")


def _run_streamable_http(port: int, *, stateless: bool, json_response: bool) -> None:
    global _SAMPLING_ON_POST_STREAM
    _SAMPLING_ON_POST_STREAM = not json_response
    if SDK_LINE == 2:
        server.run(
            "streamable-http",
            host="127.0.0.1",
            port=port,
            streamable_http_path="/mcp",
            stateless_http=stateless,
            json_response=json_response,
        )
    else:
        # 1.x reads these settings when it builds the app in run(), so setting them here is
        # the same as passing them to FastMCP(...).
        server.settings.host = "127.0.0.1"
        server.settings.port = port
        server.settings.streamable_http_path = "/mcp"
        server.settings.stateless_http = stateless
        server.settings.json_response = json_response
        server.run("streamable-http")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", choices=["stdio", "sse", "streamable-http"])
    parser.add_argument(
        "--port", type=int, default=0, help="port on 127.0.0.1 (required for sse and streamable-http)"
    )
    parser.add_argument(
        "--stateless", action="store_true", help="streamable-http: stateless_http=True (no session id)"
    )
    parser.add_argument(
        "--json", action="store_true", help="streamable-http: json_response=True (application/json answers)"
    )
    args = parser.parse_args()
    http = args.transport in ("sse", "streamable-http")
    if http and args.port <= 0:
        parser.error(f"{args.transport} needs --port N (a free port, N > 0)")
    if args.transport != "streamable-http" and (args.stateless or args.json):
        parser.error("--stateless and --json only apply to streamable-http")
    print(
        f"py_server: mcp {SDK_VERSION} (line {SDK_LINE}) starting, transport={args.transport}"
        + (f" port={args.port}" if http else "")
        + (" stateless" if args.stateless else "")
        + (" json" if args.json else ""),
        file=sys.stderr,
        flush=True,
    )
    if args.transport == "stdio":
        server.run()
    elif args.transport == "sse":
        if SDK_LINE == 2:
            server.run("sse", host="127.0.0.1", port=args.port)
        else:
            server.settings.host = "127.0.0.1"
            server.settings.port = args.port
            server.run("sse")
    else:
        _run_streamable_http(args.port, stateless=args.stateless, json_response=args.json)


if __name__ == "__main__":
    main()
