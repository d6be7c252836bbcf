#!/usr/bin/env bash
# chaos.sh: kill cnbench with SIGKILL at random moments of a run, clean up
# and resume after each kill, and prove that nothing leaked and no sample
# was lost.
#
# Each round starts `cnbench run` (the first time) or `cnbench run
# --resume RUN`, kills it with SIGKILL after a random delay or shortly
# after a chosen progress line (so kills land in setup, measurement and
# teardown), then runs `cnbench cleanup`. After the last kill the run is
# resumed to completion and the script compares the machine with a
# snapshot taken before it started:
#
#   leaked namespaces, links (root namespace), nftables tables, cgroups,
#   daemons and processes   must each be 0
#   lost samples            must be 0: every sample a round announced as
#                           stored is in the database, and every case of
#                           the finished run is ok with its full count of
#                           samples, or skipped
#
# Then it kills, at random moments of another run, FAULTS (default 6) of
# the processes that run depends on rather than cnbench itself: engines,
# private dockerds, ovs-vswitchd, ovsdb-server and, where qemu is
# installed, the qemu of a guest (chvc), picked at random. That
# run must end by itself (exit 0, or 1 for failed cases), and every case
# it failed must name what was killed ("... was killed by SIGKILL"):
#
#   unnamed failures        must be 0
#
# Usage: sudo scripts/chaos.sh            (KILLS=N for more than 24 kills)
# Needs root, go, jq, ip and nft. It only ever kills the cnbench processes
# it started itself, by PID.
set -euo pipefail

KILLS=${KILLS:-24}
FAULTS=${FAULTS:-6}
SEED=${SEED:-$RANDOM}
RANDOM=$SEED

cd "$(dirname "$0")/.."
for tool in go jq ip nft; do
	command -v "$tool" >/dev/null || { echo "chaos: $tool is needed" >&2; exit 1; }
done
[ "$(id -u)" -eq 0 ] || { echo "chaos: needs root" >&2; exit 1; }

work=$(mktemp -d /tmp/chaos.XXXXXX)
bin=$work/cnbench
db=$work/chaos.db
go build -o "$bin" ./cmd/cnbench
cat >"$work/chaos.yaml" <<'EOF'
name: chaos
duration: 1s
warmup: 0s
samples: 3
modes: [bridge, nat, macvlan]
topologies: [chc, chhc]
workloads: [tcp_stream, tcp_rr]
EOF

cgroot=$(awk '/ - cgroup2 / {print $5; exit}' /proc/self/mountinfo)
cgroot=${cgroot:-/sys/fs/cgroup}

# state prints one line per object a run could leave behind, "KIND NAME".
state() {
	{ ls /var/run/netns 2>/dev/null || true; } | sed 's/^/namespace /'
	ip -o link show | awk -F': ' '{sub(/@.*/, "", $2); print "link " $2}'
	{ nft list tables 2>/dev/null || true; } | sed 's/^table /nftables /'
	find "$cgroot" -mindepth 1 -maxdepth 1 -type d -printf 'cgroup %f\n'
	{ ls /run/cnbench/daemons 2>/dev/null || true; } | sed 's/^/daemon /'
	for p in /proc/[0-9]*; do
		[ "$(readlink "$p/exe" 2>/dev/null)" = "$bin" ] && echo "process ${p#/proc/}"
		# containerd shims of cnbench's private dockerds
		tr '\0' ' ' <"$p/cmdline" 2>/dev/null | grep -q 'containerd-shim.*-namespace cnb-' && echo "process ${p#/proc/} shim"
	done
	true
}

state | sort >"$work/before"
: >"$work/tokens"    # run tokens our processes used
: >"$work/announced" # "RUN KEY INDEX" of every sample a round announced
: >"$work/phases"    # where each kill landed
mkfifo "$work/progress" # each round's progress output, read as it comes

