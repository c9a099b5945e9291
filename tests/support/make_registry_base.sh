#!/bin/sh
# make_registry_base.sh
# A stand-in for debian:12-slim, where no registry answers: a Debian 12
# minbase from mmdebstrap with the sources debian:12-slim itself carries
# (deb.debian.org only; mmdebstrap's own default names security.debian.org),
# loaded with `docker import` (import_mmdebstrap.sh). Prints "made" when it
# made one (whoever asked removes it when done), nothing when the daemon
# already has debian:12-slim. One maker at a time (a lock on this script):
# a second waits for the first and then finds the image (CI starts one
# beside the build, scripts/quickstart.sh).
set -eu
exec 9< "$0"
flock 9
"$(dirname "$0")/import_mmdebstrap.sh" debian:12-slim --quiet --variant=minbase bookworm - \
  'deb http://deb.debian.org/debian bookworm main' \
  'deb http://deb.debian.org/debian bookworm-updates main' \
  'deb http://deb.debian.org/debian-security bookworm-security main'
