r"""An MCP resources/prompts/completion/logging/roots/subscriptions server on the official Python SDK,
for kaged-mcp's tests.

One file for both pinned SDK lines (installed by .ci/install-peers):
  mcp 1.30.0  ->  .peers/venv-mcp1/bin/python: mcp.server.fastmcp.FastMCP; legacy era only
                  (initialize handshake, 2025-11-25)
  mcp 2.3.0   ->  .peers/venv-mcp2/bin/python: mcp.server.mcpserver.MCPServer; serves BOTH eras,
                  chosen by the client's first request: `initialize` -> legacy ("2.3-legacy");
                  a request whose params._meta carries io.modelcontextprotocol/protocolVersion
                  (e.g. server/discover) -> 2026-07-28 ("2.3-modern", stateless, per-request _meta)

Usage:
  python py_resources_server.py stdio
      one JSON message per line; exits 0 at stdin EOF (2.3-modern first answers a still open
      subscriptions/listen with {"code":-32000,"message":"Connection closed"})
  python py_resources_server.py streamable-http [--port N]
      127.0.0.1, POST/GET/DELETE /mcp, SSE answers (not --json), stateful legacy sessions
      (Mcp-Session-Id from initialize). The first stdout line is `PORT=<n>` (flushed), also with
      --port N; no --port or --port 0 lets the OS pick. DNS-rebinding protection as the SDKs set it
      for 127.0.0.1 (Host 127.0.0.1:*/localhost:*). SIGTERM: exit within ~1 s, status -15
      (uvicorn re-raises the signal; timeout_graceful_shutdown=1 because an open listen stream
      never ends on its own and would hold the shutdown forever).
  stderr: `py_resources_server: ...` lines (start, listening, `logging/setLevel <level>`,
  `resources/subscribe <uri>`, `resources/unsubscribe <uri>`), plus the SDKs' own warnings and
  tracebacks (e.g. a prompt missing a required argument), which carry no prefix.

Server name "kaged-py-resources"; serverInfo.version is the SDK's version ("1.30.0"/"2.3.0";
2.x would say "" if not told).

Resources (resources/list, in this order; `description` is the docstring):
  file:///notes/readme.txt  name readme, text/plain, text "hello from mcp 1" / "hello from mcp 2"
  data://pixel.png          name pixel, image/png, a blob: b"\x89PNG\r\n\x1a\n" + bytes 0..7
                            (16 bytes) -> "blob":"iVBORw0KGgoAAQIDBAUGBw=="
  data://big.txt            name big, text/plain, "0123456789" * 20_000 (200 000 bytes)
Template (resources/templates/list): greeting://{name}, name greeting, text/plain -> "Hello, <name>!"
Prompts: summarize {topic (required), style (optional)} -> one user message, text
           "Summarize <topic> in a <style or 'plain'> style"
         pair {language, framework (both required)} -> "Pair <language> with <framework>"
completion/complete (values filtered by prefix = argument.value; always total + hasMore false):
  ref/resource greeting://{name}, argument name -> from ["alice","albert","bob"]
  ref/prompt pair, argument language -> from ["python","rust","go"]
  ref/prompt pair, argument framework -> by context.arguments.language: python ["django","flask"],
    rust ["axum","actix"], go ["gin"], absent/other []
  anything else -> {"values":[],"total":0,"hasMore":false}
Tools (text only, no structuredContent):
  log_level {}            -> the level last set by logging/setLevel (process-wide), or "unset"
  log {level, message}    -> sends notifications/message {level, logger "kaged-py-resources",
                             data message} on this request's channel (HTTP: the POST's SSE answer)
                             and answers "logged <level>"; legacy: "dropped <level> (below <set>)"
                             if under the logging/setLevel level; modern: "dropped <level> (the
                             request's _meta did not opt in at that level)" unless the request's
                             _meta io.modelcontextprotocol/logLevel is that level or lower;
                             unknown level -> isError "unknown level '<x>'"
  roots {}                -> asks the client for its roots (see below); text = JSON array of the
                             root URIs, e.g. "[\"file:///tmp/a\", \"file:///work\"]" (json.dumps)
  touch {uri}             -> "touched <uri>"; sends notifications/resources/updated {uri} (below)
  add_resource {uri, text="added"} -> "added <uri>"; adds a static text/plain resource (name = the
                             uri) and sends notifications/resources/list_changed (below)
  subscribed {}           -> sorted JSON array of the URIs subscribed with resources/subscribe and
                             not unsubscribed (process-wide; the modern era never adds any)

Capabilities:
  1.30 initialize: {"experimental":{},"logging":{},"prompts":{"listChanged":false},
                    "resources":{"subscribe":true,"listChanged":true},"tools":{"listChanged":false},
                    "completions":{}}
  2.3-legacy initialize: {"completions":{},"logging":{},"prompts":{"listChanged":false},
                    "resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":false}}
                    (no "experimental")
  2.3-modern server/discover: {"completions":{},"logging":{},"prompts":{"listChanged":true},
                    "resources":{"listChanged":true,"subscribe":true},"tools":{"listChanged":true}}
                    (the SDK derives every listChanged and subscribe from subscriptions/listen
                    being served; "logging" = "can send log messages", although logging/setLevel
                    is gone)
  Neither FastMCP nor MCPServer declares logging by itself (only when a logging/setLevel handler
  is registered), and 1.30 hard-codes resources.subscribe false and both leave listChanged false:
  this server registers lowlevel handlers for logging/setLevel and resources/(un)subscribe and
  wraps the lowlevel create_initialization_options (NotificationOptions(resources_changed=True),
  subscribe forced true).

Observed wire, stdio (HTTP carries the same JSON; 2.3 sorts keys alphabetically, 1.30 does not):
  initialize -> {"protocolVersion":"2025-11-25","capabilities":{...above},
                 "serverInfo":{"name":"kaged-py-resources","version":"1.30.0"}}
  2.3-modern server/discover (params {"_meta":{...protocolVersion "2026-07-28",
    clientCapabilities {"roots":{}}, clientInfo}}) ->
    {"cacheScope":"private","capabilities":{...},"resultType":"complete",
     "supportedVersions":["2026-07-28"],"ttlMs":0,
     "_meta":{"io.modelcontextprotocol/serverInfo":{"name":"kaged-py-resources","version":"2.3.0"}}}
  Every 2.3-modern result carries "resultType":"complete" (or "input_required") and that _meta
  serverInfo; discover, resources/list, resources/templates/list, resources/read, prompts/list
  and tools/list also carry "ttlMs":0,"cacheScope":"private"; prompts/get, completion/complete and
  tools/call do not. Legacy results (1.30 and 2.3) carry none of these.
  resources/list -> {"resources":[{"name":"readme","uri":"file:///notes/readme.txt",
    "description":"A short text note.","mimeType":"text/plain"},{"name":"pixel",...,
    "mimeType":"image/png"},{"name":"big",...}]}
  resources/templates/list -> {"resourceTemplates":[{"name":"greeting",
    "uriTemplate":"greeting://{name}","description":"A greeting for a name.","mimeType":"text/plain"}]}
  resources/read file:///notes/readme.txt -> {"contents":[{"uri":"file:///notes/readme.txt",
    "mimeType":"text/plain","text":"hello from mcp 1"}]}
  resources/read data://pixel.png -> {"contents":[{"uri":"data://pixel.png","mimeType":"image/png",
    "blob":"iVBORw0KGgoAAQIDBAUGBw=="}]}   (standard base64 with padding, field "blob")
  resources/read data://big.txt -> one text content of 200 000 chars (a ~200 100-byte line)
  resources/read greeting://world -> {"contents":[{"uri":"greeting://world",
    "mimeType":"text/plain","text":"Hello, world!"}]}
  resources/read nope://x -> 1.30: {"code":0,"message":"Unknown resource: nope://x"} (code 0!);
    2.3 (both eras): {"code":-32602,"message":"Unknown resource: nope://x","data":{"uri":"nope://x"}}
  prompts/list -> {"prompts":[{"name":"summarize","description":"Summarize a topic, in a style.",
    "arguments":[{"name":"topic","required":true},{"name":"style","required":false}]},
    {"name":"pair","description":"Pair a language with a framework.","arguments":[
    {"name":"language","required":true},{"name":"framework","required":true}]}]}
  prompts/get summarize {topic: bees} -> {"description":"Summarize a topic, in a style.",
    "messages":[{"role":"user","content":{"type":"text","text":"Summarize bees in a plain style"}}]}
  prompts/get summarize {} -> 1.30 and 2.3-legacy: {"code":0,"message":"Missing required
    arguments: {'topic'}"}; 2.3-modern: {"code":-32603,"message":"Internal server error"}
  completion/complete {"ref":{"type":"ref/prompt","name":"pair"},"argument":{"name":"framework",
    "value":"a"},"context":{"arguments":{"language":"rust"}}} ->
    {"completion":{"values":["axum","actix"],"total":2,"hasMore":false}}
  tools/call -> {"content":[{"type":"text","text":"unset"}],"isError":false}

  Logging:
    legacy (1.30, 2.3): logging/setLevel {"level":"warning"} -> {}; log_level -> "warning"; log
      {error, loud} -> first {"method":"notifications/message","params":{"level":"error",
      "logger":"kaged-py-resources","data":"loud"},"jsonrpc":"2.0"}, then the tools/call answer.
      (The SDKs never filter by the set level themselves; this server's `log` tool does.)
    2.3-modern: logging/setLevel -> {"code":-32601,"message":"Method not found",
      "data":"logging/setLevel"} (HTTP 404), so log_level stays "unset". Instead each request opts
      in with params._meta "io.modelcontextprotocol/logLevel": "<level>": without it the SDK drops
      every notifications/message for that request; with it, that level and above ride that
      request's own channel (stdio: lines before the answer; HTTP: the POST answer turns into SSE).
      E.g. tools/call log {info, opted} with _meta logLevel "debug" ->
      {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info",
      "logger":"kaged-py-resources","data":"opted"}}, then the result. No subscriptionId on it.

  Roots:
    legacy (1.30, 2.3): tools/call roots -> a server-to-client request, no params, sent with
      related_request_id = the tools/call id (HTTP: on that POST's SSE answer, not on GET):
        1.30: {"method":"roots/list","jsonrpc":"2.0","id":0}   (1.30 numbers from 0)
        2.3:  {"jsonrpc":"2.0","id":1,"method":"roots/list"}   (2.3 numbers from 1)
      answer {"roots":[{"uri":"file:///tmp/a","name":"a"},{"uri":"file:///work"}]} -> the call
      answers "[\"file:///tmp/a\", \"file:///work\"]"; a JSON-RPC error answer {"code":-32601,
      "message":"Method not found"} -> {"content":[{"type":"text","text":"roots error: Method not
      found"}],"isError":true}. Neither SDK checks the client's roots capability: the request is
      sent even to a client that declared none, and its answer decides.
    2.3-modern: server-to-client requests do not exist (the SDK raises NoBackChannelError for
      ctx.session.list_roots()). The tool returns an input_required result instead:
        {"inputRequests":{"roots":{"method":"roots/list"}},"requestState":"v1.JoLJ1-KD0B...",
         "resultType":"input_required","_meta":{"io.modelcontextprotocol/serverInfo":{...}}}
      requestState is sealed by the SDK (AES-GCM, process-local key, ttl 600 s, bound to the
      request). The client retries the same tools/call with "inputResponses":{"roots":{"roots":
      [{"uri":"file:///tmp/a","name":"a"},{"uri":"file:///work"}]}} and "requestState" echoed ->
      {"content":[{"type":"text","text":"[\"file:///tmp/a\", \"file:///work\"]"}],"isError":false,
      "resultType":"complete",...}. A retry without requestState works too (this tool ignores it);
      a forged one -> {"code":-32602,"message":"Invalid or expired requestState",
      "data":{"reason":"invalid_request_state"}}. Client capabilities (this request's _meta)
      without roots -> no input request, {"content":[{"type":"text","text":"roots error: the
      client did not declare the roots capability"}],"isError":true}.

  Subscriptions:
    legacy (1.30, 2.3): resources/subscribe {uri} -> {} (recorded), resources/unsubscribe -> {}.
      tools/call touch {uri} -> {"method":"notifications/resources/updated","params":{"uri":
      "<uri>"},"jsonrpc":"2.0"} before the answer, for ANY uri (subscribed or not). add_resource ->
      {"method":"notifications/resources/list_changed","jsonrpc":"2.0"} (no params). Over HTTP
      both go to the session's standalone GET /mcp SSE stream (dropped if none is open), never on
      the tools/call POST stream. 2.3 also publishes them to its listen bus (below).
    2.3-modern: resources/subscribe and resources/unsubscribe -> -32601 "Method not found"
      (data = the method). subscriptions/listen {"_meta":{...},"notifications":
      {"resourceSubscriptions":["file:///notes/readme.txt"],"resourcesListChanged":true}} ->
      never answered while open; first
        {"jsonrpc":"2.0","method":"notifications/subscriptions/acknowledged","params":{"_meta":
         {"io.modelcontextprotocol/subscriptionId":29},"notifications":{"resourcesListChanged":
         true,"resourceSubscriptions":["file:///notes/readme.txt"]}}}
      (subscriptionId = the listen request's id, same JSON type: "L1" stays a string); then touch
      of a listed uri -> {"jsonrpc":"2.0","method":"notifications/resources/updated","params":
      {"_meta":{"io.modelcontextprotocol/subscriptionId":29},"uri":"file:///notes/readme.txt"}};
      touch of an unlisted uri -> nothing; add_resource -> {"jsonrpc":"2.0","method":
      "notifications/resources/list_changed","params":{"_meta":{"io.modelcontextprotocol/
      subscriptionId":29}}}. Every listen stream on the process that asked receives them (one
      bus). stdio: notifications/cancelled {"requestId":29} ends it silently (no answer).
      HTTP: the POST is answered 200 text/event-stream ("event: message" frames), ": ping"
      comment every 15 s, ends when the client disconnects.

  Era mismatches:
    2.3, enveloped request on a legacy connection -> {"code":-32600,"message":"this connection
      serves the handshake protocol era; requests carrying the 2026-07-28 envelope are not
      accepted on it"}
    2.3, initialize on a modern connection -> {"code":-32022,"message":"connection is serving the
      2026-07-28 protocol; the initialize handshake is not accepted","data":{"supported":
      ["2026-07-28"],"requested":"2025-11-25"}}
    2.3-modern, request without the envelope -> {"code":-32602,"message":"params._meta must be an
      object carrying the required 'io.modelcontextprotocol/protocolVersion' and
      'io.modelcontextprotocol/clientCapabilities' envelope keys"}; ping -> -32601.
    1.30, server/discover (before or after initialize) -> {"code":-32602,"message":"Invalid
      request parameters","data":""} (and a long validation dump on stderr).

HTTP specifics (streamable-http):
  legacy (1.30, 2.3): POST answers are 200 text/event-stream with `event: message` frames;
    notifications and client answers -> 202; Mcp-Session-Id from initialize; GET /mcp opens the
    standalone stream (updated / list_changed notifications land there).
  2.3-modern: POST with MCP-Protocol-Version: 2026-07-28 and Mcp-Method (== method) headers, plus
    Mcp-Name for tools/call (the tool name), resources/read (the uri) and prompts/get; a mismatch
    -> 400 {"code":-32020,"message":"mcp-method header does not match the request body's method"}
    (or "mcp-name header does not match the request body's 'name' parameter" / "'uri'"); no
    session id; answers application/json unless the handler sends a notification within 15 s
    (then SSE); -32601 -> HTTP 404; GET /mcp -> 405. No MCP-Protocol-Version header -> the legacy
    path: 400 {"code":-32600,"message":"Bad Request: Missing session ID"} (1.30 says the same to
    any server/discover POST, with "id":"server-error").
"""

