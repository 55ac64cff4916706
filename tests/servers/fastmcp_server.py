#!/usr/bin/env python3
r"""MCP test server built on the official Python SDK (`pip install mcp`, written for mcp 2.3.0).

In mcp 2.x, FastMCP was renamed: `from mcp.server.mcpserver import MCPServer, Context, Image`
(`mcp.server.fastmcp` raises ModuleNotFoundError). This file falls back to the 1.x import path
(`mcp.server.fastmcp.FastMCP`) when run against an older SDK.

Usage:
  python3 tests/servers/fastmcp_server.py [--transport stdio|streamable-http]
                                          [--host 127.0.0.1] [--port N] [--path /mcp]
                                          [--json-response] [--stateless]

  --transport       stdio (default) or streamable-http
  --port N          HTTP port (default 0 = pick a free port). Bound on 127.0.0.1.
  --path P          streamable-HTTP endpoint path (default /mcp)
  --json-response   answer POSTs with a single application/json body instead of an SSE stream
  --stateless       stateless streamable HTTP (no Mcp-Session-Id; each request independent)

For streamable-http, once the server is accepting connections it prints exactly one line
"READY <port>" to stdout (it is the only thing ever written to stdout in that mode) and the same
line to stderr (SDK logging is set to WARNING there, but scan for ^READY (\d+)$ rather than
assuming it is the first stderr line). The endpoint is http://127.0.0.1:<port><path>.

Tools:
  echo(text: str) -> str                 text <text>
  add(a: int, b: int) -> AddResult       structuredContent {"sum": a+b}, outputSchema with `sum`
  count_words(text: str) -> int          structuredContent {"result": n} (the SDK's wrapper of a
                                         primitive output), text "n"
  image() -> Image                       one image content block, 1x1 red PNG (image/png)
  progress(steps: int) -> str            ctx.report_progress(i, steps, "step i") for i in 1..steps,
                                         returns "progressed <steps>"
  log(message: str) -> str               ctx.info(message) then ctx.warning(message),
                                         returns "logged"
  elicit_name() -> str                   ctx.elicit("What is your name?", NameForm{name: str});
                                         "hello <name>" | "declined" | "cancelled"
  fail() -> str                          raises ToolError("something went wrong") -> isError result
                                         with text "something went wrong"
  slow(seconds: float) -> str            asyncio.sleep(seconds), returns "done after <seconds>s"
                                         (seconds formatted as a Python float, e.g. "done after 0.2s")

Only `add` has structured output (outputSchema + structuredContent {"sum": n}, text mirror is the
SDK's pretty-printed JSON '{\n  "sum": n\n}'). All str-returning tools use structured_output=False
(text content only, no outputSchema). Unknown tool names come back from the SDK as an isError
result with text "Unknown tool: <name>", not as a JSON-RPC error.
"""

import argparse
import asyncio
import socket
import struct
import sys
import warnings
import zlib

from pydantic import BaseModel, Field

try:  # mcp >= 2.0
    from mcp.server.mcpserver import Context, Image
    from mcp.server.mcpserver import MCPServer as _Server
    from mcp.server.mcpserver.exceptions import ToolError
    SDK_MAJOR = 2
except ImportError:  # mcp 1.x
    from mcp.server.fastmcp import Context, FastMCP as _Server, Image  # type: ignore
    from mcp.server.fastmcp.exceptions import ToolError  # type: ignore
    SDK_MAJOR = 1

# ctx.info/ctx.warning (the logging capability) are deprecated in mcp 2.x for 2026-07-28
# but still work on handshake-era protocol versions; keep stderr clean.
warnings.filterwarnings("ignore", category=DeprecationWarning)
try:
    from mcp.shared.exceptions import MCPDeprecationWarning

    warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
except ImportError:
    pass


def _png_1x1_red() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr)
            + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00")) + chunk(b"IEND", b""))


PNG = _png_1x1_red()


class AddResult(BaseModel):
    sum: int


