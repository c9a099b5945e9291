#!/usr/bin/env bash
# scripts/fuzz.sh [SECONDS]
# Builds the libFuzzer targets (preset fuzz: clang with ASan + UBSan) and runs
# the policy-parser, host-matcher, proxy request-path, framing and service
# protocol fuzzers side by side for SECONDS each (default 600), starting from
# the seed corpus in fuzz/corpus/.
# New inputs go to build/fuzz/corpus/, crashes to build/fuzz/artifacts/.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-600}"

if ! command -v clang++ > /dev/null; then
  sudo=""
  if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
  $sudo apt-get update -qq
  # shellcheck disable=SC2046
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends \
    $(sed -e 's/#.*//' third_party/debian-packages-fuzz.txt | awk 'NF {print $1}')
fi
cmake --preset fuzz > /dev/null
cmake --build --preset fuzz

mkdir -p build/fuzz/artifacts
pids=()
for name in policy host request framing service_protocol; do
  work="build/fuzz/corpus/$name"
  mkdir -p "$work"
  echo "==> ${name}_fuzz for ${seconds} s (log: build/fuzz/${name}.log)"
  UBSAN_OPTIONS="suppressions=fuzz/ubsan.supp:print_stacktrace=1:halt_on_error=1" \
    build/fuzz/bin/${name}_fuzz -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
    -max_len=65536 -artifact_prefix=build/fuzz/artifacts/${name}- \
    "$work" "fuzz/corpus/$name" > "build/fuzz/${name}.log" 2>&1 &
  pids+=($!)
done
status=0
for pid in "${pids[@]}"; do wait "$pid" || status=1; done
for name in policy host request framing service_protocol; do
  echo "--- ${name}_fuzz"
  grep -E "^#[0-9]+.*DONE|Done [0-9]+ runs|ERROR|SUMMARY" "build/fuzz/${name}.log" | tail -n 3
done
exit "$status"
