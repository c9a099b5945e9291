#!/bin/bash
# Writes mojoup-node's bash completion from the CLI's own help, so that it
# completes what the CLI takes without a list to keep in step by hand.
#
#   generate.sh MOJOUP_NODE OUTPUT
#
# Read from `mojoup-node --help`: the commands and their sub-commands (the
# lower-case second word of a synopsis: `config set|get|unset|list`). From
# `mojoup-node COMMAND [SUB] --help`: each command's options, whether an
# option takes a value, and the value's kind from the usage line (DIR: a
# directory, FILE or PATH: a file, on|off: those words). From `config --help`:
# the config keys and the values a key lists as "(a or b)".
# packaging/bash-completion/completion_test.sh checks the result against the CLI.
set -euo pipefail

cli=${1:?usage: generate.sh MOJOUP_NODE OUTPUT}
out=${2:?usage: generate.sh MOJOUP_NODE OUTPUT}

help_of() { "$cli" "$@" --help; }

# "config set|get|unset|list ..." -> "config set get unset list"
commands=$(help_of | awk '/^commands:/ { on = 1; next } on && /^$/ { exit }
  on { sub(/^ +/, ""); line = $1
       if ($2 ~ /^[a-z][a-z|]*$/) { subs = $2; gsub(/\|/, " ", subs); line = line " " subs }
       print line }')
[[ -n $commands ]] || { echo "generate.sh: no commands in \`$cli --help'" >&2; exit 1; }

# One command's options as "OPTION KIND" lines; KIND is flag, file, dir, any
# or words:A B.
options_of() {
  local text
  text=$(help_of "$@")
  awk '
    NR == 1 || (usage && /^ /) {
      # The usage lines name what each value is: [--repo DIR] [--base a|b|c].
      usage = 1
      n = split($0, word, /[][ ]+/)
      for (i = 1; i < n; i++) {
        if (word[i] !~ /^--[a-z]/) continue
        v = word[i + 1]
        if (v ~ /^DIR$/) kind[word[i]] = "dir"
        else if (v ~ /^(FILE|PATH)$/) kind[word[i]] = "file"
        else if (v ~ /^[a-z]+(\|[a-z]+)*$/) { gsub(/\|/, " ", v); kind[word[i]] = "words:" v }
      }
      next
    }
    { usage = 0 }
    /^ +(-[A-Za-z], )?--[a-z][a-z0-9-]*/ {
      line = $0
      sub(/^ +(-[A-Za-z], )?/, "", line)
      split(line, part, / +/)
      option = part[1]
      if (part[2] != "arg") print option, "flag"
      else if (option in kind) print option, kind[option]
      else if (line ~ / (file|FILE|socket)( |$)/) print option, "file"
      else print option, "any"
    }' <<<"$text"
}

# The keys `config set` takes, and "KEY words:A B" where the help lists them.
config_keys=$(help_of config | awk '/^keys:/ { on = 1; next } on && /^[^ ]/ { exit }
  on && /^  [^ ]/ {
    key = $1; sub(/<[A-Z_]+>$/, "", key)
    values = ""
    if (match($0, /\(([a-z]+)((, | or |, or )[a-z]+)*\)$/)) {
      values = substr($0, RSTART + 1, RLENGTH - 2); gsub(/,? or |, /, " ", values)
    }
    print key, values
  }')

{
  cat <<'EOF'
# bash completion for mojoup-node(1)
# Generated from mojoup-node's --help by packaging/bash-completion/generate.sh:
# do not edit, change the CLI's help instead.

_mojoup_node() {
  local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD - 1]}
  local -A subs=() opts=() kinds=() key_values=()
  local commands
EOF
  printf '  commands=%q\n' "$(cut -d' ' -f1 <<<"$commands" | tr '\n' ' ' | sed 's/ $//')"
  while read -r command sub_list; do
    [[ -n $sub_list ]] && printf '  subs[%q]=%q\n' "$command" "$sub_list"
    sub=${sub_list%% *}
    list=""
    while read -r option kind; do
      list+="$option "
      printf '  kinds[%q]=%q\n' "$command $option" "$kind"
    done < <(options_of "$command" ${sub:+"$sub"})
    printf '  opts[%q]=%q\n' "$command" "${list% }"
  done <<<"$commands"
  while read -r key values; do
    printf '  key_values[%q]=%q\n' "$key" "$values"
  done <<<"$config_keys"
  cat <<'EOF'

  if ((COMP_CWORD == 1)); then
    mapfile -t COMPREPLY < <(compgen -W "$commands --help --version" -- "$cur")
    return 0
  fi
  local command=${COMP_WORDS[1]} i word sub="" key="" operands=0
  # The words before the cursor: the sub-command, `config`'s key, and `--`
  # (after which `run` takes the sandbox's command line).
  for ((i = 2; i < COMP_CWORD; i++)); do
    word=${COMP_WORDS[i]}
    if [[ $word == -- ]]; then
      if ((i == COMP_CWORD - 1)); then
        mapfile -t COMPREPLY < <(compgen -c -- "$cur")
      else
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
      fi
      return 0
    elif [[ $word == -* ]]; then
      [[ ${kinds["$command $word"]:-flag} != flag ]] && ((i++))
    elif [[ -n ${subs[$command]:-} && -z $sub ]]; then
      sub=$word
    else
      ((operands++ == 0)) && key=$word
    fi
  done

  local kind=${kinds["$command $prev"]:-}
  case $kind in
    file) mapfile -t COMPREPLY < <(compgen -f -- "$cur"); compopt -o filenames; return 0 ;;
    dir) mapfile -t COMPREPLY < <(compgen -d -- "$cur"); compopt -o filenames; return 0 ;;
    words:*) mapfile -t COMPREPLY < <(compgen -W "${kind#words:}" -- "$cur"); return 0 ;;
    any) return 0 ;;
  esac
  if [[ $cur == -* ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${opts[$command]:-}" -- "$cur")
  elif [[ -n ${subs[$command]:-} && -z $sub ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${subs[$command]}" -- "$cur")
  elif [[ $command == config && $sub =~ ^(set|get|unset)$ && -z $key ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${!key_values[*]}" -- "$cur")
    # A key that ends in "." (credential_hosts.NAME) wants its NAME next.
    [[ ${#COMPREPLY[@]} -eq 1 && ${COMPREPLY[0]} == *. ]] && compopt -o nospace
  elif [[ $command == config && $sub == set && operands -eq 1 ]]; then
    mapfile -t COMPREPLY < <(compgen -W "${key_values[$key]:-}" -- "$cur")
  fi
  return 0
}
complete -F _mojoup_node mojoup-node
EOF
} >"$out.tmp"
bash -n "$out.tmp"
mv "$out.tmp" "$out"
