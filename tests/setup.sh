#!/usr/bin/env bash
# Installs what the test suite needs beyond Rust and python3: the official
# MCP Python SDK (FastMCP servers used by the interop tests) and the official
# reference servers @modelcontextprotocol/server-everything and
# server-filesystem (node/npm), pinned
# in tests/everything/package.json and package-lock.json.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m pip install --quiet --disable-pip-version-check --root-user-action=ignore -r tests/requirements.txt
python3 -c "import mcp" # fail here, clearly, if the install did not work

# The reference server: `npm ci` from the committed lockfile, skipped when
# node_modules already holds exactly what the lockfile pins.
every=tests/everything
installed="$every/node_modules/.package-lock.json"
if [ ! -f "$installed" ] || [ "$every/package-lock.json" -nt "$installed" ] ||
   [ ! -f "$every/node_modules/@modelcontextprotocol/server-everything/dist/index.js" ] ||
   [ ! -f "$every/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js" ]; then
  npm ci --prefix "$every" --no-audit --no-fund --loglevel=error >/dev/null
fi
# fail here, clearly, if the install did not work
for pkg in server-everything server-filesystem; do
  node -e 'const p = require(process.argv[1]); if (!p.version) process.exit(1)' \
    "$PWD/$every/node_modules/@modelcontextprotocol/$pkg/package.json"
done
