#!/usr/bin/env bash
# The layering rule (docs/explanations/architecture.md), checked on every #include of the
# sources: each folder may include only what tests/layering_rules.txt lists for it. The CMake targets say the
# same for linking; this also catches a header-only include (a driver that includes
# net/transport.h, an algorithm that includes <zmq.hpp>) that no linker would see.
# Usage: layering_test.sh SOURCE_DIR. Prints every violation and exits 1 if there is one.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"
rules=tests/layering_rules.txt

declare -A macro allowed strict
no_sockets=""
while IFS= read -r line; do
  [[ -z $line || $line == \#* ]] && continue
  key=${line%%:*}
  value=${line#*: }
  case $key in
    @*) macro[$key]=$value ;;
    '!sockets') no_sockets=" $value " ;;
    =*)
      pattern=""
      for item in $value; do pattern+="${pattern:+|}${macro[$item]:-$item}"; done
      strict[${key#=}]=$pattern
      ;;
    *)
      pattern=""
      for item in $value; do pattern+="${pattern:+|}${macro[$item]:-$item}"; done
      allowed[$key]=${pattern// /|}
      ;;
  esac
done <"$rules"

bad=0
checked=0
for folder in "${!allowed[@]}"; do
  for file in "$folder"/*.h "$folder"/*.cc; do
    [[ -f $file ]] || continue
    checked=$((checked + 1))
    rule=${allowed[$folder]} sockets_banned=0
    [[ $no_sockets == *" ${folder%%/*} "* || $no_sockets == *" $folder "* ]] && sockets_banned=1
    for files in "${!strict[@]}"; do
      if [[ $file =~ $files ]]; then rule=${strict[$files]} sockets_banned=1; fi
    done
    while IFS=: read -r n include; do
      if [[ $include =~ \#include\ \"([^\"]+)\" ]]; then
        target=${BASH_REMATCH[1]}
        if ! [[ $target =~ ^(${rule}) ]]; then
          echo "$file:$n: includes \"$target\", which its layer may not ($rules)"
          bad=1
        fi
      elif ((sockets_banned)) && [[ $include =~ \<(zmq|msgpack)[^\>]*\> ]]; then
        echo "$file:$n: $include: $file opens no socket and encodes no message"
        bad=1
      fi
    done < <(grep -n '^#include' "$file")
  done
done
# Every source folder needs a rule: a new folder is a new decision.
for dir in $(find algorithms topology net node capi -type d); do
  compgen -G "$dir/*.h" >/dev/null || compgen -G "$dir/*.cc" >/dev/null || continue
  [[ -n ${allowed[$dir]+x} ]] || { echo "$dir/: no layering rule in $rules"; bad=1; }
done
((bad == 0)) || exit 1
echo "layering: $checked files in ${#allowed[@]} folders include only what their layer may"
