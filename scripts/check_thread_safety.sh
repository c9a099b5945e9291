#!/bin/sh
# check_thread_safety.sh [SOURCE_DIR [BUILD_DIR]]
#
# Runs Clang's thread-safety analysis (-Wthread-safety, as errors) over the
# translation units that hold lock-guarded state: every source file of the
# libraries, the CLI and internal/ that carries an Abseil lock annotation
# (ABSL_GUARDED_BY, ABSL_EXCLUSIVE_LOCKS_REQUIRED, ...), and for an annotated
# header every source file of theirs the build compiles that includes it (any
# of them may touch the state it declares). Each is compiled with
# -fsyntax-only and the include paths and defines its build gives it
# (BUILD_DIR/compile_commands.json, default SOURCE_DIR/build/default), two at
# a time. The project builds with g++; this check needs clang++ (Debian's
# clang).
#
# A member marked ABSL_GUARDED_BY(mu_) read or written without mu_ held, or a
# function marked ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) called without it, fails
# the check, naming the file and line.
set -eu

source_dir=$(cd "${1:-.}" && pwd)
build_dir=$(cd "${2:-$source_dir/build/default}" && pwd)
database=$build_dir/compile_commands.json
clang=${CLANGXX:-clang++}

if ! command -v "$clang" > /dev/null 2>&1; then
  echo "check_thread_safety: $clang not found (Debian: apt-get install clang)" >&2
  exit 1
fi
if [ ! -f "$database" ]; then
  echo "check_thread_safety: no $database (configure with cmake --preset default)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# One line per compile command, "FILE<TAB>COMMAND", JSON escapes undone
# (CMake writes each "command" line just before its "file" line).
sed -n -e 's/^ *"command": "\(.*\)",$/C\1/p' -e 's/^ *"file": "\(.*\)",\{0,1\}$/F\1/p' "$database" |
  sed -e 's/\\\\/\x01/g' -e 's/\\"/"/g' -e 's/\x01/\\/g' |
  awk '/^C/ {command = substr($0, 2); next} /^F/ {print substr($0, 2) "\t" command}' \
    > "$work/commands"
cut -f1 "$work/commands" > "$work/compiled"

# The unity batch (or the file itself) whose command compiles `file`.
command_for() {
  line=$(awk -F '\t' -v f="$1" '$1 == f {print; exit}' "$work/commands")
  if [ -z "$line" ]; then
    batch=$(grep -lF "#include \"$1\"" $(grep '/Unity/' "$work/compiled") 2> /dev/null | head -n 1)
    [ -n "$batch" ] && line=$(awk -F '\t' -v f="$batch" '$1 == f {print; exit}' "$work/commands")
  fi
  printf '%s\n' "$line" | cut -f2-
}

# Every file the build compiles, unity batches opened up.
{
  grep -v '/Unity/' "$work/compiled" || true
  grep '/Unity/' "$work/compiled" | while read -r batch; do
    sed -n 's/^#include "\(.*\)"$/\1/p' "$batch"
  done
} | sort -u > "$work/sources"
grep -E "^$source_dir/(lib[^/]*|cli|internal)/" "$work/sources" > "$work/ours" || true

cd "$source_dir"
annotated=$(grep -rlE 'ABSL_(PT_)?GUARDED_BY|ABSL_(EXCLUSIVE|SHARED)_LOCKS_REQUIRED|ABSL_LOCKS_EXCLUDED' \
  --include='*.cc' --include='*.h' lib* cli internal 2> /dev/null || true)
for file in $annotated; do
  case "$file" in
    *.cc) echo "$source_dir/$file" ;;
    *.h)
      includers=$(grep -lE "#include [<\"](.*/)?$(basename "$file")[>\"]" $(cat "$work/ours") \
        2> /dev/null || true)
      if [ -z "$includers" ]; then
        echo "check_thread_safety: no source file the build compiles includes $file" >&2
        exit 1
      fi
      echo "$includers"
      ;;
  esac
done > "$work/units.unsorted"
sort -u "$work/units.unsorted" > "$work/units"

# The flags a unit's build gives it that matter to a parse: includes, defines,
# the standard, forced includes; the compiler, warnings and outputs go.
: > "$work/jobs"
while read -r unit; do
  command=$(command_for "$unit")
  if [ -z "$command" ]; then
    echo "check_thread_safety: $unit is in no compile command of $database" >&2
    exit 1
  fi
  printf '%s\t%s\n' "$unit" "$command" >> "$work/jobs"
done < "$work/units"

cat > "$work/one.sh" << 'EOF'
unit=$(printf '%s\n' "$1" | cut -f1)
command=$(printf '%s\n' "$1" | cut -f2-)
eval "set -- $command"
shift  # the compiler
for argument in "$@"; do
  shift
  case "$keep_next" in
    yes) set -- "$@" "$argument"; keep_next=; continue ;;
    drop) keep_next=; continue ;;
  esac
  case "$argument" in
    -D* | -I* | -std=*) set -- "$@" "$argument" ;;
    -include | -isystem) set -- "$@" "$argument"; keep_next=yes ;;
    -o | -c) keep_next=drop ;;
  esac
done
exec "$CLANGXX" -fsyntax-only -Wno-everything -Wthread-safety -Werror=thread-safety "$@" "$unit"
EOF

count=$(wc -l < "$work/jobs")
echo "check_thread_safety: analysing $count translation unit(s):"
cut -f1 "$work/jobs" | sed "s|^$source_dir/|  |"
status=0
tr '\n' '\0' < "$work/jobs" | CLANGXX=$clang xargs -0 -P2 -n1 sh "$work/one.sh" || status=$?
if [ "$status" -ne 0 ]; then
  echo "check_thread_safety: Clang's thread-safety analysis failed (see above)" >&2
  exit 1
fi
echo "check_thread_safety: $count translation unit(s) hold their locks as annotated"
