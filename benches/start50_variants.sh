#!/usr/bin/env bash
# The 50-parallel-starts floor in its variants (see
# examples/bench_client/spawn_helper.rs), beside skald-mcp and rmcp native,
# each run in a fresh process, ROUNDS rounds in a rotating order; prints
# each one's median and quartiles, and the medians of the ratios between
# runs of the same round (drift of the machine cancels out of those).
#
#   bash benches/start50_variants.sh            # 30 rounds
#   ROUNDS=10 bash benches/start50_variants.sh
#
# BASE=path/to/another/bench_client adds a column `base` (that build of
# skald-mcp) and the ratio ours / base: an A/B of a library change.
# OURS_ENV="VAR=value ..." sets variables for the `ours` runs only (with
# BASE=target/release/examples/bench_client: an A/B of a setting).
# VARIANTS="plain thread ..." picks the floor variants (default plain,
# thread, helper, helper-thread; also handoff, probe and owned).
# ERA=modern runs every column in the 2026-07-28 era (default legacy).
#
# Needs the release builds compare.sh makes (bench_client, echo-server and,
# for the rmcp column, benches/peers' rmcp-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
rounds=${ROUNDS:-30}
era=${ERA:-legacy}
server=$PWD/benches/echo-server/target/release/echo-server
client=target/release/examples/bench_client
rmcp=benches/peers/target/release/rmcp-bench
out=$(mktemp)
trap 'rm -f "$out"' EXIT
read -r -a names <<<"${VARIANTS:-plain thread helper helper-thread}"
names+=(ours)
[ -n "${BASE:-}" ] && names+=(base)
[ -x "$rmcp" ] && names+=(rmcp)
run() {
    case $1 in
        ours) env ${OURS_ENV:-} "$client" --server "$server" --era "$era" --only start50 --no-floor | awk '/^@ours(-modern)? start50_ms/ {print $3}' ;;
        base) "$BASE" --server "$server" --era "$era" --only start50 --no-floor | awk '/^@ours(-modern)? start50_ms/ {print $3}' ;;
        rmcp) "$rmcp" --server "$server" --mode native --era "$era" --only start50 | awk '/^@rmcp(-modern)? start50_ms/ {print $3}' ;;
        *) "$client" --server "$server" --era "$era" --start50-floor "$1" | awk '{print $3}' ;;
    esac
}
for ((i = 0; i < rounds; i++)); do
    line="$i"
    for ((j = 0; j < ${#names[@]}; j++)); do
        n=${names[$(((i + j) % ${#names[@]}))]}
        line+=" $n=$(run "$n")"
    done
    echo "$line" >>"$out"
done
python3 - "$out" <<'PY'
import statistics as st, sys
rows = [dict(kv.split("=") for kv in l.split()[1:]) for l in open(sys.argv[1])]
names = list(rows[0])
print(f"{len(rows)} rounds, ms: median [q1, q3]")
for n in names:
    v = sorted(float(r[n]) for r in rows)
    print(f"  {n:14} {st.median(v):7.1f} [{v[len(v)//4]:.1f}, {v[3*len(v)//4]:.1f}]")
print("medians of the per-round ratios:")
pairs = [("thread", "plain"), ("helper", "plain"), ("helper-thread", "thread"),
         ("helper-thread", "helper"), ("ours", "plain"), ("ours", "rmcp"), ("rmcp", "plain"),
         ("base", "plain"), ("base", "rmcp"), ("ours", "base"),
         ("owned", "plain"), ("owned", "rmcp"), ("ours", "owned"),
         ("handoff", "thread"), ("probe", "thread"), ("probe", "rmcp"), ("thread", "rmcp"), ("ours", "probe"), ("ours", "thread"), ("base", "probe")]
for a, b in pairs:
    if a in names and b in names:
        r = st.median(float(x[a]) / float(x[b]) for x in rows)
        print(f"  {a} / {b}: {r:.3f}")
PY