from __future__ import annotations

import json
import sys
import warnings
from typing import Any

import anyio
import mcp.types as types
from mcp.server.lowlevel.server import NotificationOptions
from mcp.shared.message import ServerMessageMetadata

import mcp_test_kit as kit

try:  # mcp 2.x
    from mcp.server.mcpserver import Context, MCPServer as _Server
    from mcp.server.mcpserver.resources import TextResource
    from mcp.shared.exceptions import MCPDeprecationWarning
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    SDK_LINE = 2
    # roots/list, logging and send_log_message are deprecated as of 2026-07-28; the warnings
    # would only clutter stderr.
    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as _Server
    from mcp.server.fastmcp.resources import TextResource

    SDK_LINE = 1
    MODERN_PROTOCOL_VERSIONS = ()

warnings.filterwarnings("ignore", category=DeprecationWarning)

try:
    from importlib.metadata import version as _pkg_version

    SDK_VERSION = _pkg_version("mcp")
except Exception:  # pragma: no cover - metadata missing in odd installs
    SDK_VERSION = "unknown"

NAME = "kaged-py-resources"

if SDK_LINE == 2:
    # 2.x reports serverInfo.version "" unless told; 1.x reports its own version.
    server = _Server(NAME, version=SDK_VERSION, log_level="WARNING")
    _low = server._lowlevel_server  # noqa: SLF001 - the lowlevel Server; the SDK lines are pinned
