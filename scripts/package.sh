#!/bin/bash
# The Debian package mojoup-node_<version>_<arch>.deb (cmake/Package.cmake,
# docs/debian-package.md).
#
#   scripts/package.sh build [BUILD_DIR]   cpack the .deb from a configured
#                                          build directory (default
#                                          build/default), building only what
#                                          it holds; prints the .deb's path
#   scripts/package.sh check DEB           as root: lintian (warnings shown,
#                                          errors fail), apt-get install,
#                                          `dpkg -L` against the .deb, doctor
#                                          from /usr/bin as root and as a
#                                          normal user, remove --purge, and
#                                          nothing of it left
#
# check runs doctor as $PACKAGE_USER (default mojoup-tester, the tests' user,
# made in the docker group when missing). Doctor's verdict may be either
# unless CI is set, when the machine must be able to sandbox agents.
# Exits nonzero with one sentence on stderr on any failure.
set -euo pipefail

die() {
  echo "package.sh: $*" >&2
  exit 1
}

usage() {
  die "usage: scripts/package.sh build [BUILD_DIR] | check DEB"
}

source_dir=$(cd "$(dirname "$0")/.." && pwd)
log=$(mktemp)
config=""
installed=""
# A check that fails after installing the package takes it away again.
cleanup() {
  rm -f "$log"
  [[ -z $config ]] || rm -rf "$(dirname "$config")"
  [[ -z $installed ]] || DEBIAN_FRONTEND=noninteractive apt-get remove -y --purge mojoup-node >/dev/null 2>&1 || true
}
trap cleanup EXIT

# Runs a command with its output in $log; on failure shows the log's end and
# dies with SENTENCE.
quietly() {
  local sentence=$1
  shift
  if ! "$@" >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    die "$sentence"
  fi
}

build() {
  local dir=${1:-$source_dir/build/default}
  [[ -f $dir/CMakeCache.txt ]] || die "$dir is not a configured build directory: run \`cmake --preset default' first."
  [[ -f $dir/CPackConfig.cmake ]] || quietly "cmake could not reconfigure $dir." cmake "$dir"
  local version
  version=$(sed -n 's/^CMAKE_PROJECT_VERSION:STATIC=//p' "$dir/CMakeCache.txt")
  head -n 1 "$source_dir/packaging/debian/changelog" | grep -qF "mojoup-node ($version)" ||
    die "packaging/debian/changelog's first entry is not for version $version: add one."
  # The two programs, the man page and completion made from the CLI's help,
  # the gzipped documents; cmake --build honours CMAKE_BUILD_PARALLEL_LEVEL.
  # Its output goes to stderr: stdout is the .deb's path alone.
  cmake --build "$dir" --target mojoup-node-deb-files >&2 ||
    die "the package's files did not build in $dir."
  quietly "cpack could not make the package in $dir." cpack --config "$dir/CPackConfig.cmake" -B "$dir/package"
  local deb
  deb="$dir/package/mojoup-node_${version}_$(dpkg --print-architecture).deb"
  [[ -f $deb ]] || die "cpack made no $deb."
  echo "$deb"
}

# The paths the .deb holds, as dpkg -L spells them.
deb_paths() {
  dpkg-deb --fsys-tarfile "$1" | tar -t | sed -e 's|^\./|/|' -e 's|/$||' -e 's|^$|/.|' | sort -u
}

# Runs a command as USER (root or a normal user) with a clean environment
# and the check's node config (the native runtime: OpenShell is not needed).
as_user() {
  local user=$1 home
  shift
  home=$(getent passwd "$user" | cut -d: -f6)
  local vars=(PATH=/usr/bin:/bin HOME="$home" LANG=C.UTF-8 MOJOUP_NODE_CONFIG="$config")
  if [[ $user == root ]]; then
    (cd / && env -i "${vars[@]}" "$@")
  else
    (cd / && runuser -u "$user" -- env -i "${vars[@]}" "$@")
  fi
}

# Runs doctor from the installed package as USER, and says its verdict.
doctor_as() {
  local user=$1 out code=0
  out=$(as_user "$user" /usr/bin/mojoup-node doctor 2>&1) || code=$?
  local verdict=${out%%$'\n'*}
  echo "  as $user: exit $code: $verdict"
  case $code:$verdict in
    "0:Agents run in a sandbox.") ;;
    "1:This machine cannot sandbox agents: "*)
      [[ -z ${CI:-} ]] || { echo "$out" >&2; die "the installed mojoup-node doctor says this machine cannot sandbox agents (as $user), and CI is set."; }
      ;;
    *)
      echo "$out" >&2
      die "the installed mojoup-node doctor did not give a verdict as $user (exit $code)."
      ;;
  esac
}

# A session as USER in a repository whose policy requires a sandbox: the
# installed CLI finds the installed sandbox init (../libexec/mojoup/).
session_as() {
  local user=$1 version=$2 repo out code=0 uid
  uid=$(id -u "$user")
  local image=mojoup/agents:$version
  if ! docker image inspect "$image" >/dev/null 2>&1; then
    echo "  no session: the agent image $image is not on this node's Docker (mojoup-node image build)"
    return 0
  fi
  repo=$(runuser -u "$user" -- mktemp -d /tmp/mojoup-package-check.XXXXXX)
  as_user "$user" sh -c "git init -q '$repo' && mkdir '$repo/.mojoup' &&
    echo '{\"agents\": {\"sandbox\": \"required\"}}' > '$repo/.mojoup/policy.json'"
  # shellcheck disable=SC2016 # $(id -u) is the sandbox's to expand.
  out=$(as_user "$user" /usr/bin/mojoup-node run --repo "$repo" -- sh -c 'echo "in a sandbox as uid $(id -u)"' 2>&1) ||
    code=$?
  rm -rf "$repo"
  echo "  as $user: exit $code: ${out##*$'\n'}"
  [[ $code == 0 && $out == *"in a sandbox as uid $uid"* ]] || {
    echo "$out" >&2
    die "a session from the installed mojoup-node did not run in a sandbox as $user (exit $code)."
  }
}

