#!/usr/bin/env python3
"""Official-SDK (mcp 2.x) stdio server exposing resources, a resource template,
prompts and completion, for the client's interop tests.

Usage: python3 tests/servers/fastmcp_resources_server.py

Resources:  memo://readme (text/plain, "hello resources"),
            memo://blob (application/octet-stream, bytes 0..7)
Template:   greeting://{name} -> "hello <name>"
Prompts:    review(code, style="terse") -> one user message "Review (<style>): <code>"
Tools:      ask_llm(question) -> sampling/createMessage with the question as one user message
            (maxTokens 50, systemPrompt "be brief"); returns "<model>: <answer text>"
            list_client_roots() -> roots/list; returns the URIs joined with ","
            touch_resource(uri) -> notifications/resources/updated for uri on the
            subscriptions/listen streams subscribed to it; returns "touched"
            add_dynamic_tool() -> registers tool `dynamic` (returns "dynamic") and sends
            notifications/tools/list_changed (legacy session and modern listen
            streams); returns "added"
Completion: prompt `review`, argument `style`: the values of
            ["terse", "verbose", "friendly"] that start with the typed prefix;
            template greeting://{name}, variable `name`: ["ada", "alan"] filtered likewise.
"""

import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import Completion, PromptReference, ResourceTemplateReference, SamplingMessage, TextContent

warnings.simplefilter("ignore")

mcp = MCPServer("resources-test")


@mcp.resource("memo://readme", name="readme", mime_type="text/plain")
def readme() -> str:
    return "hello resources"


@mcp.resource("memo://blob", name="blob", mime_type="application/octet-stream")
def blob() -> bytes:
    return bytes(range(8))


@mcp.resource("greeting://{name}", name="greeting")
def greeting(name: str) -> str:
    return f"hello {name}"


@mcp.prompt()
def review(code: str, style: str = "terse") -> str:
    return f"Review ({style}): {code}"


@mcp.completion()
async def complete(ref, argument, context):
    if isinstance(ref, PromptReference) and argument.name == "style":
        pool = ["terse", "verbose", "friendly"]
    elif isinstance(ref, ResourceTemplateReference) and argument.name == "name":
        pool = ["ada", "alan"]
    else:
        return None
    return Completion(values=[v for v in pool if v.startswith(argument.value)], total=None, has_more=False)


@mcp.tool(structured_output=False)
async def ask_llm(question: str, ctx: Context) -> str:
    r = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=question))],
        max_tokens=50,
        system_prompt="be brief",
    )
    return f"{r.model}: {r.content.text}"


@mcp.tool(structured_output=False)
async def list_client_roots(ctx: Context) -> str:
    r = await ctx.session.list_roots()
    return ",".join(str(root.uri) for root in r.roots)


def dynamic() -> str:
    return "dynamic"


@mcp.tool(structured_output=False)
async def touch_resource(uri: str, ctx: Context) -> str:
    """Announce that `uri` changed: notifications/resources/updated to the
    subscriptions/listen streams that subscribed to it (2026-07-28)."""
    await ctx.notify_resource_updated(uri)
    return "touched"


@mcp.tool(structured_output=False)
async def add_dynamic_tool(ctx: Context) -> str:
    mcp.add_tool(dynamic, name="dynamic", structured_output=False)
    # Legacy clients hear it on the session, modern ones on their
    # subscriptions/listen streams (the SDK drops the other copy).
    await ctx.session.send_tool_list_changed()
    await ctx.notify_tools_changed()
    return "added"


if __name__ == "__main__":
    mcp.run("stdio")
