#!/usr/bin/env bash
# Installs what the test suite needs beyond Rust and python3: the official
# MCP Python SDK (FastMCP servers used by the interop tests).
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r tests/requirements.txt
python3 -c "import mcp" # fail here, clearly, if the install did not work
