#!/bin/sh
# check_function_length_fails_test.sh SOURCE_DIR
#
# The function-length check can fail: on a copy of a few real files with
# long functions planted, it must exit 1 and name each planted file:line,
# function and length, let one of exactly 100 lines pass, and on the same
# copy without them it must pass.
set -eu
source_dir=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT

mkdir -p "$tree/scripts" "$tree/libsandbox/src/fileinfo" "$tree/libcredproxy/src"
cp "$source_dir/scripts/check_function_length.sh" "$tree/scripts/"
cp "$source_dir/libsandbox/src/fileinfo/file_info.cc" "$source_dir/libsandbox/src/fileinfo/file_info.h" \
   "$tree/libsandbox/src/fileinfo/"
cp "$source_dir/libcredproxy/src/refusal.cc" "$source_dir/libcredproxy/src/refusal.h" "$tree/libcredproxy/src/"

if ! sh "$tree/scripts/check_function_length.sh" "$tree" > "$tree/clean.out" 2>&1; then
  echo "FAIL: the check rejects a clean tree:" && cat "$tree/clean.out"
  exit 1
fi

# plant FILE HEAD BODY_LINES: a function whose first line is HEAD and whose
# closing brace is BODY_LINES + 2 lines below it, after a comment line.
plant() {
  {
    echo "// planted"
    echo "$2 {"
    i=0
    while [ "$i" -lt "$3" ]; do
      echo "  total += $i;"
      i=$((i + 1))
    done
    echo "}"
  } >> "$1"
}
planted="$tree/libsandbox/src/fileinfo/planted.cc"
printf 'namespace mojoup::sandbox {\nint total = 0;\n' > "$planted"
plant "$planted" "void TooLong()" 99           # 101 lines, from line 4
plant "$planted" "void JustRight()" 98         # 100 lines
printf 'struct Holder {\n  void Long();\n};\n' >> "$planted"
plant "$planted" "void Holder::Long()" 150     # 152 lines
printf '}  // namespace mojoup::sandbox\n' >> "$planted"
printf 'namespace mojoup::credproxy {\nint total = 0;\n' > "$tree/libcredproxy/src/planted.h"
plant "$tree/libcredproxy/src/planted.h" "inline void InHeader()" 200  # 202 lines, from line 4
printf '}  // namespace mojoup::credproxy\n' >> "$tree/libcredproxy/src/planted.h"
# Every folder counts, test cases and programs' mains included.
mkdir -p "$tree/tests/sandbox" "$tree/cli"
printf '#include <catch2/catch.hpp>\nint total = 0;\n' > "$tree/tests/sandbox/planted_test.cc"
plant "$tree/tests/sandbox/planted_test.cc" 'TEST_CASE("a long test case", "[planted]")' 120
plant "$tree/tests/sandbox/planted_test.cc" 'TEST_CASE("a test case of 100 lines", "[planted]")' 98
printf 'int total = 0;\n' > "$tree/cli/planted.cc"
plant "$tree/cli/planted.cc" "int main()" 101

status=0
sh "$tree/scripts/check_function_length.sh" "$tree" > "$tree/planted.out" 2>&1 || status=$?
if [ "$status" -ne 1 ]; then
  echo "FAIL: expected exit 1 with long functions planted, got $status:" && cat "$tree/planted.out"
  exit 1
fi
for expected in \
  "libsandbox/src/fileinfo/planted.cc:4: TooLong is 101 lines (limit 100)" \
  "libsandbox/src/fileinfo/planted.cc:210: Holder::Long is 152 lines (limit 100)" \
  "libcredproxy/src/planted.h:4: InHeader is 202 lines (limit 100)" \
  "tests/sandbox/planted_test.cc:4: TEST_CASE is 122 lines (limit 100)" \
  "cli/planted.cc:3: main is 103 lines (limit 100)"; do
  if ! grep -qF "$expected" "$tree/planted.out"; then
    echo "FAIL: the output does not name '$expected':" && cat "$tree/planted.out"
    exit 1
  fi
done
if grep -q "JustRight\|planted_test.cc:127" "$tree/planted.out"; then
  echo "FAIL: a function of exactly 100 lines was flagged:" && cat "$tree/planted.out"
  exit 1
fi

status=0
sh "$tree/scripts/check_function_length.sh" "$tree/no-such-dir" > "$tree/usage.out" 2>&1 || status=$?
if [ "$status" -ne 2 ]; then
  echo "FAIL: expected exit 2 for a missing SOURCE_DIR, got $status:" && cat "$tree/usage.out"
  exit 1
fi
echo "check_function_length names every planted long function and passes the clean copy"
