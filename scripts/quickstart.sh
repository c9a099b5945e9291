#!/usr/bin/env bash
# The README's quick start, on a fresh Debian 12 machine:
#
#   scripts/quickstart.sh doctor   install what is needed, build the two programs it runs
#                                  (mojoup-node, mojoup-sandbox-init), run `mojoup-node doctor`,
#                                  build the agent image unless the node's Docker has it with
#                                  the pinned agents, and run `claude --version` in a sandbox
#                                  as a normal user (mojoup-demo, made for it)
#   scripts/quickstart.sh test     install, build, start dockerd if none answers, run every
#                                  test (default preset), then the unit tests under ASan+UBSan
#
# Run it as root or as a user with sudo. Packages: third_party/debian-packages.txt.
set -euo pipefail

cd "$(dirname "$0")/.."
mode="${1:-}"
case "$mode" in
  doctor|test) ;;
  *) echo "usage: $0 doctor|test" >&2; exit 2 ;;
esac

sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi

# Each phase's seconds, "name|seconds|outcome", printed as a table at the
# end, with the ten slowest tests: where the time goes, run by run.
phases=()
failed_phases=0
script_started=$(date +%s)
# phase_row NAME SECONDS RC: one row of the table.
phase_row() {
  phases+=("$1|$2|$([ "$3" -eq 0 ] && echo ok || echo "failed ($3)")")
}

# phase NAME COMMAND...: runs COMMAND, timed. A failed test phase is
# counted and the rest go on, as one ctest run would; any other ends the
# script.
phase() {
  local name="$1" started rc=0
  shift
  started=$(date +%s)
  "$@" || rc=$?
  phase_row "$name" "$(($(date +%s) - started))" "$rc"
  if [ "$rc" -ne 0 ]; then
    case "$name" in
      test:*) failed_phases=$((failed_phases + 1)) ;;
      *) exit "$rc" ;;
    esac
  fi
}

