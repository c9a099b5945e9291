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

sandbox_src=libsandbox/src
mkdir -p "$tree/scripts" "$tree/libprobe/src" "$tree/libpolicy/src" "$tree/libsandbox/include/mojoup/sandbox" \
         "$tree/internal/src" "$tree/cli" "$tree/libcredproxy/src" "$tree/libcredproxy/include/mojoup/credproxy"
for part in runtime/native runtime/openshell session staging guard image; do
  mkdir -p "$tree/$sandbox_src/$part"
done
cp "$source_dir/scripts/check_layers.sh" "$tree/scripts/"
cp "$source_dir/libprobe/src/report.cc" "$tree/libprobe/src/"
cp "$source_dir/libsandbox/include/mojoup/sandbox/backend.h" "$tree/libsandbox/include/mojoup/sandbox/"
cp "$source_dir/libcredproxy/include/mojoup/credproxy/proxy.h" "$tree/libcredproxy/include/mojoup/credproxy/"
cp "$source_dir/libcredproxy/src/refusal.h" "$tree/libcredproxy/src/"
cp "$source_dir/$sandbox_src/runtime/native/stream_pump.h" "$tree/$sandbox_src/runtime/native/"
cp "$source_dir/$sandbox_src/runtime/openshell/openshell_host.h" "$tree/$sandbox_src/runtime/openshell/"
cp "$source_dir/$sandbox_src/session/session_manager.cc" "$tree/$sandbox_src/session/"
cp "$source_dir/$sandbox_src/staging/signin_account.h" "$tree/$sandbox_src/staging/"
cp "$source_dir/$sandbox_src/guard/git_index.h" "$tree/$sandbox_src/guard/"
cp "$source_dir/$sandbox_src/image/missing_image.h" "$tree/$sandbox_src/image/"
cp "$source_dir/cli/main.cc" "$tree/cli/"

if ! sh "$tree/scripts/check_layers.sh" "$tree" > "$tree/clean.out" 2>&1; then
  echo "FAIL: the check rejects a clean tree:" && cat "$tree/clean.out"
  exit 1
fi

printf '#include "mojoup/probe/report.h"\n#include "mojoup/sandbox/session.h"\n#include "mojoup/credproxy/vault.h"\n' \
  > "$tree/libprobe/src/planted.cc"
printf '// a comment\n#include "mojoup/probe/probe.h"\n#include <mojoup/credproxy/proxy.h>\n' \
  > "$tree/libpolicy/src/planted.cc"
printf '#include "mojoup/policy/network_rules.h"\n#include "mojoup/internal/host_port.h"\n#include "mojoup/credproxy/vault.h"\n#include "mojoup/sandbox/backend.h"\n#include "mojoup/probe/report.h"\n' \
  > "$tree/libcredproxy/src/planted.cc"
printf '#include "runtime/native/stream_pump.h"\n#include "mojoup/sandbox/backend.h"\n#include "session/record.h"\n#include "mojoup/sandbox/node.h"\n#include "runtime/openshell/openshell_host.h"\n#include "mojoup/sandbox/openshell_backend.h"\n#include "../openshell/openshell_host.h"\n' \
  > "$tree/$sandbox_src/runtime/native/planted.cc"
printf '#include "mojoup/sandbox/native_backend.h"\n#include "node/node_state.h"\n#include "mojoup/sandbox/session.h"\n#include "runtime/native/stream_pump.h"\n' \
  > "$tree/$sandbox_src/runtime/openshell/planted.cc"
printf '#include "mojoup/sandbox/backend.h"\n#include "guard/repository.h"\n#include "runtime/native/stream_pump.h"\n#include "mojoup/sandbox/openshell_backend.h"\n#include "mojoup/sandbox/native_backend.h"\n' \
  > "$tree/$sandbox_src/session/planted.cc"
printf '#include "node/node_state.h"\n' > "$tree/$sandbox_src/staging/planted.cc"
printf '#pragma once\n#include "fileinfo/file_info.h"\n#include "mojoup/sandbox/session.h"\n' \
  > "$tree/$sandbox_src/guard/planted.h"
