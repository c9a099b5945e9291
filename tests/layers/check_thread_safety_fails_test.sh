#!/bin/sh
# check_thread_safety_fails_test.sh SOURCE_DIR
#
# The thread-safety check can fail: on a small tree of its own (a library
# whose header declares a member guarded by a lock, its source file compiled
# in a unity batch, as the project builds) it must pass while every access
# holds the lock, then, with a read of the member without the lock planted,
# exit 1 and name the planted FILE:LINE.
set -eu
source_dir=$1
tree=$(mktemp -d)
trap 'rm -rf "$tree"' EXIT

mkdir -p "$tree/scripts" "$tree/libdemo/src" "$tree/build/Unity"
cp "$source_dir/scripts/check_thread_safety.sh" "$tree/scripts/"
cat > "$tree/libdemo/src/counter.h" <<'CODE'
#pragma once
#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
class Counter {
 public:
  void Add() ABSL_LOCKS_EXCLUDED(mu_);
  int Get() ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void AddLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { ++count_; }
  absl::Mutex mu_;
  int count_ ABSL_GUARDED_BY(mu_) = 0;
};
CODE
cat > "$tree/libdemo/src/counter.cc" <<'CODE'
#include "counter.h"
void Counter::Add() {
  absl::MutexLock lock(&mu_);
  AddLocked();
}
int Counter::Get() {
  absl::MutexLock lock(&mu_);
  return count_;
}
CODE
printf '#include "%s"\n' "$tree/libdemo/src/counter.cc" > "$tree/build/Unity/unity_0_cxx.cxx"
cat > "$tree/build/compile_commands.json" <<JSON
[
{
  "directory": "$tree/build",
  "command": "/usr/bin/c++ -DDEMO=\\\\\"a b\\\\\" -I$tree/libdemo/src -O2 -Werror -std=c++20 -o unity_0.o -c $tree/build/Unity/unity_0_cxx.cxx",
  "file": "$tree/build/Unity/unity_0_cxx.cxx",
  "output": "unity_0.o"
}
]
JSON

if ! sh "$tree/scripts/check_thread_safety.sh" "$tree" "$tree/build" > "$tree/clean.out" 2>&1; then
  echo "FAIL: the check rejects code that holds its lock:" && cat "$tree/clean.out"
  exit 1
fi

# Planted: the member read without its lock, on line 10 of counter.cc.
cat >> "$tree/libdemo/src/counter.cc" <<'CODE'
int Peek(Counter& counter);
CODE
sed -i 's/^int Peek.*/int Counter::Peek() { return count_; }/' "$tree/libdemo/src/counter.cc"
sed -i 's/^  int Get() ABSL_LOCKS_EXCLUDED(mu_);/&\n  int Peek();/' "$tree/libdemo/src/counter.h"
status=0
sh "$tree/scripts/check_thread_safety.sh" "$tree" "$tree/build" > "$tree/planted.out" 2>&1 || status=$?
if [ "$status" -ne 1 ]; then
  echo "FAIL: the check exits $status, not 1, on a read without the lock:" && cat "$tree/planted.out"
  exit 1
fi
if ! grep -q "counter.cc:10:.*requires holding mutex 'mu_'" "$tree/planted.out"; then
  echo "FAIL: the check does not name the planted read (counter.cc:10):" && cat "$tree/planted.out"
  exit 1
fi
echo "check_thread_safety passes code that holds its lock and names a read without it"