print_phases() {
  [ "${#phases[@]}" -gt 0 ] || return 0
  echo "==> phases (seconds)"
  local row
  for row in "${phases[@]}"; do
    IFS='|' read -r name seconds outcome <<< "$row"
    printf '  %-40s %6s  %s\n' "$name" "$seconds" "$outcome"
  done
  printf '  %-40s %6s\n' "total" "$(($(date +%s) - script_started))"
  local junit
  junit=$(ls build/*/junit-*.xml 2> /dev/null || true)
  [ -n "$junit" ] || return 0
  echo "==> the ten slowest tests (seconds)"
  # CTest's JUnit: <testcase name="..." classname="..." time="..." status="...">
  # shellcheck disable=SC2086
  sed -n 's/.*<testcase name="\([^"]*\)".* time="\([0-9.]*\)".*/\2|\1/p' $junit |
    sed -e 's/&quot;/"/g' -e "s/&apos;/'/g" -e 's/&lt;/</g' -e 's/&gt;/>/g' -e 's/&amp;/\&/g' |
    sort -t'|' -k1,1 -g -r | awk 'NR <= 10' |
    while IFS='|' read -r seconds name; do printf '  %8.1f  %s\n' "$seconds" "$name"; done
}

# The script's own exit code stands, whatever the table's printing does.
on_exit() {
  local rc=$?
  stop_asan
  stop_images
  print_phases || true
  stop_dockerd
  exit "$rc"
}
trap on_exit EXIT

# all_installed PACKAGE...: dpkg knows each, and each is installed ("ii").
all_installed() {
  local status
  status=$(dpkg-query -W -f='${db:Status-Abbrev}\n' "$@" 2> /dev/null) || return 1
  ! echo "$status" | grep -qv '^ii'
}

install_packages() {
  local packages
  packages=$(sed -e 's/#.*//' third_party/debian-packages.txt | awk 'NF {print $1}')
  # A node that already has a Docker engine (Docker CE, say) keeps it:
  # Debian's docker.io would conflict with it.
  if command -v dockerd > /dev/null 2>&1; then
    packages=$(echo "$packages" | grep -vx 'docker.io')
  fi
  # shellcheck disable=SC2086
  if all_installed $packages; then
    echo "==> the Debian packages are installed: no index to update, nothing to fetch"
    return 0
  fi
  echo "==> installing Debian packages"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $packages \
    > /tmp/mojoup-apt.log 2>&1 || { cat /tmp/mojoup-apt.log >&2; exit 1; }
}

# Only what doctor runs: the tests and benchmarks are `test`'s to build (a
# fresh clone builds these two in well under a minute, everything in many).
build_programs() {
  echo "==> building mojoup-node and mojoup-sandbox-init (preset default)"
  cmake --preset default > /dev/null
  cmake --build --preset default --target mojoup-node mojoup-sandbox-init
}

docker_answers() {
  curl -fsS --max-time 2 --unix-socket /var/run/docker.sock http://docker/_ping > /dev/null 2>&1
}

started_dockerd=""
stop_dockerd() {
  if [ -n "$started_dockerd" ]; then
    echo "==> stopping the dockerd this script started"
    $sudo kill "$started_dockerd" 2> /dev/null || true
    for _ in $(seq 1 50); do
      $sudo kill -0 "$started_dockerd" 2> /dev/null || break
      sleep 0.2
    done
  fi
}

# ensure_dockerd [keep]: with "keep" a dockerd this script starts goes on
# running after it (the node needs it); else it is stopped on the way out.
ensure_dockerd() {
  if docker_answers; then return; fi
  echo "==> starting dockerd (log: /tmp/mojoup-dockerd.log)"
  # No registry is reachable and the sandboxes run with no network, so the
  # default bridge and iptables rules are not needed.
  $sudo sh -c 'dockerd --iptables=false --bridge=none > /tmp/mojoup-dockerd.log 2>&1 & echo $!' \
    > /tmp/mojoup-dockerd.pid
  if [ "${1:-}" != keep ]; then
    started_dockerd=$(cat /tmp/mojoup-dockerd.pid)
  fi
  for _ in $(seq 1 120); do
    if docker_answers; then return; fi
    sleep 0.5
  done
  echo "dockerd did not answer within 60 s; its log:" >&2
  tail -n 20 /tmp/mojoup-dockerd.log >&2
  exit 1
}

# A normal user in the docker group, with a repository under its home, as
# node operators run sessions: made for the demo, so that no one's own
# account changes. The programs are copied to its ~/.local/bin, as the
# checkout may be unreadable to it; its node config says: sandbox role on,
# native runtime, this user allowed.
demo_user=mojoup-demo
demo_home=""
as_demo() {
  $sudo runuser -u "$demo_user" -- env -i HOME="$demo_home" USER="$demo_user" \
    LOGNAME="$demo_user" PATH="$demo_home/.local/bin:/usr/local/bin:/usr/bin:/bin" \
    sh -c "cd ~/src/hello && $1"
}
make_demo_user() {
  if ! id "$demo_user" > /dev/null 2>&1; then
    echo "==> creating the user $demo_user (in the docker group) for a sandboxed session"
    $sudo useradd --create-home --shell /bin/sh "$demo_user"
  fi
  $sudo usermod -aG docker "$demo_user"
  demo_home=$(getent passwd "$demo_user" | cut -d: -f6)
  # Every directory named, parents too: install -d makes missing parents
  # root's, and the node keeps its state in ~/.local/state.
  $sudo install -d -o "$demo_user" -g "$demo_user" "$demo_home/.local" "$demo_home/.local/bin" \
    "$demo_home/src" "$demo_home/src/hello"
  $sudo install -o "$demo_user" -g "$demo_user" build/default/bin/mojoup-node \
    build/default/bin/mojoup-sandbox-init "$demo_home/.local/bin/"
  as_demo "git init -q; mojoup-node setup --role on --runtime native --engine docker --allowed-users $demo_user > /dev/null"
}

# agent_image_current: the node's Docker already holds the agent image the
# session uses, with exactly the agents image/agents.txt pins (the pins this
# build compiled in), so it need not be built again. `mojoup-node status
# --json` says what the image's labels name ("image": {..., "agents":
# {"claude-code": "2.1.332", ...}}, or null when Docker lacks it).
agent_image_current() {
  local status pinned held
  status=$(as_demo "mojoup-node status --json" 2> /dev/null) || return 1
  pinned=$(awk '/^[^#[:space:]]/ {print $1 "=" $3}' image/agents.txt | sort)
  held=$(echo "$status" | grep -o '"agents": *{[^}]*}' | head -n 1 | grep -o '"[^"]*": *"[^"]*"' \
           | sed 's/"\([^"]*\)": *"\([^"]*\)"/\1=\2/' | sort || true)
  [ -n "$pinned" ] && [ "$pinned" = "$held" ]
}

# Tests run side by side, one per core at least: most of a session test's
# time is spent waiting on dockerd. Tests that share a port, a user's home
# or an image build say so (RESOURCE_LOCK, RUN_SERIAL, FIXTURES in
# tests/CMakeLists.txt).
test_jobs=$(nproc)
[ "$test_jobs" -ge 2 ] || test_jobs=2

# The layer labels (tests/CMakeLists.txt): each test carries one beside its
# kind, and selects again tests a kind label already ran. `service` is both a
# kind and a layer, and runs as a kind.
layer_labels=" internal probe policy credproxy sandbox cli tree "

# run_tests PRESET: each kind label's tests in a phase of its own, with a
# JUnit report for the slowest-tests table.
run_tests() {
  local preset="$1" label labels
  rm -f "build/$preset"/junit-*.xml
  labels=$(ctest --preset "$preset" --print-labels | awk '/^  / {print $1}')
  for label in $labels; do
    case "$layer_labels" in *" $label "*) continue ;; esac
    phase "test: $label ($preset)" ctest --preset "$preset" -j "$test_jobs" -L "^${label}\$" \
      --output-junit "$PWD/build/$preset/junit-$label.xml"
  done
}

