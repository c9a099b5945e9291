#!/bin/sh
# make_registry_base.sh
# A stand-in for debian:12-slim, where no registry answers: a Debian 12
# minbase from mmdebstrap with the sources debian:12-slim itself carries
# (deb.debian.org only; mmdebstrap's own default names security.debian.org),
# loaded with `docker import`. Prints "made" when it made one (whoever asked
# removes it when done), nothing when the daemon already has debian:12-slim.
# One maker at a time (a lock on this script): a second waits for the first
# and then finds the image (CI starts one beside the build,
# scripts/quickstart.sh).
set -eu
image=debian:12-slim
exec 9< "$0"
flock 9
if docker image inspect "$image" > /dev/null 2>&1; then exit 0; fi
failed=$(mktemp)
trap 'rm -f "$failed"' EXIT
id=$({ mmdebstrap --quiet --variant=minbase bookworm - \
         'deb http://deb.debian.org/debian bookworm main' \
         'deb http://deb.debian.org/debian bookworm-updates main' \
         'deb http://deb.debian.org/debian-security bookworm-security main' ||
         echo "mmdebstrap exited with $?" > "$failed"; } | docker import -)
if [ -s "$failed" ]; then
  cat "$failed" >&2
  docker image rm "$id" > /dev/null 2>&1 || true
  exit 1
fi
docker tag "$id" "$image"
echo made