# announced extracts the samples a round's progress output reported as
# stored: the result line after "sample i/n" of case KEY.
announced() {
	# Cases in turns are announced together, and their lines carry the
	# case's mode/engine: "[1/12]   bridge/native sample 1/3", then
	# "[1/12]     bridge/native 15.6 Gbit/s". A case alone has neither.
	awk -v run="$1" '
		function label(k,   n, p) { n = split(k, p, "/"); return p[1] "/" p[n] }
		/^\[[0-9]+\/[0-9]+\] [^ ]+ \((eta |in turns)/ { if ($3 == "(eta") delete keys; key = $2; keys[label(key)] = key; next }
		/^\[[0-9]+\/[0-9]+\]   ([^ ]+ )?sample [0-9]+\// { split($NF, a, "/"); k = ($2 in keys) ? keys[$2] : key; idx[k] = a[1] - 1; next }
		/^\[[0-9]+\/[0-9]+\]     / { k = ($2 in keys) ? keys[$2] : key; if (k != "") print run, k, idx[k] }
	' "$2"
}

# phase names what the killed process was doing, from its last lines: a
# stored sample that was the case's last means it was tearing down.
phase() {
	awk '
		/^\[[0-9]+\/[0-9]+\]   ([^ ]+ )?sample [0-9]+\// { split($NF, a, "/"); last = a[1] == a[2] ? "final" : "more"; p = "measurement"; next }
		/^\[[0-9]+\/[0-9]+\]     / { p = last == "final" ? "teardown" : "measurement"; next }
		/^\[[0-9]+\/[0-9]+\]   (ok|skipped|failed)/ { p = "setup"; next }
		{ p = "setup" }
		END { print p == "" ? "setup" : p }
	' "$1"
}

# wait_for reads the running round's progress from fd 3 into its log and
# returns as soon as it has shown $2 lines of kind $1: "setup" (a case
# starts building its topology) or "final" (a case's last sample is stored,
# and its teardown begins). It gives up after 20 quiet seconds or at the
# end of the output. Reading the pipe itself, not a file, makes the return
# come within microseconds of the line.
wait_for() {
	local line n=0 last=0 re_case='^\[[0-9]+/[0-9]+\] [^ ]+ \(eta ' re_sample='^\[[0-9]+/[0-9]+\]   ([^ ]+ )?sample ([0-9]+)/([0-9]+)'
	while IFS= read -r -t 20 -u 3 line; do
		printf '%s\n' "$line" >>"$log"
		if [[ $line =~ $re_case ]]; then
			[ "$1" = setup ] && n=$((n + 1))
		elif [[ $line =~ $re_sample ]]; then
			last=$([ "${BASH_REMATCH[2]}" = "${BASH_REMATCH[3]}" ] && echo 1 || echo 0)
		elif [[ $line == "["*"]     "* ]]; then
			[ "$1" = final ] && [ "$last" = 1 ] && n=$((n + 1))
		fi
		[ "$n" -ge "$2" ] && return 0
	done
	return 1
}

# ms sleeps a random number of milliseconds between $1 and $2.
ms() { sleep "$(awk -v t=$(($1 + RANDOM % ($2 - $1 + 1))) 'BEGIN { printf "%.3f", t / 1000 }')"; }

runs=()
current=""
kills=0
round=0
while [ "$kills" -lt "$KILLS" ]; do
	round=$((round + 1))
	log=$work/round-$round.log
	if [ -z "$current" ]; then
		"$bin" run "$work/chaos.yaml" --db "$db" --format json >/dev/null 2>"$work/progress" &
	else
		"$bin" run --resume "$current" --db "$db" --format json >/dev/null 2>"$work/progress" &
	fi
	pid=$!
	exec 3<"$work/progress"
	: >"$log"
	# Vary where the kill lands: starting up, building a case's topology,
	# measuring, and tearing a case down.
	case $((round % 4)) in
	0) ms 0 400 ;;
	1) wait_for setup $((1 + RANDOM % 2)) || true; ms 0 30 ;;
	2) ms 300 3000 ;;
	3) wait_for final 1 || true ;;
	esac
	landed="not killed: it had finished"
	# A builtin kill, no fork: it lands right where wait_for stopped.
	if kill -KILL "$pid" 2>/dev/null; then
		kills=$((kills + 1))
		wait "$pid" 2>/dev/null || true
		cat <&3 >>"$log"
		landed="killed in $(phase "$log")"
		echo "${landed#killed in }" >>"$work/phases"
	else
		wait "$pid" 2>/dev/null || true
		cat <&3 >>"$log"
	fi
	exec 3<&-
	id=$(sed -n 's/^run \([0-9]*\)\( resumed\)*:.*/\1/p' "$log" | head -n 1)
	if [ -z "$current" ]; then
		# Killed before it printed its id: the newest run in the fresh
		# database is this round's, if it got as far as storing one.
		[ -z "$id" ] && id=$("$bin" runs --db "$db" 2>/dev/null | awk 'NR == 2 {print $1}')
		if [ -n "$id" ]; then current=$id; runs+=("$id"); fi
	fi
	sed -n 's/.*, token \([0-9a-z]*\)$/\1/p' "$log" >>"$work/tokens"
	[ -n "$id" ] && announced "$id" "$log" >>"$work/announced"
	if ! "$bin" cleanup >"$work/cleanup-$round.log" 2>&1; then
		echo "chaos: cleanup failed in round $round:" >&2
		cat "$work/cleanup-$round.log" >&2
		exit 1
	fi
	# A run the kills did not stop in time is complete; go on with a new one.
	if [ -n "$current" ] && "$bin" runs --db "$db" | awk -v id="$current" '$1 == id && $0 ~ / done /' | grep -q .; then
		current=""
	fi
	printf 'round %2d: %s, run %s\n' "$round" "$landed" "${id:-?}" >&2
