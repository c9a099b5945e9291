#!/bin/sh
# check_layers.sh [SOURCE_DIR]
#
# Fails (exit 1) when an #include crosses a layer the wrong way, naming
# file:line and the rule. Dependencies point down only (probe and policy
# know nothing of each other; sandbox uses both; the CLI uses them all):
#
#   probe-down       libprobe/ includes no mojoup/policy/ or mojoup/sandbox/ header
#   policy-down      libpolicy/ includes no mojoup/probe/ or mojoup/sandbox/ header
#   no-cli           no library (lib*/: include, src, testing, supervisor)
#                    includes anything from cli/
#   internal-leaf    internal/ includes no mojoup/probe|policy|sandbox/ header
#   public-internal  an installed header (lib*/include/) includes no mojoup/internal/ header
#   public-3rdparty  an installed header includes no boost/, openssl/ or rapidjson/ header
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

check probe-down 'mojoup/(policy|sandbox)/' ./libprobe
check policy-down 'mojoup/(probe|sandbox)/' ./libpolicy
# shellcheck disable=SC2086 # one directory per word
check no-cli '([.][.]/)*([^"<>]*/)?cli/' $libraries
check internal-leaf 'mojoup/(probe|policy|sandbox)/' ./internal
# shellcheck disable=SC2086
check public-internal 'mojoup/internal/' $public_headers
# shellcheck disable=SC2086
check public-3rdparty '(boost|openssl|rapidjson)/' $public_headers

if [ "$found" -ne 0 ]; then
  echo "check_layers: includes cross layers the wrong way (see the rules in $0)" >&2
  exit 1
fi
echo "check_layers: no include crosses a layer the wrong way"