# The images the tests make for themselves when missing (the node image of
# the runtimes tests, the debian:12-slim stand-in of the registry path's),
# made beside the build instead, niced below the build and the tests but
# above the asan build: each maker script takes a lock, so a test that gets
# there first waits for it and then finds its image. The stand-in is removed
# at exit when this script made it (build/images/stand-in).
images_pid=""
images_beside() {
  rm -rf build/images
  mkdir -p build/images
  local node_image
  node_image=$(sed -n 's/.*kNodeImage = "\([^"]*\)".*/\1/p' tests/support/sandbox_image.h)
  # shellcheck disable=SC2016 # the inner shell expands these
  setsid sh -c '
    started=$(date +%s)
    rc=0
    nice -n 10 tests/support/make_registry_base.sh > build/images/stand-in 2> build/images/log &&
      nice -n 10 tests/support/make_node_image.sh "$1" 2>> build/images/log || rc=$?
    echo "$rc $(($(date +%s) - started))" > build/images/result' sh "$node_image" &
  images_pid=$!
}
stop_images() {
  [ -n "$images_pid" ] || return 0
  kill -- -"$images_pid" 2> /dev/null || true
  wait "$images_pid" 2> /dev/null || true
  if [ "$(cat build/images/stand-in 2> /dev/null)" = made ]; then
    docker image rm debian:12-slim > /dev/null 2>&1 || true
  fi
  if [ -s build/images/result ]; then
    local rc seconds
    read -r rc seconds < build/images/result
    phase_row "test images (beside the build)" "$seconds" "$rc"
  fi
  images_pid=""
}

