#!/bin/sh
# make_node_image.sh IMAGE [MIRROR]
# A Debian 12 image with Node.js and npm from Debian's own packages (and
# bash, which OpenShell's exec needs), built with mmdebstrap and loaded with
# `docker import` (import_mmdebstrap.sh), for the tests that run node and
# npm in a sandbox. Does nothing if IMAGE exists. One maker at a time (a
# lock on this script): a second waits for the first and then finds the
# image (CI starts one beside the build, scripts/quickstart.sh).
set -eu
image=${1:?usage: make_node_image.sh IMAGE [MIRROR]}
mirror=${2:-http://deb.debian.org/debian}
exec 9< "$0"
flock 9
# git and a /home every user may create in (mode 1777): a session on a
# remote gateway gets a copy of its repository there (docs/openshell.md,
# "Remote gateways").
"$(dirname "$0")/import_mmdebstrap.sh" "$image" --quiet --variant=minbase \
  --include=bash,ca-certificates,git,nodejs,npm --customize-hook='chmod 1777 "$1/home"' \
  bookworm - "$mirror" > /dev/null
