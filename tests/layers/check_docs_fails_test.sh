#!/bin/sh
# check_docs_fails_test.sh SOURCE_DIR
#
# The documentation check can fail: on a copy of README.md and docs/ it must
# pass, then with a link to a missing file, a link to a missing heading (in
# another file and in the same one) and a README of 400 lines planted, exit 1
# and name each planted FILE:LINE; links in code are not links, and a
# repeated heading's "-1" anchor resolves.
set -eu
source_dir=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT

mkdir -p "$tree/scripts"
cp "$source_dir/scripts/check_docs.sh" "$tree/scripts/"
cp "$source_dir/README.md" "$tree/"
cp -R "$source_dir/docs" "$tree/"

if ! sh "$tree/scripts/check_docs.sh" "$tree" > "$tree/clean.out" 2>&1; then
  echo "FAIL: the check rejects the clean copy:" && cat "$tree/clean.out"
  exit 1
fi

# Links that resolve, or are not links: none of them may be reported.
cat >> "$tree/docs/cli.md" <<'EOF'

## Twice

## Twice

[the second one](#twice-1), [the README](../README.md), `[code](missing.md)`

```
[fenced](missing.md)
```
EOF
if ! sh "$tree/scripts/check_docs.sh" "$tree" > "$tree/good.out" 2>&1; then
  echo "FAIL: the check rejects links that resolve or are code:" && cat "$tree/good.out"
  exit 1
fi

file_line=$(($(wc -l < "$tree/docs/cli.md") + 1))
echo "[gone](nowhere.md)" >> "$tree/docs/cli.md"
anchor_line=$(($(wc -l < "$tree/docs/policy.md") + 1))
echo "[no such heading](cli.md#no-such-heading)" >> "$tree/docs/policy.md"
self_line=$(($(wc -l < "$tree/docs/proxy.md") + 1))
echo "[here](#not-here)" >> "$tree/docs/proxy.md"
# expect_failure WHAT MESSAGE...: the check exits 1 and says each MESSAGE.
expect_failure() {
  what=$1
  shift
  status=0
  sh "$tree/scripts/check_docs.sh" "$tree" > "$tree/planted.out" 2>&1 || status=$?
  if [ "$status" -ne 1 ]; then
    echo "FAIL: the check exited $status, not 1, on $what:" && cat "$tree/planted.out"
    exit 1
  fi
  for expected in "$@"; do
    if ! grep -qF "$expected" "$tree/planted.out"; then
      echo "FAIL: the check does not say \"$expected\":" && cat "$tree/planted.out"
      exit 1
    fi
  done
}
expect_failure "broken links" \
  "docs/cli.md:$file_line: link nowhere.md: no such file docs/nowhere.md" \
  "docs/policy.md:$anchor_line: link cli.md#no-such-heading: no heading #no-such-heading in docs/cli.md" \
  "docs/proxy.md:$self_line: link #not-here: no heading #not-here in docs/proxy.md"

lines=$(wc -l < "$tree/README.md")
while [ "$lines" -lt 400 ]; do
  echo "padding" >> "$tree/README.md"
  lines=$((lines + 1))
done
expect_failure "a README of 400 lines" "README.md:400: README.md has 400 lines"
echo "check_docs names every planted problem and passes the clean copy"