else:
    server = _Server(NAME, log_level="WARNING")
    _low = server._mcp_server  # noqa: SLF001

# Text only: a tool returning str would otherwise also fill structuredContent {"result": ...}.
TEXT_ONLY = {"structured_output": False}

LEVELS = ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"]
PIXEL = b"\x89PNG\r\n\x1a\n" + bytes(range(8))
BIG = "0123456789" * 20_000
NAMES = ["alice", "albert", "bob"]
LANGUAGES = ["python", "rust", "go"]
FRAMEWORKS = {"python": ["django", "flask"], "rust": ["axum", "actix"], "go": ["gin"]}

# Process-wide state (stdio: one client; HTTP: shared by every session).
_state: dict[str, Any] = {"log_level": None, "subscribed": set()}


def _log(line: str) -> None:
    print(f"py_resources_server: {line}", file=sys.stderr, flush=True)


def _modern(ctx: Context) -> bool:
    """True when this request came in the 2026-07-28 era (2.x only: per-request _meta)."""
    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult.model_validate(
        {"content": [{"type": "text", "text": text}], "isError": True}
    )


# --- capabilities -------------------------------------------------------------------------------
# Legacy-era capabilities come from create_initialization_options() (stdio and every HTTP
# session call it without arguments). 1.x hard-codes resources.subscribe False even with a
# subscribe handler, and neither line sets listChanged without NotificationOptions, so wrap it.
# (2.x at 2026-07-28 derives capabilities itself, from `subscriptions/listen` being served.)
_plain_init_options = _low.create_initialization_options


