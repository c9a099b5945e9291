#!/bin/sh
# check_layers.sh [SOURCE_DIR]
#
# Fails (exit 1) when an #include crosses a layer the wrong way, naming
# file:line and the rule. Dependencies point down only (probe and policy
# know nothing of each other; the credential proxy uses policy; sandbox uses
# them all; the CLI uses everything):
#
#   probe-down       libprobe/ includes no mojoup/policy/, mojoup/sandbox/ or mojoup/credproxy/ header
#   policy-down      libpolicy/ includes no mojoup/probe/, mojoup/sandbox/ or mojoup/credproxy/ header
#   credproxy-down   libcredproxy/ includes no mojoup/sandbox/ or mojoup/probe/ header (only
#                    policy, internal and its own mojoup/credproxy/)
#   no-cli           no library (lib*/: include, src, testing, supervisor)
#                    includes anything from cli/
#   internal-leaf    internal/ includes no mojoup/probe|policy|sandbox|credproxy|service/ header
#   service-up       no layer below the service (libprobe/, libpolicy/, libcredproxy/,
#                    libsandbox/, internal/) includes a mojoup/service/ header,
#                    mojoup/sandbox/service.h or mojoup/mojoup.h (the service's and the
#                    whole API's headers, which live in libservice/)
#   client-thin      the service's protocol and client (libservice/src/protocol/,
#                    libservice/src/client/, mojoup/service/client.h) include nothing of
#                    the layers below but internal/ and the sandbox's plain request types
#                    (mojoup/sandbox/run_request.h, stdio.h), and nothing of the server or
#                    the worker (server/, worker/, mojoup/service/server.h): what a
#                    program that only talks to a service links is the protocol, the
#                    client and internal/
#
# Inside libsandbox/src (private headers are named from there, e.g.
# "runtime/native/stream_pump.h"), the facade (node/) sits on the session
# (session/), which reaches the runtimes (runtime/native/, runtime/openshell/)
# only through mojoup/sandbox/backend.h; staging/, guard/ and image/ sit
# below them all:
#
#   runtime-down     a runtime includes nothing of the session or the facade: no session/
#                    or node/ header, no mojoup/sandbox/session.h or node.h
#   runtime-apart    a runtime includes nothing of another runtime: no runtime/Y/ header,
#                    no mojoup/sandbox/Y_*.h (Y_backend.h, openshell_policy.h)
#   session-backend  session/ includes no runtime/ header and no mojoup/sandbox/native_*.h
#                    or openshell_*.h: it drives runtimes only through the Backend interface
#   parts-down       staging/, guard/, image/ include no node/, session/ or runtime/ header,
#                    no mojoup/sandbox/node|session|backend.h, native_*.h or openshell_*.h
#   public-internal  an installed header (lib*/include/) includes no mojoup/internal/ header
#   public-3rdparty  an installed header includes no boost/, openssl/, rapidjson/ or yaml-cpp/ header
#
# Exit 0: no crossing; 1: crossings (listed on stdout); 2: bad usage.
set -eu

root=${1:-$(dirname "$0")/..}
if [ ! -d "$root" ]; then
  echo "usage: $0 [SOURCE_DIR]" >&2
  exit 2
fi
cd "$root"

found=0
# check RULE REGEX DIR...: every #include line under DIR... that matches REGEX.
check() {
  rule=$1
  pattern=$2
  shift 2
  for dir in "$@"; do
    [ -d "$dir" ] || continue
    # -H and -n: "file:line:text" for each crossing.
    hits=$(find "$dir" -type f \( -name '*.h' -o -name '*.cc' -o -name '*.cpp' -o -name '*.hpp' \) \
             -exec grep -HnE "^[[:space:]]*#[[:space:]]*include[[:space:]]*[<\"]$pattern" {} + \
           || true)
    if [ -n "$hits" ]; then
      echo "$hits" | while IFS= read -r hit; do
        location=${hit%%:*}
        rest=${hit#*:}
        line=${rest%%:*}
        text=${rest#*:}
        echo "${location#./}:$line: $rule: $(echo "$text" | sed 's/^[[:space:]]*//')"
      done
      found=1
    fi
  done
}

libraries=$(find . -mindepth 1 -maxdepth 1 -type d -name 'lib*' | sort)
public_headers=$(for lib in $libraries; do echo "$lib/include"; done)

check probe-down 'mojoup/(policy|sandbox|credproxy)/' ./libprobe
check policy-down 'mojoup/(probe|sandbox|credproxy)/' ./libpolicy
check credproxy-down 'mojoup/(sandbox|probe)/' ./libcredproxy
# shellcheck disable=SC2086 # one directory per word
check no-cli '([.][.]/)*([^"<>]*/)?cli/' $libraries
check internal-leaf 'mojoup/(probe|policy|sandbox|credproxy|service)/' ./internal
check service-up '(mojoup/service/|mojoup/sandbox/service[.]h|mojoup/mojoup[.]h)' \
  ./libprobe ./libpolicy ./libcredproxy ./libsandbox ./internal

# The client's files: every mojoup/ header they include but internal/, the
# client's own and the two plain sandbox types is a crossing.
service=./libservice
client_files=$(find $service/src/protocol $service/src/client $service/include/mojoup/service/client.h \
                 -type f \( -name '*.h' -o -name '*.cc' \) 2> /dev/null || true)
for file in $client_files; do
  hits=$(grep -HnE '^[[:space:]]*#[[:space:]]*include[[:space:]]*[<"](mojoup/|(\.\./)*(server|worker)/)' "$file" |
         grep -vE '[<"]mojoup/(internal/|service/(client|reason)[.]h|sandbox/(run_request|stdio)[.]h|version[.]h)' || true)
  if [ -n "$hits" ]; then
    echo "$hits" | while IFS= read -r hit; do
      location=${hit%%:*}
      rest=${hit#*:}
      echo "${location#./}:${rest%%:*}: client-thin: $(echo "${rest#*:}" | sed 's/^[[:space:]]*//')"
    done
    found=1
  fi
done

src=./libsandbox/src
check runtime-down '(([.][.]/)*(session|node)/|mojoup/sandbox/(session|node)[.]h)' $src/runtime
check runtime-apart '(([.][.]/)*(runtime/)?openshell/|mojoup/sandbox/openshell_)' $src/runtime/native
check runtime-apart '(([.][.]/)*(runtime/)?native/|mojoup/sandbox/native_)' $src/runtime/openshell
check session-backend '(([.][.]/)*runtime/|mojoup/sandbox/(native|openshell)_)' $src/session
check parts-down \
  '(([.][.]/)*(node|session|runtime)/|mojoup/sandbox/((node|session|backend)[.]h|native_|openshell_))' \
  $src/staging $src/guard $src/image
# shellcheck disable=SC2086
check public-internal 'mojoup/internal/' $public_headers
# shellcheck disable=SC2086
check public-3rdparty '(boost|openssl|rapidjson|yaml-cpp)/' $public_headers

if [ "$found" -ne 0 ]; then
  echo "check_layers: includes cross layers the wrong way (see the rules in $0)" >&2
  exit 1
fi
echo "check_layers: no include crosses a layer the wrong way"
