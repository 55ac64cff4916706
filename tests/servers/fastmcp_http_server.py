#!/usr/bin/env python3
r"""A Streamable HTTP MCP server on the official Python SDK (`pip install mcp`), for the HTTP
transport tests of skald-mcp. Written for mcp 2.3.0 (`mcp.server.mcpserver.MCPServer`, the 2.x name
of FastMCP), with a fallback to the 1.x `mcp.server.fastmcp.FastMCP`.

Usage:
  python3 tests/servers/fastmcp_http_server.py [--port N] [--path /mcp] [--json-response]
                                               [--stateless] [--event-store] [--retry-ms N]
                                               [--era dual|modern|legacy] [--sse]

  --port N          port on 127.0.0.1 (default 0: a free port is picked)
  --json-response   answer POSTs with one application/json body instead of an SSE stream
  --stateless       no Mcp-Session-Id, every request independent
  --event-store     keep every SSE event in memory so streams can be resumed with Last-Event-ID
                    (the SDK then sends a priming event with an id first)
  --retry-ms N      with --event-store: the SSE `retry` the priming event carries
  --sse             serve the deprecated HTTP+SSE transport (2024-11-05) instead: GET /sse, POST
                    /messages/ (the SDK's `sse_app`); /mcp is then not served
  --era E           dual (the SDK's default: initialize selects 2025-11-25, per-request _meta
                    2026-07-28), modern (initialize refused with -32022 naming the supported
                    versions) or legacy (modern requests refused with -32601, as a pre-2026
                    server would); mcp 2.x only

Once it accepts connections it prints exactly one line `READY <port>` to stdout.

Tools (all return text):
  echo(text)            the text
  progress(steps)       reports progress 1..steps ("step i") on the request's stream
  log(message)          sends it as an info and a warning log notification on the request's stream
  elicit_name()         asks for {name} with elicitation: "hello <name>" | "declined" | "cancelled"
  resolve_name()        (mcp 2.x) the SDK's resolvers (`Resolve(...)`): a name (Elicit) and the
                        client's roots (ListRoots), asked with an InputRequiredResult in the
                        2026-07-28 era (requestState sealed by the SDK) and with server-to-client
                        requests in the legacy one: "hello <name>; roots <uri,...>"
  slow(seconds)         sleeps, then "done after <seconds>s"
  add_tool(name)        registers an echo tool called `name` and sends
                        notifications/tools/list_changed (on subscriptions/listen streams in the
                        modern era, on the session in the legacy one); returns "added <name>"
  headers()             JSON of the request headers the server received (session id,
                        protocol version, authorization, accept, content-type)
  standalone(nonce)     on the GET stream: pings the client until it answers (so the stream is
                        known to be open), then sends an info log "standalone <nonce>" and
                        notifications/resources/updated {"uri": "test://<nonce>"};
                        returns "pinged after <n> attempts"
  drop_stream(steps)    reports progress once, closes the request's SSE connection (the client
                        must resume with GET + Last-Event-ID), reports progress 2..steps, returns
                        "survived the drop" (needs --event-store)
  resumes()             JSON list of the Last-Event-ID values the event store was asked to
                        replay after
"""

import argparse
import asyncio
import json
import socket
import sys
import warnings
from typing import Annotated

from pydantic import BaseModel, Field

try:  # mcp >= 2.0
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver import MCPServer as _Server
    SDK_MAJOR = 2
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as _Server  # type: ignore
    SDK_MAJOR = 1

import mcp.types as types
from mcp.server.streamable_http import EventMessage, EventStore

warnings.filterwarnings("ignore", category=DeprecationWarning)
try:
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:
    pass


class MemoryEventStore(EventStore):
    """Every event of every stream, in memory; records each replay request."""

    def __init__(self):
        self.events = []  # (event_id, stream_id, message or None)
        self.replays = []

    async def store_event(self, stream_id, message):
        event_id = f"ev-{len(self.events) + 1}"
        self.events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id, send_callback):
        self.replays.append(last_event_id)
        index = next((i for i, e in enumerate(self.events) if e[0] == last_event_id), None)
        if index is None:
            return None
        stream_id = self.events[index][1]
        for event_id, sid, message in self.events[index + 1:]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


STORE = MemoryEventStore()


class NameForm(BaseModel):
    name: str = Field(description="Your name")


def era_gate(era):
    """Middleware that makes the dual-era SDK server single-era."""
    from mcp.shared.exceptions import MCPError
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    async def gate(ctx, call_next):
        if era == "modern" and ctx.method == "initialize":
            raise MCPError(code=-32022, message="Unsupported protocol version",
                           data={"supported": list(MODERN_PROTOCOL_VERSIONS),
                                 "requested": (ctx.params or {}).get("protocolVersion")})
        if era == "legacy" and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            raise MCPError(code=-32601, message="Method not found", data=ctx.method)
        return await call_next(ctx)

    return gate


