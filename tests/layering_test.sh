#!/usr/bin/env bash
# The layering rule of README.md's "Layout" (and DESIGN.md's "Layers"), checked on every
# #include of the sources: each folder may include only the folders listed for it. The CMake
# targets say the same for linking; this check also catches a header-only include (a driver that
# includes net/transport.h, an algorithm that includes <zmq.hpp>) that no linker would see.
# Usage: layering_test.sh SOURCE_DIR. Prints every violation and exits 1 if there is one.
set -euo pipefail
cd "${1:-$(dirname "$0")/..}"

core='algorithms/[a-z_]+\.h|algorithms/problems/problem\.h'
wire='net/(envelope|payload|payload_view|reject|validation|fault_plan|endpoint)\.h'
algorithms='algorithms/'
declare -A allowed=(
  [algorithms]="$core"
  [algorithms/data]="$core|algorithms/data/"
  [algorithms/problems]="$core|algorithms/data/|algorithms/problems/"
  [algorithms/compression]="$core|algorithms/compression/"
  [algorithms/round]="$core|algorithms/data/|algorithms/problems/|algorithms/compression/|algorithms/round/"
  [algorithms/pairwise]="$core|algorithms/data/|algorithms/problems/|algorithms/compression/|algorithms/pairwise/"
  [topology]="topology/"
  [net]="net/"
  [node/config]="$algorithms|topology/|net/|node/config/"
  [node/report]="$algorithms|node/report/"
  [node/drivers]="$algorithms|$wire|node/drivers/"
  [node/sim]="$algorithms|topology/|$wire|node/config/|node/report/|node/drivers/|node/sim/"
  [node/daemon]="$algorithms|topology/|net/|node/config/|node/report/|node/drivers/|node/daemon/"
  [node/probe]="$algorithms|topology/|net/|node/config/|node/report/|node/drivers/|node/sim/|node/probe/"
)
# System headers that only the transport layers may use.
sockets='<(zmq|zmq\.h|zmq\.hpp|msgpack\.hpp|zmq_addon\.hpp)>'
no_sockets='^(algorithms|topology|node/report|node/drivers|node/sim)(/|$)'

bad=0
checked=0
for folder in "${!allowed[@]}"; do
  for file in "$folder"/*.h "$folder"/*.cc; do
    [[ -f $file ]] || continue
    checked=$((checked + 1))
    while IFS= read -r line; do
      n=${line%%:*}
      include=${line#*:}
      if [[ $include =~ \#include\ \"([^\"]+)\" ]]; then
        target=${BASH_REMATCH[1]}
        if ! [[ $target =~ ^(${allowed[$folder]}) ]]; then
          echo "$file:$n: includes \"$target\", which $folder/ may not (allowed: ${allowed[$folder]})"
          bad=1
        fi
      elif [[ $folder =~ $no_sockets && $include =~ $sockets ]]; then
        echo "$file:$n: $include: $folder/ opens no socket and encodes no message"
        bad=1
      fi
    done < <(grep -n '^#include' "$file")
  done
done
# Every source folder must have a rule: a new folder is a new decision.
for dir in $(find algorithms topology net node -type d); do
  compgen -G "$dir/*.h" >/dev/null || compgen -G "$dir/*.cc" >/dev/null || continue
  [[ -n ${allowed[$dir]+x} ]] || { echo "$dir/: no layering rule; add one to $0"; bad=1; }
done
if ((bad)); then exit 1; fi
echo "layering: $checked files in ${#allowed[@]} folders include only what their layer may"
