#!/usr/bin/env bash
# Instructions the client spends per sequential 128 B `tools/call` (or per
# stdio server started and closed, `start`), counted
# by callgrind: deterministic to about 0.1 %, where wall-clock A/B runs on
# a shared 2-core VM move by tens of percent. The count is that of the
# client process (all its threads, user space only; the echo server is
# not traced), with the caller's spin off (BENCH_SPIN_US=0) so that it is
# work, not polling: the difference between a full and a --quick run of
# bench_client, divided by the calls between them.
#
#   benches/instructions.sh [BENCH_CLIENT] [http|stdio|start] [legacy|modern]
#
# `start`: one server started (spawn, handshake, `tools/list`) and closed,
# one after the other (the `cold` scenario, 30 starts against 10). Its era
# is remembered after the first, as a host's restart of a server would
# find it, so these starts make no `server/discover` probe.
#
# Needs valgrind. BENCH_CLIENT defaults to this checkout's release build
# (cargo build --release --example bench_client; the echo server is built
# by compare.sh, or: cargo build --release --manifest-path
# benches/echo-server/Cargo.toml).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../target/release/examples/bench_client}
what=${2:-http}
era=${3:-legacy}
server=$here/echo-server/target/release/echo-server
case $what in
  # `timed` makes n + n/10 + 5 calls: 3000 and 500 (http), 5000 and 1000 (stdio).
  http) args=(--only http); calls=2750 ;;
  stdio) args=(--only seq --sizes 128); calls=4400 ;;
  # `cold` makes 30 starts, and 10 with --quick.
  start) args=(--only cold); calls=20 ;;
  *) echo "usage: $0 [BENCH_CLIENT] [http|stdio|start] [legacy|modern]" >&2; exit 2 ;;
esac
count() {
  BENCH_SPIN_US=0 valgrind --tool=callgrind --callgrind-out-file=/dev/null \
    "$bin" --server "$server" --era "$era" "${args[@]}" --no-floor "$@" 2>&1 |
    awk '/Collected/ { gsub(",", "", $4); print $4 }'
}
full=$(count)
quick=$(count --quick)
per=call
[ "$what" = start ] && per=start
echo "$what $era: $(( (full - quick) / calls )) instructions per $per"
