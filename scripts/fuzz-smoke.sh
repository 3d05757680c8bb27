#!/usr/bin/env bash
# Builds the libFuzzer targets with clang (ASan + UBSan) in build-fuzz/ and runs each on
# its seed corpus for a bounded time, the targets side by side (one core each).
#
#   scripts/fuzz-smoke.sh [SECONDS]    default 30 seconds per target
#
# A finding stops the run with a non-zero status and leaves the input as
# build-fuzz/findings/<target>/crash-* (or leak-*, timeout-*); reproduce it with
# `build-fuzz/fuzz/<target> FILE`, then keep it as a regression test.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-30}"
jobs="${SGDC_FUZZ_BUILD_JOBS:-2}"

cmake -S . -B build-fuzz -G Ninja \
  -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_UNITY_BUILD=ON \
  -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DSGDC_BUILD_TESTS=OFF -DSGDC_INSTALL=OFF -DSGDC_BUILD_FUZZERS=ON >/dev/null
targets=(fuzz_protocol_messages fuzz_fixture_loader)
cmake --build build-fuzz -j "$jobs" --target "${targets[@]}"

# The targets fuzz side by side, one core each, every one for its full time; each one's
# output goes to build-fuzz/<target>.log, printed when it ends.
pids=()
for t in "${targets[@]}"; do
  name="${t#fuzz_}"
  # The seed corpus stays untouched: new inputs go to a scratch corpus in build-fuzz/.
  work="build-fuzz/corpus/$name"
  findings="build-fuzz/findings/$name"
  mkdir -p "$work" "$findings"
  echo "fuzz-smoke: $t for ${seconds}s" >&2
  "build-fuzz/fuzz/$t" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -artifact_prefix="$findings/" -print_final_stats=1 "$work" "fuzz/corpus/$name" \
    >"build-fuzz/$t.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!targets[@]}"; do
  status=0
  wait "${pids[$i]}" || status=$?
  cat "build-fuzz/${targets[$i]}.log" >&2
  if [ "$status" -ne 0 ]; then
    echo "fuzz-smoke: ${targets[$i]} failed (status $status); inputs in build-fuzz/findings/" >&2
    failed=1
  fi
done
[ "$failed" -eq 0 ] || exit 1
echo "fuzz-smoke: no findings"