class NameForm(BaseModel):
    name: str = Field(description="Your name")


def build_server(log_level: str = "INFO"):
    kwargs = {"version": "1.0.0"} if SDK_MAJOR >= 2 else {}
    mcp = _Server("fastmcp-test", log_level=log_level, **kwargs)

    @mcp.tool(description="Echo the given text back.", structured_output=False)
    def echo(text: str) -> str:
        return text

    @mcp.tool(description="Add two integers.")
    def add(a: int, b: int) -> AddResult:
        return AddResult(sum=a + b)

    @mcp.tool(description="Count the words of `text` (a plain int: the SDK wraps it as {\"result\": n}).")
    def count_words(text: str) -> int:
        return len(text.split())

    @mcp.tool(description="Return a 1x1 red PNG.")
    def image() -> Image:
        return Image(data=PNG, format="png")

    @mcp.tool(description="Report progress `steps` times.", structured_output=False)
    async def progress(steps: int, ctx: Context) -> str:
        for i in range(1, steps + 1):
            await ctx.report_progress(i, steps, f"step {i}")
            await asyncio.sleep(0.01)
        return f"progressed {steps}"

    @mcp.tool(description="Send the message as info and warning log notifications.", structured_output=False)
    async def log(message: str, ctx: Context) -> str:
        await ctx.info(message)
        await ctx.warning(message)
        return "logged"

    @mcp.tool(description="Ask the user for their name via elicitation.", structured_output=False)
    async def elicit_name(ctx: Context) -> str:
        result = await ctx.elicit("What is your name?", NameForm)
        if result.action == "accept":
            return f"hello {result.data.name}"
        if result.action == "decline":
            return "declined"
        return "cancelled"

    @mcp.tool(description="Always fails.", structured_output=False)
    def fail() -> str:
        raise ToolError("something went wrong")

    @mcp.tool(description="Sleep for `seconds` (cancellable via notifications/cancelled).",
              structured_output=False)
    async def slow(seconds: float) -> str:
        await asyncio.sleep(seconds)
        return f"done after {seconds}s"

    return mcp


def announce(port: int) -> None:
    line = f"READY {port}"
    print(line, file=sys.stderr, flush=True)
    print(line, flush=True)


async def serve_http(mcp, host: str, port: int, path: str, json_response: bool, stateless: bool) -> None:
    import uvicorn

    app = mcp.streamable_http_app(
        streamable_http_path=path, json_response=json_response, stateless_http=stateless, host=host
    ) if SDK_MAJOR >= 2 else _v1_app(mcp, path, json_response, stateless)

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    sock.set_inheritable(True)
    actual_port = sock.getsockname()[1]

    config = uvicorn.Config(app, host=host, port=actual_port, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)

    async def wait_started():
        while not server.started:
            if server.should_exit:
                return
            await asyncio.sleep(0.01)
        announce(actual_port)

    watcher = asyncio.ensure_future(wait_started())
    try:
        await server.serve(sockets=[sock])
    finally:
        watcher.cancel()


def _v1_app(mcp, path, json_response, stateless):  # pragma: no cover - mcp 1.x fallback
    mcp.settings.streamable_http_path = path
    mcp.settings.json_response = json_response
    mcp.settings.stateless_http = stateless
    return mcp.streamable_http_app()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--transport", choices=["stdio", "streamable-http"], default="stdio")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=0)
    ap.add_argument("--path", default="/mcp")
    ap.add_argument("--json-response", action="store_true")
    ap.add_argument("--stateless", action="store_true")
    args = ap.parse_args()

    # SDK INFO logs (e.g. "StreamableHTTP session manager started") would precede READY on stderr.
    mcp = build_server("INFO" if args.transport == "stdio" else "WARNING")
    if args.transport == "stdio":
        mcp.run("stdio")
    else:
        try:
            asyncio.run(serve_http(mcp, args.host, args.port, args.path, args.json_response, args.stateless))
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    main()
