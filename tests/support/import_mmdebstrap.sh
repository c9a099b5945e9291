#!/bin/sh
# import_mmdebstrap.sh IMAGE MMDEBSTRAP_ARGUMENT...
# What the test image scripts share: a Debian system from mmdebstrap (its
# arguments as given, writing the tarball to standard output: target `-`),
# streamed into `docker import` and tagged IMAGE only once mmdebstrap has
# said it finished, so a stream cut short is never IMAGE. Prints "made"
# when it made IMAGE, nothing when the daemon already has it. The callers
# hold their own lock, one maker per image.
set -eu
image=${1:?usage: import_mmdebstrap.sh IMAGE MMDEBSTRAP_ARGUMENT...}
shift
if docker image inspect "$image" > /dev/null 2>&1; then exit 0; fi
failed=$(mktemp)
trap 'rm -f "$failed"' EXIT
id=$({ mmdebstrap "$@" || echo "mmdebstrap exited with $?" > "$failed"; } | docker import -)
if [ -s "$failed" ]; then
  cat "$failed" >&2
  docker image rm "$id" > /dev/null 2>&1 || true
  exit 1
fi
docker tag "$id" "$image"
echo made