done

# Finish: resume every run to completion.
for id in "${runs[@]}"; do
	log=$work/final-$id.log
	"$bin" run --resume "$id" --db "$db" --format json >/dev/null 2>"$log" || {
		echo "chaos: final resume of run $id failed:" >&2
		tail -n 20 "$log" >&2
		exit 1
	}
	sed -n 's/.*, token \([0-9a-z]*\)$/\1/p' "$log" >>"$work/tokens"
	announced "$id" "$log" >>"$work/announced"
done
"$bin" cleanup >/dev/null

# Faults: kill what a run depends on, not the run itself.
topologies=chc
command -v qemu-system-x86_64 >/dev/null && topologies="chc, chvc"
cat >"$work/faults.yaml" <<EOF
name: chaos-faults
duration: 1s
warmup: 0s
samples: 3
modes: [bridge, nat, docker:bridge, ovs]
topologies: [$topologies]
workloads: [tcp_stream, tcp_rr]
EOF

# victims lists "PID COMM" of the processes below $1 that a fault may
# kill: engines and the daemons cnbench starts.
victims() {
	ps -e -o pid=,ppid=,comm=,args= | awk -v root="$1" '
		{ parent[$1] = $2; comm[$1] = $3; engine[$1] = ($5 == "engine") }
		END {
			for (p in parent) {
				q = p
				while (q in parent && q != root && q > 1) q = parent[q]
				if (q != root || p == root) continue
				if (engine[p] || comm[p] ~ /^(dockerd|ovs-vswitchd|ovsdb-server|qemu-system-x86)$/) print p, (engine[p] ? "engine" : comm[p])
			}
		}'
}

