#!/bin/sh
# make_sandbox_image.sh IMAGE
# Assembles a small sandbox image from this host's files and loads it with
# `docker import` (no registry is reachable in CI): busybox-static for the
# shell and tools, bash (OpenShell runs every `sandbox exec` as
# `/bin/bash -lc`), curl and git (with its HTTPS remote helper), openssl
# (s_client, the escape tests' raw TLS client) with the libraries ldd lists,
# coreutils' realpath (OpenShell's `sandbox download` runs `realpath -e --`,
# which busybox's lacks), the CA bundle, and an /etc/passwd naming the invoking user and OpenShell's
# `sandbox`. Does nothing if IMAGE exists.
set -eu
image=${1:?usage: make_sandbox_image.sh IMAGE}
if docker image inspect "$image" >/dev/null 2>&1; then exit 0; fi

root=$(mktemp -d)
trap 'rm -rf "$root"' EXIT
mkdir -p "$root/bin" "$root/usr/bin" "$root/etc/ssl/certs" "$root/tmp" "$root/dev" "$root/proc" \
         "$root/sys" "$root/home"
# /home open to every user, sticky, as docs/openshell.md asks of an image for
# a remote gateway: a session's copy of a repository under /home is written
# there by the session's own user.
chmod 1777 "$root/home"
chmod 1777 "$root/tmp"
cp /bin/busybox "$root/bin/busybox"
for tool in $("$root/bin/busybox" --list); do
  [ -e "$root/bin/$tool" ] || ln -s busybox "$root/bin/$tool"
done
# bash for OpenShell's exec, curl for the network tests, git for commits in
# the repository and its HTTPS helper for remotes, openssl for bytes no curl
# would send. Every library each
# loads, at the same path, and the dynamic loader.
for program in bash curl git openssl realpath /usr/lib/git-core/git-remote-http; do
  program_path=$(command -v "$program")
  if [ "$program" = bash ]; then
    rm -f "$root/bin/bash"
    cp "$program_path" "$root/bin/bash"
  elif [ "${program#/}" != "$program" ]; then
    mkdir -p "$root$(dirname "$program")"
    cp "$program_path" "$root$program"
    ln -s git-remote-http "$root$(dirname "$program")/git-remote-https"
  else
    cp "$program_path" "$root/usr/bin/$program"
  fi
  ldd "$program_path" | awk '/=> \//{print $3} /^\t\/[^ ]+/{print $1}' | while read -r lib; do
    mkdir -p "$root$(dirname "$lib")"
    cp -L "$lib" "$root$lib"
  done
done
cp -L /etc/ssl/certs/ca-certificates.crt "$root/etc/ssl/certs/ca-certificates.crt"
# The `sandbox` user OpenShell's images have: its supervisor runs commands
# as sandbox:sandbox when nothing names a user.
printf 'root:x:0:0:root:/root:/bin/sh\nsandbox:x:9999:9999::/sandbox:/bin/sh\n%s:x:%s:%s::/home/user:/bin/sh\n' \
  "$(id -un)" "$(id -u)" "$(id -g)" > "$root/etc/passwd"
printf 'root:x:0:\nsandbox:x:9999:\n' > "$root/etc/group"
tar -C "$root" -cf - . | docker import - "$image" >/dev/null