check() {
  local deb=${1:-}
  [[ -n $deb ]] || usage
  [[ -f $deb ]] || die "$deb does not exist."
  deb=$(realpath "$deb")
  [[ $(id -u) == 0 ]] || die "check installs the package, so it must run as root."
  command -v lintian >/dev/null || die "lintian is missing: apt-get install lintian."
  if dpkg-query -W -f='${db:Status-Status}' mojoup-node 2>/dev/null | grep -qv '^not-installed$'; then
    die "mojoup-node is already installed here: remove it with \`apt-get remove --purge mojoup-node' first."
  fi

  echo "==> lintian $deb"
  local lint=0
  lintian --fail-on error --display-info "$deb" >"$log" 2>&1 || lint=$?
  grep -v 'running with root privileges' "$log" || true
  ((lint == 0)) || die "lintian found errors in $deb."

  # What of the package's paths (and of the state it may make) is here
  # before it comes: the rest must be gone after the purge.
  local paths before=() path
  mapfile -t paths < <(deb_paths "$deb")
  for path in "${paths[@]}" /etc/mojoup /etc/mojoup/node.json /var/lib/mojoup /run/mojoup; do
    [[ -e $path ]] && before+=("$path")
  done

  echo "==> apt-get install $deb"
  installed=1
  quietly "apt-get could not install $deb." env DEBIAN_FRONTEND=noninteractive apt-get install -y "$deb"

  echo "==> dpkg -L mojoup-node"
  local listed
  listed=$(dpkg -L mojoup-node | sort -u)
  [[ $listed == "$(printf '%s\n' "${paths[@]}")" ]] ||
    die "dpkg -L mojoup-node lists other paths than the package holds: $(diff <(echo "$listed") <(printf '%s\n' "${paths[@]}") | grep '^[<>]' | tr '\n' ' ')"
  while read -r path; do
    [[ $path == /. ]] && continue
    [[ -e $path ]] || die "dpkg -L mojoup-node lists $path, which is not there."
    [[ $path =~ ^/(usr|lib|etc)(/|$) ]] || die "the package installs $path, outside /usr, /lib and /etc."
  done <<<"$listed"
  echo "  $(grep -c . <<<"$listed") paths, all present, all under /usr, /lib or /etc"

  echo "==> systemd-analyze verify (the units)"
  if command -v systemd-analyze >/dev/null; then
    quietly "systemd-analyze verify finds fault with the system unit." \
      systemd-analyze verify /lib/systemd/system/mojoup-node.service
    # No user manager runs here: a runtime directory of its own stands in.
    local runtime
    runtime=$(mktemp -d)
    quietly "systemd-analyze verify finds fault with the user unit." \
      env XDG_RUNTIME_DIR="$runtime" systemd-analyze --user verify /usr/lib/systemd/user/mojoup-node.service
    rm -rf "$runtime"
    echo "  both units verify"
  else
    echo "  systemd-analyze is missing: the units are not verified"
  fi

  echo "==> mojoup-node doctor (installed, native runtime)"
  config=$(mktemp -d)/node.json
  echo '{"node.sandbox.runtime": "native", "node.sandbox.allowed_users": "*"}' >"$config"
  chmod 755 "$(dirname "$config")" && chmod 644 "$config"
  doctor_as root
  local user=${PACKAGE_USER:-mojoup-tester}
  if ! id "$user" >/dev/null 2>&1; then
    quietly "could not create the user $user." useradd --create-home --shell /bin/sh "$user"
  fi
  getent group docker >/dev/null && ! id -nG "$user" | grep -qw docker &&
    quietly "could not add $user to the docker group." usermod -aG docker "$user"
  doctor_as "$user"
  echo "==> mojoup-node run (installed, native runtime)"
  session_as "$user" "$(dpkg-deb -f "$deb" Version)"
  rm -rf "$(dirname "$config")"

  echo "==> apt-get remove --purge mojoup-node"
  quietly "apt-get could not remove mojoup-node." env DEBIAN_FRONTEND=noninteractive apt-get remove -y --purge mojoup-node
  installed=""
  [[ $(dpkg-query -W -f='${db:Status-Status}' mojoup-node 2>/dev/null || echo not-installed) == not-installed ]] ||
    die "dpkg still knows mojoup-node after apt-get remove --purge."
  local left=()
  for path in "${paths[@]}" /etc/mojoup /etc/mojoup/node.json /var/lib/mojoup /run/mojoup; do
    [[ -e $path ]] || continue
    [[ " ${before[*]} " == *" $path "* ]] || left+=("$path")
  done
  ((${#left[@]} == 0)) || die "apt-get remove --purge mojoup-node left ${left[*]} behind."
  echo "  nothing of mojoup-node is left"
  echo "The package $(basename "$deb") passed: lintian, install, doctor, purge."
}

case ${1:-} in
  build) build "${2:-}" ;;
  check) check "${2:-}" ;;
  *) usage ;;
esac
