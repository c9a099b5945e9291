#!/bin/sh
# make_node_image.sh IMAGE [MIRROR]
# A Debian 12 image with Node.js and npm from Debian's own packages (and
# bash, which OpenShell's exec needs), built with mmdebstrap and loaded with
# `docker import`, for the tests that run node and npm in a sandbox. Does
# nothing if IMAGE exists.
set -eu
image=${1:?usage: make_node_image.sh IMAGE [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
if docker image inspect "$image" >/dev/null 2>&1; then exit 0; fi
mmdebstrap --quiet --variant=minbase --include=bash,ca-certificates,nodejs,npm bookworm - \
  "$mirror" | docker import - "$image" >/dev/null
