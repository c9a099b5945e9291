#!/bin/bash
# Writes the man page mojoup-node(1), gzipped, from the CLI's own help:
# help2man turns `mojoup-node --help` and `--version` into NAME, SYNOPSIS and
# DESCRIPTION; each command's `mojoup-node COMMAND [SUB] --help` follows
# under COMMANDS, verbatim; mojoup-node.h2m adds what the help does not say
# (environment, files, exit status, see also).
#
#   generate.sh MOJOUP_NODE MOJOUP_NODE_H2M OUTPUT.1.gz
set -euo pipefail

cli=${1:?usage: generate.sh MOJOUP_NODE MOJOUP_NODE_H2M OUTPUT.1.gz}
static=${2:?usage: generate.sh MOJOUP_NODE MOJOUP_NODE_H2M OUTPUT.1.gz}
out=${3:?usage: generate.sh MOJOUP_NODE MOJOUP_NODE_H2M OUTPUT.1.gz}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# roff: a backslash is \e, a minus sign \- (a bare - is a hyphen), and a line
# may not begin with a control character.
roff_verbatim() { sed -e 's/\\/\\e/g' -e 's/-/\\-/g' -e "s/^\\([.']\\)/\\\\\\&\\1/"; }

{
  echo '[COMMANDS]'
  "$cli" --help | sed -n '/^commands:/,/^$/{/^  /s/^  //p}' |
    while read -r command second _; do
      sub=""
      [[ $second =~ ^[a-z][a-z|]*$ ]] && sub=${second%%|*}
      echo ".SS \"$command\""
      echo '.nf'
      "$cli" "$command" ${sub:+"$sub"} --help | roff_verbatim
      echo '.fi'
    done
} >"$tmp/commands.h2m"

command -v help2man >/dev/null ||
  { echo "generate.sh: help2man is missing: install Debian's help2man (third_party/debian-packages.txt)" >&2; exit 1; }
help2man --no-info --section=1 --name="run AI coding agents in per-session sandboxes" \
  --include="$tmp/commands.h2m" --include="$static" --output="$tmp/mojoup-node.1" "$cli"
gzip -9n <"$tmp/mojoup-node.1" >"$out.tmp"
mv "$out.tmp" "$out"
