#!/bin/sh
# check_docs.sh [SOURCE_DIR]
#
# Keeps the documentation's shape: README.md is what an operator reads in
# five minutes, and the reference lives in docs/. Fails (exit 1), naming
# FILE:LINE for each problem, when
#   - README.md has 400 lines or more;
#   - a relative link in README.md or docs/*.md names a file or directory
#     that does not exist;
#   - a link's #anchor names no heading of the Markdown file it points to
#     (GitHub's anchors: the heading's text in lower case, punctuation other
#     than "-" and "_" dropped, each space a "-", "-1", "-2", ... after
#     repeats).
# Links in fenced code blocks and in `code spans` are not links, and neither
# are headings in fenced code blocks. Needs only POSIX sh and awk.
set -eu
root=${1:-$(dirname "$0")/..}
cd "$root"
limit=400

status=0
lines=$(wc -l < README.md)
if [ "$lines" -ge "$limit" ]; then
  echo "README.md:$limit: README.md has $lines lines; keep it under $limit by moving reference text to docs/" >&2
  status=1
fi

# shellcheck disable=SC2016 # the awk program's $ are awk's
awk '
# The GitHub anchor of a heading line (its leading #s included).
function slug(line,   s) {
  s = line
  sub(/^#+[ \t]*/, "", s)
  sub(/[ \t]+#+[ \t]*$/, "", s)
  sub(/[ \t]+$/, "", s)
  while (match(s, /!?\[[^]]*\]\([^)]*\)/)) {       # [text](url) reads as text
    t = substr(s, RSTART, RLENGTH)
    sub(/^!?\[/, "", t)
    sub(/\]\([^)]*\)$/, "", t)
    s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
  }
  s = tolower(s)
  gsub(/-/, "\001", s)
  gsub(/_/, "\002", s)
  gsub(/[[:punct:]]/, "", s)
  gsub(/\001/, "-", s)
  gsub(/\002/, "_", s)
  gsub(/ /, "-", s)
  return s
}
function is_fence(line) { return line ~ /^[ \t]*(```|~~~)/ }
# Reads FILE once and records its anchors in anchors[FILE, ANCHOR].
function load_anchors(file,   line, fence, s, n) {
  if (file in loaded) return
  loaded[file] = 1
  fence = 0
  delete seen
  while ((getline line < file) > 0) {
    if (is_fence(line)) { fence = !fence; continue }
    if (fence || line !~ /^#+[ \t]/) continue
    s = slug(line)
    n = seen[s]++
    anchors[file, (n ? s "-" n : s)] = 1
  }
  close(file)
}
function dir_of(file) { return (file ~ /\//) ? substr(file, 1, match(file, /\/[^\/]*$/) - 1) "/" : "" }
function exists(path) {
  if (path ~ /'"'"'/) return 0
  return system("test -e '"'"'" path "'"'"'") == 0
}
function problem(msg) { print FILENAME ":" FNR ": " msg > "/dev/stderr"; bad = 1 }
FNR == 1 { fence = 0 }
is_fence($0) { fence = !fence; next }
fence { next }
{
  line = $0
  gsub(/`[^`]*`/, "", line)
  while (match(line, /\]\([^)]*\)/)) {
    target = substr(line, RSTART + 2, RLENGTH - 3)
    line = substr(line, RSTART + RLENGTH)
    sub(/[ \t].*$/, "", target)                   # a title after the target
    if (target == "" || target ~ /^[a-zA-Z][a-zA-Z0-9+.-]*:/) continue
    path = target
    anchor = ""
    if (index(target, "#")) {
      path = substr(target, 1, index(target, "#") - 1)
      anchor = substr(target, index(target, "#") + 1)
    }
    file = (path == "") ? FILENAME : dir_of(FILENAME) path
    if (path != "" && !exists(file)) { problem("link " target ": no such file " file); continue }
    if (anchor == "" || file !~ /\.md$/) continue
    load_anchors(file)
    if (!((file, anchor) in anchors)) problem("link " target ": no heading #" anchor " in " file)
  }
}
END { exit bad }
' README.md docs/*.md || status=1

if [ "$status" -ne 0 ]; then
  echo "check_docs: fix the documentation problems above (see $0)" >&2
  exit 1
fi
echo "check_docs: README.md has $lines lines, and every relative link in README.md and docs/ resolves"
