#!/bin/sh
# make_node_image.sh IMAGE [MIRROR]
# A Debian 12 image with Node.js and npm from Debian's own packages (and
# bash, which OpenShell's exec needs), built with mmdebstrap and loaded with
# `docker import`, for the tests that run node and npm in a sandbox. Does
# nothing if IMAGE exists. One maker at a time (a lock on this script): a
# second waits for the first and then finds the image (CI starts one beside
# the build, scripts/quickstart.sh).
set -eu
image=${1:?usage: make_node_image.sh IMAGE [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
exec 9< "$0"
flock 9
if docker image inspect "$image" > /dev/null 2>&1; then exit 0; fi
# The tar stream goes straight into Docker; the image is tagged only once
# mmdebstrap has said it finished, so a cut-short stream is never IMAGE.
failed=$(mktemp)
trap 'rm -f "$failed"' EXIT
id=$({ mmdebstrap --quiet --variant=minbase --include=bash,ca-certificates,nodejs,npm bookworm - \
         "$mirror" || echo "mmdebstrap exited with $?" > "$failed"; } | docker import -)
if [ -s "$failed" ]; then
  cat "$failed" >&2
  docker image rm "$id" > /dev/null 2>&1 || true
  exit 1
fi
docker tag "$id" "$image"
