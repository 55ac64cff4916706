#!/usr/bin/env python3
"""Official-SDK (mcp 2.x) stdio server exposing resources, a resource template,
prompts and completion, for the client's interop tests.

Usage: python3 tests/servers/fastmcp_resources_server.py

Resources:  memo://readme (text/plain, "hello resources"),
            memo://blob (application/octet-stream, bytes 0..7)
Template:   greeting://{name} -> "hello <name>"
Prompts:    review(code, style="terse") -> one user message "Review (<style>): <code>"
Completion: prompt `review`, argument `style`: the values of
            ["terse", "verbose", "friendly"] that start with the typed prefix;
            template greeting://{name}, variable `name`: ["ada", "alan"] filtered likewise.
"""

import warnings

from mcp.server.mcpserver import MCPServer
from mcp_types import Completion, PromptReference, ResourceTemplateReference

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


if __name__ == "__main__":
    mcp.run("stdio")
