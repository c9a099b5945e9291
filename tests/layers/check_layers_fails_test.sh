#!/bin/sh
# check_layers_fails_test.sh SOURCE_DIR
#
# The layer check can fail: on a copy of a few real files with wrong-way
# includes planted, it must exit 1 and name each planted file:line and rule,
# and on the same copy without them it must pass.
set -eu
source_dir=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT

mkdir -p "$tree/scripts" "$tree/libprobe/src" "$tree/libpolicy/src" "$tree/libsandbox/include/mojoup/sandbox" \
         "$tree/internal/src" "$tree/cli"
cp "$source_dir/scripts/check_layers.sh" "$tree/scripts/"
cp "$source_dir/libprobe/src/report.cc" "$tree/libprobe/src/"
cp "$source_dir/libsandbox/include/mojoup/sandbox/backend.h" "$tree/libsandbox/include/mojoup/sandbox/"
cp "$source_dir/cli/main.cc" "$tree/cli/"

if ! sh "$tree/scripts/check_layers.sh" "$tree" > "$tree/clean.out" 2>&1; then
  echo "FAIL: the check rejects a clean tree:" && cat "$tree/clean.out"
  exit 1
fi

printf '#include "mojoup/probe/report.h"\n#include "mojoup/sandbox/session.h"\n' \
  > "$tree/libprobe/src/planted.cc"
printf '// a comment\n#include "mojoup/probe/probe.h"\n' > "$tree/libpolicy/src/planted.cc"
printf '#pragma once\n\n#include <boost/asio.hpp>\n' > "$tree/libsandbox/include/mojoup/sandbox/planted.h"
printf '#include "mojoup/internal/strings.h"\n' >> "$tree/libsandbox/include/mojoup/sandbox/planted.h"
printf '#include "mojoup/policy/policy.h"\n' > "$tree/internal/src/planted.cc"
printf '#include "../../cli/main.h"\n' > "$tree/libprobe/src/planted_cli.cc"

status=0
sh "$tree/scripts/check_layers.sh" "$tree" > "$tree/planted.out" 2>&1 || status=$?
if [ "$status" -ne 1 ]; then
  echo "FAIL: expected exit 1 with planted includes, got $status:" && cat "$tree/planted.out"
  exit 1
fi
for expected in \
  "libprobe/src/planted.cc:2: probe-down" \
  "libpolicy/src/planted.cc:2: policy-down" \
  "libsandbox/include/mojoup/sandbox/planted.h:3: public-3rdparty" \
  "libsandbox/include/mojoup/sandbox/planted.h:4: public-internal" \
  "internal/src/planted.cc:1: internal-leaf" \
  "libprobe/src/planted_cli.cc:1: no-cli"; do
  if ! grep -qF "$expected" "$tree/planted.out"; then
    echo "FAIL: the output does not name '$expected':" && cat "$tree/planted.out"
    exit 1
  fi
done
if grep -q "planted.cc:1: probe-down" "$tree/planted.out"; then
  echo "FAIL: a probe header included from libprobe was flagged:" && cat "$tree/planted.out"
  exit 1
fi
echo "check_layers names every planted crossing and passes the clean copy"
