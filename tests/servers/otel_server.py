#!/usr/bin/env python3
"""An MCP server on PyPI `mcp` 2.3 whose built-in OpenTelemetry spans are written to a file, for
kaged-mcp's trace-propagation tests (installed by .ci/install-peers into venv-mcp2 with
opentelemetry-sdk).

Usage:  <venv-mcp2>/bin/python otel_server.py --spans FILE [--always-on]      (stdio)
        <venv-mcp2>/bin/python otel_server.py --spans FILE --http PORT [--stateless] [--json]
                                                  [--always-on]

  stdio (default): one JSON-RPC message per line on stdin/stdout; logs only on stderr; exits at
         stdin EOF.
  --http PORT: Streamable HTTP on http://127.0.0.1:PORT/mcp (the SDK's app under uvicorn; POST,
         GET, DELETE /mcp). PORT 0 lets the OS pick. The first line on stdout is always
         `PORT=<n>` (flushed, written once the socket listens), then one line on stderr
         `otel_server: listening on http://127.0.0.1:<n>/mcp`.
      --stateless  stateless_http=True: no mcp-session-id, no initialize needed
      --json       json_response=True: answers are application/json, not text/event-stream
  --always-on: sample every span. The default is the SDK default, ParentBased(ALWAYS_ON): a span
         whose `traceparent` has flags 00 (not sampled) is not recorded, so not written.
  Both eras, as the SDK serves them: 2025-11-25 (and older) after `initialize`; 2026-07-28 with
  no handshake, each request carrying `_meta` io.modelcontextprotocol/protocolVersion and
  io.modelcontextprotocol/clientCapabilities (over HTTP also the MCP-Protocol-Version header, and
  Mcp-Method / Mcp-Name). Over stdio the first request decides the era of the connection.

Spans: the SDK's `OpenTelemetryMiddleware` (mcp/server/_otel.py) makes one SERVER span per
inbound request AND notification, named `<method>` or `<method> <params.name>`, parented by the
W3C `traceparent` / `tracestate` in `params._meta` (the global propagator: tracecontext +
baggage). A TracerProvider (resource service.name=kaged-otel-test-server) with a
SimpleSpanProcessor writes each span, as it ends, as one JSON line appended to FILE (flushed;
the SDK ends the span before the response is written, so it is in the file when the answer
arrives):
  {"name": "tools/call echo", "kind": "SERVER", "trace_id": "<32 hex>", "span_id": "<16 hex>",
   "parent_span_id": "<16 hex>" | null, "parent_is_remote": true | false | null,
   "trace_state": "k=v,..." | "", "attributes": {...}, "status": {"code": "UNSET" | "OK" |
   "ERROR", "message": "..." | null}, "events": [{"name", "attributes"}], "scope": "mcp-python-sdk",
   "resource": {...}, "start_time_unix_nano": n, "end_time_unix_nano": n}
The file is created (truncated) on start.

Tools:  echo(message)      -> the message, as text (no structuredContent)
        fail()             -> isError: true (the span gets error.type "tool_error", status ERROR)
        trace_context()    -> the current (server) span seen from inside the tool, as compact JSON
                              text {"trace_id", "span_id", "trace_state"}
Prompt: greet(name)        -> one user message "Hello, <name>!"
Resource: test://doc       -> text/plain "the test document"
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
from collections.abc import Sequence

from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ALWAYS_ON

import mcp_test_kit as kit


def _plain(value):
    """An attribute value as JSON (sequences become lists)."""
    if isinstance(value, (str, bool, int, float)) or value is None:
        return value
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return str(value)


class JsonLinesSpanExporter(SpanExporter):
    """Appends one JSON line per finished span to a file, flushed at once."""

    def __init__(self, path: str) -> None:
        self._lock = threading.Lock()
        self._file = open(path, "w", encoding="utf-8")  # noqa: SIM115 - closed in shutdown()

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        lines = []
        for span in spans:
            ctx = span.get_span_context()
            parent = span.parent
            lines.append(
                json.dumps(
                    {
                        "name": span.name,
                        "kind": span.kind.name,
                        "trace_id": format(ctx.trace_id, "032x"),
                        "span_id": format(ctx.span_id, "016x"),
                        "parent_span_id": format(parent.span_id, "016x") if parent else None,
                        "parent_is_remote": parent.is_remote if parent else None,
                        "trace_state": ctx.trace_state.to_header() if ctx.trace_state else "",
                        "attributes": {k: _plain(v) for k, v in (span.attributes or {}).items()},
                        "status": {"code": span.status.status_code.name, "message": span.status.description},
                        "events": [
                            {"name": e.name, "attributes": {k: _plain(v) for k, v in (e.attributes or {}).items()}}
                            for e in span.events
                        ],
                        "scope": span.instrumentation_scope.name if span.instrumentation_scope else None,
                        "resource": {k: _plain(v) for k, v in span.resource.attributes.items()},
                        "start_time_unix_nano": span.start_time,
                        "end_time_unix_nano": span.end_time,
                    },
                    separators=(",", ":"),
                )
            )
        with self._lock:
            if self._file.closed:
                return SpanExportResult.FAILURE
            self._file.write("".join(line + "\n" for line in lines))
            self._file.flush()
        return SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        with self._lock:
            self._file.close()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


def _install_tracing(spans_path: str, *, always_on: bool) -> None:
    provider = TracerProvider(
        resource=Resource.create({"service.name": "kaged-otel-test-server"}),
        **({"sampler": ALWAYS_ON} if always_on else {}),
    )
    provider.add_span_processor(SimpleSpanProcessor(JsonLinesSpanExporter(spans_path)))
    trace.set_tracer_provider(provider)


def _build_server():
    # Imported after the tracer provider is set (the SDK's tracer is a proxy either way).
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("kaged-otel-test-server")

    @server.tool(structured_output=False)
    def echo(message: str) -> str:
        """Return the message unchanged."""
        return message

    @server.tool(structured_output=False)
    def fail() -> str:
        """Always fails; the result comes back with isError: true."""
        raise ToolError("fail tool failed on purpose")

    @server.tool(structured_output=False)
    def trace_context() -> str:
        """The trace context current inside the tool (the SDK's SERVER span), as JSON."""
        ctx = trace.get_current_span().get_span_context()
        return json.dumps(
            {
                "trace_id": format(ctx.trace_id, "032x"),
                "span_id": format(ctx.span_id, "016x"),
                "trace_state": ctx.trace_state.to_header() if ctx.trace_state else "",
            },
            separators=(",", ":"),
        )

    @server.prompt()
    def greet(name: str) -> str:
        """Greet someone by name."""
        return f"Hello, {name}!"

    @server.resource("test://doc", name="doc", mime_type="text/plain")
    def doc() -> str:
        """A small text document."""
        return "the test document"

    return server


def _serve_http(server, port: int, *, stateless: bool, json_response: bool) -> None:
    import anyio
    import uvicorn

    app = server.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=stateless, json_response=json_response, host="127.0.0.1"
    )
    sock, port = kit.announced_socket(port)
    print(f"otel_server: listening on http://127.0.0.1:{port}/mcp", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", required=True, metavar="FILE", help="write one JSON line per finished span here")
    parser.add_argument("--http", type=int, metavar="PORT", help="Streamable HTTP on 127.0.0.1:PORT/mcp (0: any)")
    parser.add_argument("--stateless", action="store_true", help="--http: stateless_http=True")
    parser.add_argument("--json", action="store_true", help="--http: json_response=True")
    parser.add_argument("--always-on", action="store_true", help="sample every span, even under a 00 traceparent")
    args = parser.parse_args()
    if args.http is None and (args.stateless or args.json):
        parser.error("--stateless and --json only apply to --http")
    _install_tracing(args.spans, always_on=args.always_on)
    server = _build_server()
    print(
        f"otel_server: starting, transport={'http' if args.http is not None else 'stdio'}, spans -> {args.spans}",
        file=sys.stderr,
        flush=True,
    )
    try:
        if args.http is None:
            server.run()
        else:
            _serve_http(server, args.http, stateless=args.stateless, json_response=args.json)
    finally:
        trace.get_tracer_provider().shutdown()


if __name__ == "__main__":
    main()
