#!/usr/bin/env bash
# Runs every fuzz target (or the ones named) for a bounded time each.
#
#   fuzz/run.sh                     # every target, 30 s each
#   FUZZ_SECS=300 fuzz/run.sh sse_parser schema_validate
#
# Needs a nightly toolchain and cargo-fuzz (`cargo install cargo-fuzz`).
# Not part of CI's default path. New inputs found are kept in a scratch
# corpus (fuzz/corpus-work/, git-ignored); the seed corpus in fuzz/corpus/
# is only read. A crash leaves its input in fuzz/artifacts/<target>/ and
# makes the script exit non-zero after the remaining targets ran.
set -u
cd "$(dirname "$0")"
secs=${FUZZ_SECS:-30}
jobs=${FUZZ_JOBS:-1}
parallel=()
if [ "$jobs" -gt 1 ]; then
    parallel=(-jobs="$jobs" -workers="$jobs")
fi
targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
    mapfile -t targets < <(cargo +nightly fuzz list)
fi
cargo +nightly fuzz build -O || exit 1
failed=()
for t in "${targets[@]}"; do
    mkdir -p "corpus-work/$t" "corpus/$t"
    echo "== $t (${secs}s)"
    log="corpus-work/$t.log"
    dict=()
    if [ -f "dicts/$t.dict" ]; then
        dict=(-dict="dicts/$t.dict")
    fi
    if cargo +nightly fuzz run -O "$t" "corpus-work/$t" "corpus/$t" -- \
        -max_total_time="$secs" -timeout=10 -rss_limit_mb=2048 -max_len=65536 \
        "${parallel[@]}" "${dict[@]}" -print_final_stats=1 >"$log" 2>&1; then
        grep -E "^#[0-9]+[[:space:]]+DONE" "$log" | tail -n 1
    else
        echo "!! $t failed; see fuzz/$log and fuzz/artifacts/$t/"
        tail -n 30 "$log"
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "failed: ${failed[*]}"
    exit 1
fi
echo "all ${#targets[@]} targets ran ${secs}s each without a crash"