printf '#include "runtime/native/stream_pump.h"\n#include "mojoup/sandbox/backend.h"\n#include "mojoup/sandbox/native_backend.h"\n#include "mojoup/sandbox/agent_image.h"\n#include "mojoup/sandbox/node.h"\n' \
  > "$tree/$sandbox_src/image/planted.cc"
printf '#pragma once\n\n#include <boost/asio.hpp>\n' > "$tree/libsandbox/include/mojoup/sandbox/planted.h"
printf '#include "mojoup/internal/strings.h"\n' >> "$tree/libsandbox/include/mojoup/sandbox/planted.h"
printf '#include "mojoup/policy/policy.h"\n#include "mojoup/credproxy/vault.h"\n' > "$tree/internal/src/planted.cc"
printf '#include "../../cli/main.h"\n' > "$tree/libprobe/src/planted_cli.cc"

status=0
sh "$tree/scripts/check_layers.sh" "$tree" > "$tree/planted.out" 2>&1 || status=$?
if [ "$status" -ne 1 ]; then
  echo "FAIL: expected exit 1 with planted includes, got $status:" && cat "$tree/planted.out"
  exit 1
fi
for expected in \
  "libprobe/src/planted.cc:2: probe-down" \
  "libprobe/src/planted.cc:3: probe-down" \
  "libpolicy/src/planted.cc:2: policy-down" \
  "libpolicy/src/planted.cc:3: policy-down" \
  "libcredproxy/src/planted.cc:4: credproxy-down" \
  "libcredproxy/src/planted.cc:5: credproxy-down" \
  "$sandbox_src/runtime/native/planted.cc:3: runtime-down" \
  "$sandbox_src/runtime/native/planted.cc:4: runtime-down" \
  "$sandbox_src/runtime/native/planted.cc:5: runtime-apart" \
  "$sandbox_src/runtime/native/planted.cc:6: runtime-apart" \
  "$sandbox_src/runtime/native/planted.cc:7: runtime-apart" \
  "$sandbox_src/runtime/openshell/planted.cc:1: runtime-apart" \
  "$sandbox_src/runtime/openshell/planted.cc:2: runtime-down" \
  "$sandbox_src/runtime/openshell/planted.cc:3: runtime-down" \
  "$sandbox_src/runtime/openshell/planted.cc:4: runtime-apart" \
  "$sandbox_src/session/planted.cc:3: session-backend" \
  "$sandbox_src/session/planted.cc:4: session-backend" \
  "$sandbox_src/session/planted.cc:5: session-backend" \
  "$sandbox_src/staging/planted.cc:1: parts-down" \
  "$sandbox_src/guard/planted.h:3: parts-down" \
  "$sandbox_src/image/planted.cc:1: parts-down" \
  "$sandbox_src/image/planted.cc:2: parts-down" \
  "$sandbox_src/image/planted.cc:3: parts-down" \
  "$sandbox_src/image/planted.cc:5: parts-down" \
  "libsandbox/include/mojoup/sandbox/planted.h:3: public-3rdparty" \
  "libsandbox/include/mojoup/sandbox/planted.h:4: public-internal" \
  "internal/src/planted.cc:1: internal-leaf" \
  "internal/src/planted.cc:2: internal-leaf" \
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
# What each part may include: the layers below it, its own headers, the Backend interface.
for allowed in \
  "libcredproxy/src/planted.cc:1:" \
  "libcredproxy/src/planted.cc:2:" \
  "libcredproxy/src/planted.cc:3:" \
  "$sandbox_src/runtime/native/planted.cc:1:" \
  "$sandbox_src/runtime/native/planted.cc:2:" \
  "$sandbox_src/session/planted.cc:1:" \
  "$sandbox_src/session/planted.cc:2:" \
  "$sandbox_src/guard/planted.h:2:" \
  "$sandbox_src/image/planted.cc:4:"; do
  if grep -qF "$allowed" "$tree/planted.out"; then
    echo "FAIL: an allowed include ($allowed) was flagged:" && cat "$tree/planted.out"
    exit 1
  fi
done
echo "check_layers names every planted crossing and passes the clean copy"