def _init_options(notification_options: Any = None, *args: Any, **kwargs: Any):
    options = _plain_init_options(
        notification_options or NotificationOptions(resources_changed=True), *args, **kwargs
    )
    if options.capabilities.resources is not None:
        options.capabilities.resources.subscribe = True
    return options


_low.create_initialization_options = _init_options


# --- lowlevel handlers: logging/setLevel, resources/subscribe, resources/unsubscribe --------------

def _set_level(level: str) -> None:
    _state["log_level"] = str(level)
    _log(f"logging/setLevel {level}")


def _subscribe(uri: Any) -> None:
    _state["subscribed"].add(str(uri))
    _log(f"resources/subscribe {uri}")


def _unsubscribe(uri: Any) -> None:
    _state["subscribed"].discard(str(uri))
    _log(f"resources/unsubscribe {uri}")


if SDK_LINE == 2:

    async def _on_set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        _set_level(params.level)
        return types.EmptyResult()

    async def _on_subscribe(ctx: Any, params: types.SubscribeRequestParams) -> types.EmptyResult:
        _subscribe(params.uri)
        return types.EmptyResult()

    async def _on_unsubscribe(ctx: Any, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
        _unsubscribe(params.uri)
        return types.EmptyResult()

    _low.add_request_handler("logging/setLevel", types.SetLevelRequestParams, _on_set_level)
    _low.add_request_handler("resources/subscribe", types.SubscribeRequestParams, _on_subscribe)
    _low.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, _on_unsubscribe)