faultdb=$work/faults.db
"$bin" run "$work/faults.yaml" --db "$faultdb" --pairing off --format json >/dev/null 2>"$work/faults.log" &
pid=$!
faults=0
: >"$work/victims"
while [ "$faults" -lt "$FAULTS" ] && kill -0 "$pid" 2>/dev/null; do
	ms 1500 5000
	mapfile -t cands < <(victims "$pid")
	[ "${#cands[@]}" -eq 0 ] && continue
	v=${cands[RANDOM % ${#cands[@]}]}
	if kill -KILL "${v%% *}" 2>/dev/null; then
		faults=$((faults + 1))
		echo "$v" >>"$work/victims"
	fi
done
set +e
wait "$pid"
faultrc=$?
set -e
sed -n 's/.*, token \([0-9a-z]*\)$/\1/p' "$work/faults.log" >>"$work/tokens"
"$bin" cleanup >/dev/null
"$bin" export 1 --db "$faultdb" -o "$work/faults.json" 2>/dev/null
unnamed=$(jq '[.cases[] | select(.status == "failed") | select(.reason | test("was killed by SIG|exited with status") | not)] | length' "$work/faults.json")
failed=$(jq '[.cases[] | select(.status == "failed")] | length' "$work/faults.json")
if [ "$faultrc" -ne 0 ] && [ "$faultrc" -ne 1 ]; then
	echo "chaos: the fault run exited $faultrc:" >&2
	tail -n 20 "$work/faults.log" >&2
	unnamed=$((unnamed + 1))
fi

# Leaks: objects that are new since the start. A cnb- object whose token
# is not one of ours belongs to another cnbench running on this machine
# at the same time, and is not counted.
state | sort >"$work/after"
comm -13 "$work/before" "$work/after" | while read -r kind name rest; do
	tok=$(echo "$name" | sed -n 's/^cnb-\([0-9a-z]*\)-.*/\1/p')
	[ -z "$tok" ] && tok=$(echo "$name" | sed -n 's/^\([0-9a-z]*\)-.*\.json$/\1/p')
	if [ -n "$tok" ] && ! grep -qx "$tok" "$work/tokens"; then
		continue
	fi
	echo "$kind $name $rest"
done >"$work/leaks"
count() { grep -c "^$1 " "$work/leaks" || true; }

# Lost samples: announced but not stored, and cases of a finished run
# without all their samples.
lost=0
incomplete=0
stored=0
for id in "${runs[@]}"; do
	"$bin" export "$id" --db "$db" -o "$work/run-$id.json" 2>/dev/null
	jq -r --arg run "$id" '.cases[] | .key as $k | .samples[] | "\($run) \($k) \(.index)"' "$work/run-$id.json" |
		sort -u >"$work/stored-$id"
	stored=$((stored + $(wc -l <"$work/stored-$id")))
	n=$({ grep "^$id " "$work/announced" || true; } | sort -u | comm -23 - "$work/stored-$id" | tee -a "$work/lost" | wc -l)
	lost=$((lost + n))
	n=$(jq '[.run.status as $s | .cases[] | select(($s != "done") or (.status == "pending") or (.status == "failed")
		or (.status == "ok" and (.samples | length) != .params.samples)
		or ([.samples[].index] != [range(.samples | length)]))] | length' "$work/run-$id.json")
	incomplete=$((incomplete + n))
done

phases=$(sort "$work/phases" | uniq -c | awk '{printf "%s%s %s", sep, $1, $2; sep = ", "}')
cat <<EOF

chaos summary (seed $SEED, work files in $work)
  kills (SIGKILL)        $kills in $round rounds: $phases
  runs                   ${runs[*]}, resumed to completion
  samples announced      $(sort -u "$work/announced" | wc -l)
  samples stored         $stored
  leaked namespaces      $(count namespace)
  leaked links           $(count link)
  leaked nftables tables $(count nftables)
  leaked cgroups         $(count cgroup)
  leaked daemons         $(count daemon)
  leaked processes       $(count process)
  lost samples           $lost
  incomplete cases       $incomplete
  faults (SIGKILL)       $faults: $(awk '{print $2}' "$work/victims" | sort | uniq -c | awk '{printf "%s%s %s", sep, $1, $2; sep = ", "}')
  failed cases           $failed of $(jq '.cases | length' "$work/faults.json"), exit $faultrc
  unnamed failures       $unnamed
EOF
if [ -s "$work/leaks" ] || [ "$lost" -ne 0 ] || [ "$incomplete" -ne 0 ] || [ "$unnamed" -ne 0 ]; then
	echo "FAIL" >&2
	cat "$work/leaks" "$work/lost" 2>/dev/null >&2 || true
	jq -r '.cases[] | select(.status == "failed") | "\(.key): \(.reason)"' "$work/faults.json" >&2 || true
	exit 1
fi
echo "PASS"