# The asan build is all compiling and the session tests mostly wait on
# dockerd: it runs beside them, niced so that the tests keep their share
# of the cores, and then its unit tests run beside them too. Each step
# writes "rc seconds" to build/asan/STEP.result, its own duration for the
# phase table, and its output to build/asan/STEP.log.
asan_pid=""
asan_beside() {
  rm -f build/asan/build.result build/asan/test.result build/asan/junit-*.xml
  (
    # beside STEP COMMAND...: in a session of its own (pid = process
    # group), so that a script that ends early stops it whole (stop_asan).
    beside() {
      local step="$1" started rc=0
      shift
      started=$(date +%s)
      setsid "$@" > "build/asan/$step.log" 2>&1 &
      echo $! > build/asan/beside.pid
      wait $! || rc=$?
      echo "$rc $(($(date +%s) - started))" > "build/asan/$step.result"
      return "$rc"
    }
    # Not the checks of the source tree (headers that compile alone, the
    # layers, function lengths): the default preset runs them, and they run
    # nothing a sanitizer could see.
    beside build nice -n 19 cmake --build --preset asan &&
      beside test ctest --preset asan -j "$test_jobs" -E '^unit[.](headers|layers)[.]' \
        --output-junit "$PWD/build/asan/junit-unit.xml"
  ) &
  asan_pid=$!
}
stop_asan() {
  if [ -n "$asan_pid" ] && [ ! -e build/asan/test.result ] && [ -s build/asan/beside.pid ]; then
    kill -- -"$(cat build/asan/beside.pid)" 2> /dev/null || true
  fi
}
# wait_asan: the rows of the asan build and of its unit tests, and the
# tests' output. A failed build ends the script; failed tests are a failed
# test phase.
wait_asan() {
  local rc seconds
  wait "$asan_pid" || true
  read -r rc seconds < build/asan/build.result
  phase_row "build (asan, beside the tests)" "$seconds" "$rc"
  if [ "$rc" -ne 0 ]; then
    tail -n 40 build/asan/build.log >&2
    exit "$rc"
  fi
  cat build/asan/test.log
  read -r rc seconds < build/asan/test.result
  phase_row "test: unit (asan, beside the tests)" "$seconds" "$rc"
  [ "$rc" -eq 0 ] || failed_phases=$((failed_phases + 1))
}

# The .deb from the default build, checked as an operator would use it.
package_deb() {
  local deb
  deb=$(scripts/package.sh build build/default) || return
  $sudo env CI=1 scripts/package.sh check "$deb"
}

phase "install packages" install_packages
case "$mode" in
  doctor)
    phase "build programs" build_programs
    phase "dockerd" ensure_dockerd keep
    make_demo_user
    echo "==> as $demo_user: mojoup-node doctor"
    as_demo "mojoup-node doctor" || exit $?
    if agent_image_current; then
      echo "==> the agent image is on this node's Docker with the agents image/agents.txt pins: not rebuilt"
    else
      echo "==> mojoup-node image build (the agent CLIs from the npm registry, on Debian 12)"
      phase "agent image" $sudo ./build/default/bin/mojoup-node image build
    fi
    echo "==> as $demo_user in ~/src/hello: mojoup-node run --tool claude-code -- claude --version"
    as_demo "mojoup-node run --tool claude-code -- claude --version"
    ;;
  test)
    phase "dockerd" ensure_dockerd
    echo "==> the tests' own images (a Debian stand-in, node and npm) beside the build"
    echo "    (log: build/images/log)"
    images_beside
    echo "==> configure, build and test (preset default)"
    phase "configure (default)" cmake --preset default
    phase "build (default)" cmake --build --preset default
    echo "==> the asan preset builds and runs its unit tests beside the tests, the build at low"
    echo "    priority (logs: build/asan/build.log, build/asan/test.log)"
    phase "configure (asan)" cmake --preset asan > /dev/null
    asan_beside
    run_tests default
    echo "==> the Debian package: build, install, doctor from it, remove (docs/debian-package.md)"
    phase "test: package (default)" package_deb
    echo "==> unit tests under ASan + UBSan (preset asan), run beside the others"
    wait_asan
    stop_images
    if [ "$failed_phases" -ne 0 ]; then
      echo "$failed_phases test phase(s) failed" >&2
      exit 1
    fi
    ;;
esac
