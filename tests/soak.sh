#!/usr/bin/env bash
# A soak run of skald-mcp, bounded in time; not part of CI.
#
#   tests/soak.sh                                  # 50 servers × 8 callers, 20000 calls
#   SOAK_SERVERS=10 SOAK_CALLS=2000 tests/soak.sh  # smaller
#
# Builds and runs examples/soak.rs (see its doc comment for what it
# injects and reports). Exits non-zero when a thread, a process or an
# acknowledged event leaked, or a fault was not survived.
set -eu
cd "$(dirname "$0")/.."
servers=${SOAK_SERVERS:-50}
threads=${SOAK_THREADS:-8}
calls=${SOAK_CALLS:-20000}
secs=${SOAK_MAX_SECS:-600}
profile=${SOAK_PROFILE:-dev}
cargo build --profile "$profile" --example soak
dir=debug
[ "$profile" = dev ] || dir=$profile
# The example stops its callers at --max-secs; `timeout` is the last resort.
exec timeout --kill-after=30 $((secs + 120)) "target/$dir/examples/soak" \
    --servers "$servers" --threads "$threads" --calls "$calls" --max-secs "$secs"
