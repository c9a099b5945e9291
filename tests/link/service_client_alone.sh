#!/bin/sh
# service_client_alone.sh PROGRAM
#
# PROGRAM is examples/service_sessions, linked with mojoup::service_client
# alone. Passes when it holds the client (mojoup::ServiceClient) and nothing
# of the layers below the service but internal/: no symbol of the node facade,
# the runtimes, the image builder, the credential proxy, the policy or the
# probe; and when, with no service at the socket it is given, it says so in
# one line and exits 1.
set -eu

program=${1:?usage: service_client_alone.sh PROGRAM}
symbols=$(nm -C "$program")

if ! echo "$symbols" | grep -q 'mojoup::ServiceClient::Connect'; then
  echo "FAIL: $program holds no mojoup::ServiceClient" >&2
  exit 1
fi
# Code (text symbols) of a lower layer's namespace, or of the node facade.
# Each symbol's name up to its parameters: a client function that takes a
# plain sandbox type is the client's own, and so are the members a compiler
# makes for that type (sandbox::Stdio's constructor and destructor, emitted
# where its header is used when the build does not inline them).
below=$(echo "$symbols" | grep -E ' [TtWw] ' | sed 's/^[^ ]* [A-Za-z] //; s/(.*//' |
        grep -E '^mojoup::(Node|sandbox::|credproxy::|policy::|probe::)' |
        grep -vE '^mojoup::sandbox::Stdio::' || true)
if [ -n "$below" ]; then
  echo "FAIL: $program holds code of the layers below the service:" >&2
  echo "$below" | head -5 >&2
  exit 1
fi

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
status=0
MOJOUP_SERVICE_SOCKET="$dir/none.sock" "$program" "$dir" > "$dir/out" 2> "$dir/err" || status=$?
if [ "$status" -ne 1 ] || [ "$(wc -l < "$dir/err")" -ne 1 ] || ! grep -q 'service_sessions: ' "$dir/err"; then
  echo "FAIL: with no service it should say so in one line and exit 1; it exited $status with:" >&2
  cat "$dir/err" >&2
  exit 1
fi
echo "PASS: $(wc -c < "$program") bytes, the client alone; with no service: $(cat "$dir/err")"
