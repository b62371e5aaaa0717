# Hosts as network namespaces, shared by the namespace tests (netns_test.sh, netns_join_test.sh):
# every host is a namespace with its own address, the namespaces joined by a bridge like hosts on
# a LAN switch. Source it with `build` set to the build folder; it needs root, iproute2 and
# nftables, and exits 77 (CTest's skip code) with a message where namespaces cannot be made.
# It sets daemon, probe, tag, bridge_ns, work (a fresh folder, the current directory from then
# on), namespaces and pids (what cleanup removes on every way out), and defines add_host,
# model_difference, write_data, seconds and since.

daemon=$build/node/starlingd
probe=$build/node/starling-probe
skip() { echo "SKIP: $*"; exit 77; }

[[ -x $daemon && -x $probe ]] || { echo "$0: build starlingd and starling-probe first" >&2; exit 1; }
[[ $(id -u) -eq 0 ]] || skip "creating network namespaces needs root"
command -v ip >/dev/null || skip "no 'ip' (apt-get install iproute2)"
command -v nft >/dev/null || skip "no 'nft' (apt-get install nftables)"

# Names unlikely to collide with anything else on the machine, and unique per run.
tag="stl$(( $$ % 100000 ))"
bridge_ns="${tag}br"
work=$(mktemp -d /tmp/starling-netns-XXXXXX)
namespaces=()
pids=()

cleanup() {
  local code=$?
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  for ns in "${namespaces[@]}"; do ip netns del "$ns" 2>/dev/null || true; done
  if [[ $code -ne 0 && $code -ne 77 ]]; then
    echo "$(basename "$0"): FAILED (exit $code); last lines of each log:"
    for f in "$work"/*.log "$work"/*/*.log; do [[ -f $f ]] && { echo "== $f"; tail -n 5 "$f"; }; done
  fi
  [[ -n ${STARLING_KEEP_NETNS_WORK:-} ]] && echo "kept $work" || rm -rf "$work"
  exit $code
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if ! ip netns add "$bridge_ns" 2>"$work/netns.err"; then
  skip "cannot create network namespaces here: $(cat "$work/netns.err")"
fi
namespaces+=("$bridge_ns")
ip -n "$bridge_ns" link add br0 type bridge
ip -n "$bridge_ns" link set br0 up
ip -n "$bridge_ns" link set lo up

add_host() {  # NAME ADDRESS INDEX: a namespace whose veth0 has ADDRESS/24 on the bridge
  local ns=$1 address=$2 index=$3
  ip netns add "$ns"
  namespaces+=("$ns")
  ip link add veth0 netns "$ns" type veth peer name "p$index" netns "$bridge_ns"
  ip -n "$bridge_ns" link set "p$index" master br0
  ip -n "$bridge_ns" link set "p$index" up
  ip -n "$ns" addr add "$address/24" dev veth0
  ip -n "$ns" link set veth0 up
  ip -n "$ns" link set lo up
}

# The largest relative difference between the models of two lists of model files (one value per
# line), file by file: model_difference "A0 A1 ..." "B0 B1 ...".
model_difference() {
  local -a a b
  read -r -a a <<<"$1"
  read -r -a b <<<"$2"
  local worst=0 k
  for ((k = 0; k < ${#a[@]}; k++)); do
    worst=$(paste "${a[$k]}" "${b[$k]}" | awk -v w="$worst" '
      { d = $1 - $2; num += d * d; den += $1 * $1 }
      END { r = sqrt(num) / (den > 0 ? sqrt(den) : 1); print (r > w ? r : w) }')
  done
  echo "$worst"
}

# A small LIBSVM data set of ROWS rows and 8 features, the same on every call (awk's generator
# with a fixed seed).
write_data() {  # FILE ROWS
  awk -v rows="$2" 'BEGIN { srand(7); for (r = 0; r < rows; r++) { s = 0; line = "";
       for (k = 1; k <= 8; k++) { v = rand() * 2 - 1; s += v * (k % 3 - 1); line = line " " k ":" v }
       print (s + 0.3 * (rand() - 0.5) > 0 ? "+1" : "-1") line } }' >"$1"
}

seconds() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(seconds)" 'BEGIN { printf "%.1f", b - a }'; }

cd "$work"