def build_server(era="dual"):
    kwargs = {"version": "1.0.0"} if SDK_MAJOR >= 2 else {}
    if SDK_MAJOR >= 2 and era != "dual":
        kwargs["middleware"] = [era_gate(era)]
    mcp = _Server("fastmcp-http-test", log_level="WARNING", **kwargs)

    @mcp.tool(description="Echo the given text back.", structured_output=False)
    def echo(text: str) -> str:
        return text

    @mcp.tool(description="Report progress `steps` times.", structured_output=False)
    async def progress(steps: int, ctx: Context) -> str:
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
            await asyncio.sleep(0.01)
        return f"progressed {steps}"

    @mcp.tool(description="Send the message as info and warning log notifications.",
              structured_output=False)
    async def log(message: str, ctx: Context) -> str:
        await ctx.info(message)
        await ctx.warning(message)
        return "logged"

    @mcp.tool(description="Ask the user for their name.", structured_output=False)
    async def elicit_name(ctx: Context) -> str:
        result = await ctx.elicit("What is your name?", NameForm)
        if result.action == "accept":
            return f"hello {result.data.name}"
        if result.action == "decline":
            return "declined"
        return "cancelled"

    if SDK_MAJOR >= 2:
        from typing import Annotated

        from mcp.server.mcpserver import Elicit, Resolve
        from mcp.server.mcpserver.resolve import ListRoots

        def ask_name() -> Elicit[NameForm]:
            return Elicit("What is your name?", NameForm)

        def ask_roots() -> ListRoots:
            return ListRoots()

        @mcp.tool(description="Ask for a name and the roots through the SDK's resolvers.",
                  structured_output=False)
        async def resolve_name(name: Annotated[NameForm, Resolve(ask_name)],
                               roots: Annotated[types.ListRootsResult, Resolve(ask_roots)]) -> str:
            return f"hello {name.name}; roots " + ",".join(str(r.uri) for r in roots.roots)

        mismatches = {}

        @mcp.tool(description="Answer a header mismatch (-32020) to the first `times` calls "
                              "for `key`.", structured_output=False)
        def mismatch(key: str, times: int) -> str:
            from mcp.shared.exceptions import MCPError
            n = mismatches.get(key, 0) + 1
            mismatches[key] = n
            if n <= times:
                raise MCPError(code=-32020, message=f"Header mismatch: attempt {n}")
            return f"attempt {n}"

    @mcp.tool(description="Register tool `name` (an echo) and announce the change.",
              structured_output=False)
    async def add_tool(name: str, ctx: Context) -> str:
        mcp.add_tool(echo, name=name, structured_output=False)
        if SDK_MAJOR >= 2:
            # To the subscriptions/listen streams (2026-07-28) and to a
            # legacy session alike.
            await ctx.notify_tools_changed()
        await ctx.session.send_tool_list_changed()
        return f"added {name}"

    @mcp.tool(description="Sleep for `seconds`.", structured_output=False)
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"done after {seconds}s"

    @mcp.tool(description="The request headers the server received.", structured_output=False)
    def headers(ctx: Context) -> str:
        h = ctx.headers or {}
        names = ["mcp-session-id", "mcp-protocol-version", "authorization", "accept", "content-type",
                 "mcp-method", "mcp-name"]
        return json.dumps({n: h.get(n) for n in names})

    @mcp.tool(description="The Mcp-Param header of a parameter that declares x-mcp-header.",
              structured_output=False)
    def param_header(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})],
                     ctx: Context) -> str:
        h = ctx.headers or {}
        return json.dumps({"region": region, "mcp-param-region": h.get("mcp-param-region")})

    @mcp.tool(description="Talk to the client on the GET stream.", structured_output=False)
    async def standalone(nonce: str, ctx: Context) -> str:
        try:
            session = ctx.session
            errors = []
            for attempt in range(1, 51):
                try:
                    # No related request: the standalone (GET) stream. The SDK
                    # drops it until the client's GET stream is registered.
                    await session.send_request(types.PingRequest(), types.EmptyResult,
                                               request_read_timeout_seconds=0.2)
                    break
                except Exception as e:  # a timeout: try again
                    errors.append(repr(e))
            else:
                return f"the GET stream never answered: {errors[-3:]}"
            await session.send_log_message("info", f"standalone {nonce}")
            await session.send_resource_updated(f"test://{nonce}")
            return f"pinged after {attempt} attempts"
        except Exception as e:
            return f"standalone failed: {e!r}"

    @mcp.tool(description="Drop the request's stream mid-call.", structured_output=False)
    async def drop_stream(steps: int, ctx: Context) -> str:
        await ctx.report_progress(1, steps, "before the drop")
        await ctx.close_sse_stream()
        await asyncio.sleep(0.05)
        for i in range(2, steps + 1):
            await ctx.report_progress(i, steps, f"after the drop {i}")
        return "survived the drop"

    @mcp.tool(description="Last-Event-ID values the event store replayed after.",
              structured_output=False)
    def resumes() -> str:
        return json.dumps(STORE.replays)

    return mcp


async def serve(args) -> None:
    import uvicorn

    mcp = build_server(args.era)
    kwargs = dict(streamable_http_path=args.path, json_response=args.json_response,
                  stateless_http=args.stateless)
    if args.event_store:
        kwargs["event_store"] = STORE
        if args.retry_ms is not None:
            kwargs["retry_interval"] = args.retry_ms
    if args.sse:
        app = mcp.sse_app(host="127.0.0.1") if SDK_MAJOR >= 2 else mcp.sse_app()
    elif SDK_MAJOR >= 2:
        app = mcp.streamable_http_app(host="127.0.0.1", **kwargs)
    else:  # pragma: no cover - mcp 1.x
        for k, v in kwargs.items():
            setattr(mcp.settings, k, v)
        app = mcp.streamable_http_app()

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    port = sock.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))

    async def announce():
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        print(f"READY {port}", flush=True)

    watcher = asyncio.ensure_future(announce())
    try:
        await server.serve(sockets=[sock])
    finally:
        watcher.cancel()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--path", default="/mcp")
    ap.add_argument("--json-response", action="store_true")
    ap.add_argument("--stateless", action="store_true")
    ap.add_argument("--event-store", action="store_true")
    ap.add_argument("--retry-ms", type=int)
    ap.add_argument("--era", choices=["dual", "modern", "legacy"], default="dual")
    ap.add_argument("--sse", action="store_true")
    args = ap.parse_args()
    try:
        asyncio.run(serve(args))
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    sys.exit(main())
