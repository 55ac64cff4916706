#!/usr/bin/env python3
"""An MCP server that exits during start-up because an environment variable
is missing, the way many published servers do: it prints why on stderr and
exits 1 before answering `initialize`.

If BRAVE_API_KEY is set it prints a line quoting the value (a server that
leaks its secret) and still exits 1, so tests can check the value is
redacted from errors.

Usage: python3 scripts/missing_env_mcp_server.py
"""
import os
import sys

key = os.environ.get("BRAVE_API_KEY")
if key:
    sys.stderr.write(f"rejected key {key}\n")
sys.stderr.write("Error: BRAVE_API_KEY environment variable is required\n")
sys.stderr.flush()
sys.exit(1)