else:

    @_low.set_logging_level()
    async def _on_set_level(level: types.LoggingLevel) -> None:
        _set_level(level)

    @_low.subscribe_resource()
    async def _on_subscribe(uri: Any) -> None:
        _subscribe(uri)

    @_low.unsubscribe_resource()
    async def _on_unsubscribe(uri: Any) -> None:
        _unsubscribe(uri)


# --- resources ----------------------------------------------------------------------------------

@server.resource("file:///notes/readme.txt", name="readme", mime_type="text/plain")
def readme() -> str:
    """A short text note."""
    return f"hello from mcp {SDK_LINE}"


@server.resource("data://pixel.png", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    """16 bytes: the PNG signature, then 0..7 (a blob)."""
    return PIXEL


@server.resource("data://big.txt", name="big", mime_type="text/plain")
def big() -> str:
    """200 000 bytes of text ('0123456789' repeated)."""
    return BIG


@server.resource("greeting://{name}", name="greeting", mime_type="text/plain")
def greeting(name: str) -> str:
    """A greeting for a name."""
    return f"Hello, {name}!"


# --- prompts ------------------------------------------------------------------------------------

@server.prompt()
def summarize(topic: str, style: str | None = None) -> str:
    """Summarize a topic, in a style."""
    return f"Summarize {topic} in a {style or 'plain'} style"


@server.prompt()
def pair(language: str, framework: str) -> str:
    """Pair a language with a framework."""
    return f"Pair {language} with {framework}"


# --- completion ---------------------------------------------------------------------------------

@server.completion()
async def complete(ref: Any, argument: Any, context: Any) -> types.Completion:
    kind = getattr(ref, "type", None)
    pool: list[str] = []
    if kind == "ref/resource" and str(ref.uri) == "greeting://{name}" and argument.name == "name":
        pool = NAMES
    elif kind == "ref/prompt" and ref.name == "pair":
        if argument.name == "language":
            pool = LANGUAGES
        elif argument.name == "framework":
            known = (getattr(context, "arguments", None) or {}) if context is not None else {}
            pool = FRAMEWORKS.get(known.get("language", ""), [])
    prefix = argument.value or ""
    values = [v for v in pool if v.startswith(prefix)]
    return types.Completion.model_validate({"values": values, "total": len(values), "hasMore": False})


# --- tools --------------------------------------------------------------------------------------

@server.tool(**TEXT_ONLY)
def log_level() -> str:
    """The level last set by logging/setLevel, or 'unset'."""
    return _state["log_level"] or "unset"


@server.tool(**TEXT_ONLY)
async def log(ctx: Context, level: str, message: str):
    """Send a notifications/message at a level (if the client asked for that level)."""
    if level not in LEVELS:
        return _error(f"unknown level {level!r}")
    if _modern(ctx):
        from mcp.server.connection import allowed_log_levels

        if level not in allowed_log_levels(ctx.protocol_version, ctx.request_context.meta):
            return f"dropped {level} (the request's _meta did not opt in at that level)"
    else:
        floor = _state["log_level"]
        if floor is not None and LEVELS.index(level) < LEVELS.index(floor):
            return f"dropped {level} (below {floor})"
    await ctx.session.send_log_message(
        level=level, data=message, logger=NAME, related_request_id=ctx.request_id
    )
    return f"logged {level}"


@server.tool(**TEXT_ONLY)
async def roots(ctx: Context):
    """Ask the client for its roots; a JSON array of their URIs."""
    if _modern(ctx):
        caps = ctx.client_capabilities
        if caps is None or caps.roots is None:
            return _error("roots error: the client did not declare the roots capability")
        answer = (ctx.input_responses or {}).get("roots")
        if answer is None:
            return types.InputRequiredResult(
                input_requests={"roots": types.ListRootsRequest()}, request_state="roots"
            )
        listed = getattr(answer, "roots", None)
        if listed is None:
            return _error(f"roots error: not a roots/list result: {answer!r}")
        return json.dumps([str(r.uri) for r in listed])
    request = types.ListRootsRequest() if SDK_LINE == 2 else types.ServerRequest(types.ListRootsRequest())
    try:
        # related_request_id: on streamable HTTP the request rides this tools/call's SSE answer
        # (ctx.session.list_roots() would use the standalone GET stream).
        result = await ctx.session.send_request(
            request,
            types.ListRootsResult,
            metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
        )
    except Exception as exc:  # the client's JSON-RPC error arrives as an exception
        return _error(f"roots error: {exc}")
    return json.dumps([str(r.uri) for r in result.roots])


@server.tool(**TEXT_ONLY)
async def touch(ctx: Context, uri: str) -> str:
    """Send notifications/resources/updated for uri."""
    if SDK_LINE == 2:
        await ctx.notify_resource_updated(uri)  # every open subscriptions/listen stream that asked
    if not _modern(ctx):
        await ctx.session.send_resource_updated(uri)
    return f"touched {uri}"


@server.tool(**TEXT_ONLY)
async def add_resource(ctx: Context, uri: str, text: str = "added") -> str:
    """Add a static text resource and send notifications/resources/list_changed."""
    server.add_resource(TextResource(uri=uri, name=uri, text=text, mime_type="text/plain"))
    if SDK_LINE == 2:
        await ctx.notify_resources_changed()
    if not _modern(ctx):
        await ctx.session.send_resource_list_changed()
    return f"added {uri}"


@server.tool(**TEXT_ONLY)
def subscribed() -> str:
    """The URIs subscribed with resources/subscribe (and not unsubscribed), a sorted JSON array."""
    return json.dumps(sorted(_state["subscribed"]))


# --- transports ---------------------------------------------------------------------------------

def _run_streamable_http(port: int) -> None:
    import uvicorn

    if SDK_LINE == 2:
        app = server.streamable_http_app(streamable_http_path="/mcp", host="127.0.0.1")
    else:
        server.settings.streamable_http_path = "/mcp"
        app = server.streamable_http_app()
    sock, bound = kit.announced_socket(port)
    _log(f"listening on 127.0.0.1:{bound} (POST/GET/DELETE /mcp)")
    # An open subscriptions/listen stream never ends on its own: without a bound, SIGTERM would
    # wait for it forever (uvicorn's graceful shutdown waits for every connection).
    config = uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1)
    anyio.run(lambda: uvicorn.Server(config).serve(sockets=[sock]))


def main() -> None:
    args = kit.sdk_arguments(__doc__)
    http = args.transport == "streamable-http"
    _log(
        f"mcp {SDK_VERSION} (line {SDK_LINE}) starting, transport={args.transport}"
        + (f" port={args.port}" if http else "")
    )
    if http:
        _run_streamable_http(args.port)
    else:
        server.run()


if __name__ == "__main__":
    main()
