#!/bin/sh
# check_function_length.sh [SOURCE_DIR]
#
# Fails (exit 1) when a function in any C++ source of the tree is over 100
# lines, from the line that names it to its closing brace, naming file:line,
# the function and its length. A function that long does several things:
# split it into ones a reader can hold. Every folder that holds C++ counts:
# the libraries (lib*/: sources, installed headers, test doubles and their
# tools, the supervisor), internal/, cli/, bench/, examples/, fuzz/ and
# tests/. A Catch2 TEST_CASE is a function too: its body counts, named
# TEST_CASE (SECTIONs are parts of it; move what a section does into a
# function of its own).
#
# The lengths come from universal-ctags (Debian: universal-ctags), which
# gives each function definition its first and last line:
#   ctags -R --languages=C++ --c++-kinds=f --fields=+ne --output-format=u-ctags -f - DIR
# with TEST_CASE defined as a function's head (-D), so that it sees their bodies.
#
# Exit 0: none too long; 1: some (listed on stdout); 2: bad usage, no
# sources, or no universal-ctags.
set -eu

limit=100
if [ "$#" -gt 1 ] || [ ! -d "${1:-$(dirname "$0")/..}" ]; then
  echo "usage: $0 [SOURCE_DIR]" >&2
  exit 2
fi
root=${1:-$(dirname "$0")/..}
cd "$root"

# Exuberant ctags, the other `ctags`, has neither end: nor u-ctags output.
if ! command -v ctags > /dev/null 2>&1 || ! ctags --version 2> /dev/null | grep -q 'Universal Ctags'; then
  echo "check_function_length: needs universal-ctags (apt-get install universal-ctags)" >&2
  exit 2
fi

dirs=""
for dir in lib*/ internal cli bench examples fuzz tests; do
  if [ -d "$dir" ]; then dirs="$dirs ${dir%/}"; fi
done
if [ -z "$dirs" ]; then
  echo "check_function_length: no lib*/, internal, cli, bench, examples, fuzz or tests under $root" >&2
  exit 2
fi

# One tag a line: name, file, pattern, kind, then fields (line:N, end:M and
# the scope, class:mojoup::Node, say), tab-separated.
# shellcheck disable=SC2086 # one directory per word
tags=$(ctags --sort=no -R --languages=C++ --c++-kinds=f --fields=+ne --output-format=u-ctags \
         -D 'TEST_CASE(...)=void TEST_CASE()' -D 'TEST_CASE_METHOD(...)=void TEST_CASE_METHOD()' \
         -f - $dirs) || {
  echo "check_function_length: ctags failed on$dirs" >&2
  exit 2
}
long=$(printf '%s\n' "$tags" | awk -F '\t' -v limit="$limit" '
  NF >= 4 {
    first = ""; last = ""; owner = ""
    for (i = 4; i <= NF; i++) {
      if ($i ~ /^line:/) first = substr($i, 6)
      else if ($i ~ /^end:/) last = substr($i, 5)
      else if ($i ~ /^(class|struct):/) { owner = $i; sub(/^[a-z]+:/, "", owner); sub(/.*::/, "", owner) }
    }
    if (first == "" || last == "") next
    lines = last - first + 1
    if (lines > limit) {
      name = owner == "" ? $1 : owner "::" $1
      printf "%s\t%d\t%s:%d: %s is %d lines (limit %d)\n", $2, first, $2, first, name, lines, limit
    }
  }' | sort -t "$(printf '\t')" -k1,1 -k2,2n | cut -f3-)

if [ -n "$long" ]; then
  echo "$long"
  echo "check_function_length: functions over $limit lines (split them; see $0)" >&2
  exit 1
fi
echo "check_function_length: no function over $limit lines"
