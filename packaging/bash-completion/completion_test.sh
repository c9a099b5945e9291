#!/bin/bash
# Fails when mojoup-node has a command, a sub-command or an option its bash
# completion does not complete: generates the completion from the built CLI
# (as the package does) and asks it, word by word, as bash would on TAB.
#
#   completion_test.sh MOJOUP_NODE GENERATE_SH
set -uo pipefail

cli=${1:?usage: completion_test.sh MOJOUP_NODE GENERATE_SH}
generate=${2:?usage: completion_test.sh MOJOUP_NODE GENERATE_SH}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$generate" "$cli" "$tmp/mojoup-node" || { echo "FAIL: generate.sh did not write the completion"; exit 1; }
# shellcheck source=/dev/null
source "$tmp/mojoup-node"

failures=0
fail() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# What TAB offers after WORDS... (the last one is the word being completed).
complete_words() {
  COMP_WORDS=(mojoup-node "$@")
  COMP_CWORD=$#
  COMPREPLY=()
  _mojoup_node 2>/dev/null
  printf '%s\n' "${COMPREPLY[@]}"
}

expect() {  # expect WANTED WORDS...: TAB after WORDS offers WANTED
  local wanted=$1
  shift
  local offered
  offered=$(complete_words "$@")
  grep -qxF -- "$wanted" <<<"$offered" || fail "\`mojoup-node $*<TAB>' does not offer $wanted"
}

# The commands, read from the usage's "commands:" list, which is the CLI's
# own dispatch table.
mapfile -t synopses < <("$cli" --help | sed -n '/^commands:/,/^$/{/^  /s/^  //p}')
((${#synopses[@]} > 0)) || fail "no commands in \`mojoup-node --help'"

for synopsis in "${synopses[@]}"; do
  read -r command second _ <<<"$synopsis"
  expect "$command" ""
  sub=""
  if [[ $second =~ ^[a-z][a-z|]*$ ]]; then
    for word in ${second//|/ }; do expect "$word" "$command" ""; done
    sub=${second%%|*}
  fi
  options=$("$cli" "$command" ${sub:+"$sub"} --help |
    grep -oE '^ +(-[A-Za-z], )?--[a-z][a-z0-9-]*' | grep -oE -- '--[a-z][a-z0-9-]*$')
  [[ -n $options ]] || fail "\`mojoup-node $command $sub --help' lists no options"
  for option in $options; do expect "$option" "$command" ${sub:+"$sub"} "--"; done
done

# Values and keys the help names.
expect on setup --role ""
expect native config set node.sandbox.runtime ""
expect node.sandbox.engine config get ""
expect bash run --tool claude-code -- ""

if ((failures > 0)); then
  echo "$failures gap(s) between mojoup-node's help and its bash completion"
  exit 1
fi
echo "The bash completion completes all ${#synopses[@]} commands of mojoup-node and their options."
