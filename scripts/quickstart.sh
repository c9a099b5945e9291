#!/usr/bin/env bash
# The README's quick start, on a fresh Debian 12 machine:
#
#   scripts/quickstart.sh doctor   install what is needed, build, run `mojoup-node doctor`
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

install_packages() {
  local packages
  packages=$(sed -e 's/#.*//' third_party/debian-packages.txt | awk 'NF {print $1}')
  # A node that already has a Docker engine (Docker CE, say) keeps it:
  # Debian's docker.io would conflict with it.
  if command -v dockerd > /dev/null 2>&1; then
    packages=$(echo "$packages" | grep -vx 'docker.io')
  fi
  echo "==> installing Debian packages"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $packages \
    > /tmp/mojoup-apt.log 2>&1 || { cat /tmp/mojoup-apt.log >&2; exit 1; }
}

build() {
  echo "==> building (preset default)"
  cmake --preset default > /dev/null
  cmake --build --preset default
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

ensure_dockerd() {
  if docker_answers; then return; fi
  echo "==> starting dockerd (log: /tmp/mojoup-dockerd.log)"
  # No registry is reachable and the sandboxes run with no network, so the
  # default bridge and iptables rules are not needed.
  $sudo sh -c 'dockerd --iptables=false --bridge=none > /tmp/mojoup-dockerd.log 2>&1 & echo $!' \
    > /tmp/mojoup-dockerd.pid
  started_dockerd=$(cat /tmp/mojoup-dockerd.pid)
  trap stop_dockerd EXIT
  for _ in $(seq 1 120); do
    if docker_answers; then return; fi
    sleep 0.5
  done
  echo "dockerd did not answer within 60 s; its log:" >&2
  tail -n 20 /tmp/mojoup-dockerd.log >&2
  exit 1
}

install_packages
case "$mode" in
  doctor)
    build
    echo "==> mojoup-node doctor"
    exec ./build/default/bin/mojoup-node doctor
    ;;
  test)
    ensure_dockerd
    echo "==> configure, build and test (preset default)"
    cmake --workflow --preset default
    echo "==> configure, build and unit-test under ASan + UBSan (preset asan)"
    cmake --workflow --preset asan
    ;;
esac
