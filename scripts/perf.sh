#!/usr/bin/env bash
# perf.sh: measure idalloc beside a bare chi handler, in one run, and print a
# Markdown table ready for docs/performance.md.
#
#   scripts/perf.sh                 # table on stdout
#   scripts/perf.sh perf.md         # and written to perf.md
#
# It builds idalloc, cmd/barechi and cmd/idload into a temporary directory,
# starts a bare chi server and two idalloc instances (the default config, and
# one with segment.max_step 100 (PERF_SMALL_STEP) so a step-100 tag cannot grow its step) on
# 127.0.0.1 with free ports, pins the servers to CPU 0 and idload to CPU 1
# when taskset exists, and measures in interleaved rounds (every measurement
# once per round, so slow phases of a shared machine hit all of them alike);
# each cell is the median of the rounds. Then the in-process benchmarks of
# segment and snowflake. Everything runs on loopback and stops by itself.
# The Go client's row (cmd/clientload: client.Next on one tag while the
# client refills from the default instance) is measured in the same rounds.
# The Redis-protocol rows (redis-benchmark against idalloc's resp_addr and a
# private redis-server, in the same rounds) are in perf_resp.sh.
#
# Environment (all optional):
#   PERF_ROUNDS=6  PERF_DURATION=6s  PERF_WARMUP=1s  PERF_CONNS=64
#   PERF_RATE=N          the open-loop rows' request rate (idload -rate); by
#                        default half of what bare chi answered in round 1
#   PERF_CLIENT=raw      idload's client: raw (its own HTTP/1.1 client, less
#                        CPU per request) or http (net/http's Transport)
#   PERF_BENCHTIME=1s    go test -benchtime for the in-process benchmarks
#   PERF_SMALL_STEP=100  the small step compared with 1,000,000 (its instance
#                        runs with segment.max_step equal to it)
#   IDALLOC_TEST_PERF_DSN=... measure on MySQL (go-sql-driver DSN; the schema is
#                        applied if missing, tags named perf_*_<run id> stay
#                        behind) instead of a temporary SQLite file
#   PERF_KEEP=1          keep the temporary directory (logs, JSON reports)
#   PERF_RESP_N=1000000  requests per pipelined redis-benchmark run
#   PERF_OLD=REV         also idalloc built at git revision REV, measured beside
#                        this tree's (/alloc, RESP, Go client): perf_old.sh
#   PERF_ENGINES=1       also the three stores side by side: perf_engines.sh
set -euo pipefail

ROUNDS=${PERF_ROUNDS:-6}
DUR=${PERF_DURATION:-6s}
WARM=${PERF_WARMUP:-1s}
CONNS=${PERF_CONNS:-64}
CLIENT=${PERF_CLIENT:-raw}
BENCHTIME=${PERF_BENCHTIME:-1s}
SMALL=${PERF_SMALL_STEP:-100}
LIFETIME=900 # seconds: every server stops by itself after this, whatever happens here

out=${1:-}
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root"

say() { printf '%s\n' "perf: $*" >&2; }
die() {
	say "$*"
	exit 1
}
for tool in go curl awk sed sort; do
	command -v "$tool" >/dev/null || die "needs $tool on PATH"
done
# shellcheck source=scripts/perf_resp.sh
source "$root/scripts/perf_resp.sh"
# shellcheck source=scripts/perf_old.sh
source "$root/scripts/perf_old.sh"
# shellcheck source=scripts/perf_engines.sh
source "$root/scripts/perf_engines.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/idalloc-perf.XXXXXX")
pids=() # servers (or their timeout wrappers) this script started

cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill -TERM "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
		kill -KILL "$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
	engines_cleanup # the servers on its databases stopped above
	if [[ ${PERF_KEEP:-} == 1 ]]; then
		say "kept $tmp"
	else
		rm -rf "$tmp"
	fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---------------------------------------------------------------- build
say "building into $tmp"
go build -o "$tmp/idalloc" .
go build -o "$tmp/barechi" ./cmd/barechi
go build -o "$tmp/idload" ./cmd/idload
go build -o "$tmp/clientload" ./cmd/clientload
old_build

# ---------------------------------------------------------------- pinning
ncpu=$(getconf _NPROCESSORS_ONLN 2>/dev/null || nproc 2>/dev/null || echo 1)
srv_pin=()
load_pin=()
if command -v taskset >/dev/null && ((ncpu >= 2)); then
	srv_pin=(taskset -c 0)
	load_pin=(taskset -c 1)
	pinning="servers pinned to CPU 0, idload to CPU 1 (taskset; each Go process then runs with GOMAXPROCS=1)"
else
	pinning="not pinned (no taskset or a single CPU): servers and idload share all $ncpu CPUs"
fi
life=()
command -v timeout >/dev/null && life=(timeout "$LIFETIME")

# ---------------------------------------------------------------- servers
runid=$(date +%s)
if [[ -n ${IDALLOC_TEST_PERF_DSN:-} ]]; then
	driver=mysql
	store_desc="MySQL (IDALLOC_TEST_PERF_DSN)"
	fetch_note="The fetch is a round trip to MySQL, whose server shares this machine's cores."
	extra=(-init-schema)
else
	driver=sqlite
	store_desc="embedded SQLite (a temporary file; WAL, synchronous=FULL)"
	fetch_note="With SQLite the fetch also runs in the server process, on the server's one core: compare the server CPU/req of the two rows."
	extra=()
fi

write_config() { # file dsn max_step snowflake [resp_addr line]
	cat >"$1" <<EOF
{
  "http_addr": "127.0.0.1:0", ${5:-}
  "driver": "$driver",
  "dsn": "$2",
  "shutdown_drain": "0s",
  "segment": {"max_step": $3},
  "snowflake": {"enabled": $4}
}
EOF
}
resp_prepare
write_config "$tmp/main.json" "$tmp/main.db" 1000000 true "$resp_json"
write_config "$tmp/s100.json" "$tmp/s100.db" "$SMALL" false

# proc_of PID: the server process itself (the child, under timeout).
proc_of() {
	local pid=$1 child=""
	if ((${#life[@]})); then
		for _ in $(seq 50); do
			child=$(cat "/proc/$pid/task/$pid/children" 2>/dev/null | awk '{print $1}' || true)
			[[ -z $child ]] && command -v pgrep >/dev/null && child=$(pgrep -P "$pid" | head -1 || true)
			[[ -n $child ]] && break
			sleep 0.1
		done
		[[ -n $child ]] || die "cannot find the server under timeout (pid $pid)"
		echo "$child"
	else
		echo "$pid"
	fi
}

# wait_addr LOG: the address in a server's start line (msg="... serving" addr=HOST:PORT).
wait_addr() {
	local addr=""
	for _ in $(seq 150); do
		addr=$(sed -n 's/.*serving" addr=\([0-9.:]*\).*/\1/p' "$1" 2>/dev/null | head -1 || true)
		[[ -n $addr ]] && break
		sleep 0.1
	done
	[[ -n $addr ]] || {
		cat "$1" >&2
		die "server did not start (log above)"
	}
	echo "$addr"
}

start_idalloc() { # name config [binary [flag...]] -> sets ${name}_addr and ${name}_pid
	local name=$1 cfg=$2 bin=${3:-$tmp/idalloc} pid addr spid
	shift $(($# < 3 ? $# : 3))
	if [[ $driver == mysql ]]; then
		IDALLOC_DRIVER=mysql IDALLOC_DSN=$IDALLOC_TEST_PERF_DSN \
			"${srv_pin[@]}" "${life[@]}" "$bin" -config "$cfg" "${extra[@]}" 2>"$tmp/$name.log" &
	else
		"${srv_pin[@]}" "${life[@]}" "$bin" -config "$cfg" "$@" 2>"$tmp/$name.log" &
	fi
	pid=$!
	pids+=("$pid")
	addr=$(wait_addr "$tmp/$name.log") || exit 1
	spid=$(proc_of "$pid") || exit 1
	printf -v "${name}_addr" '%s' "$addr"
	printf -v "${name}_pid" '%s' "$spid"
	for _ in $(seq 100); do
		curl -fsS "http://$addr/health" >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cat "$tmp/$name.log" >&2
	die "$name is not healthy"
}

"${srv_pin[@]}" "$tmp/barechi" -addr 127.0.0.1:0 -for "${LIFETIME}s" 2>"$tmp/bare.log" &
pids+=("$!")
bare_pid=$!
bare_addr=$(wait_addr "$tmp/bare.log")
start_idalloc main "$tmp/main.json"
start_idalloc s100 "$tmp/s100.json"
say "bare chi on $bare_addr, idalloc on $main_addr, idalloc (max_step $SMALL) on $s100_addr"
resp_start
old_start

create_tag() { # addr tag step
	local code
	code=$(curl -sS -o "$tmp/tag.out" -w '%{http_code}' -X POST "http://$1/tags" \
		-H 'Content-Type: application/json' -d "{\"app_tag\":\"$2\",\"step\":$3}")
	[[ $code == 201 ]] || die "POST /tags $2 on $1: HTTP $code $(cat "$tmp/tag.out")"
}
tag1m=perf_s1m_$runid
tag100=perf_s${SMALL}_$runid
tag100a=perf_s${SMALL}a_$runid
create_tag "$main_addr" "$tag1m" 1000000
create_tag "$s100_addr" "$tag100" "$SMALL"
create_tag "$main_addr" "$tag100a" "$SMALL"
engines_start

# ---------------------------------------------------------------- load runs
clk=$(getconf CLK_TCK)
cpu_ticks() { sed 's/^.*) //' "/proc/$1/stat" | awk '{print $12 + $13}'; }

# jnum FILE KEY: a number from idload's JSON (its keys are flat and unique).
jnum() { sed -n "s/^ *\"$2\": \\([-0-9.e+]*\\),\\{0,1\\}\$/\\1/p" "$1" | head -1; }

failed=0
# measure NAME PID ADDR ROUND idload-args...: one run, one line appended to NAME.tsv:
# req/s IDs/s p50 p99 p999 errors server-CPU-µs/req idload-CPU-util ids-checked dups order malformed late-sends
measure() {
	local name=$1 pid=$2 addr=$3 round=$4
	shift 4
	local js="$tmp/$name.$round.json" c0 c1 rc=0
	c0=$(cpu_ticks "$pid")
	"${load_pin[@]}" "$tmp/idload" -client "$CLIENT" -url "http://$addr" -c "$CONNS" -d "$DUR" -warmup "$WARM" \
		-q -json "$js" "$@" 2>>"$tmp/idload.err" || rc=$?
	c1=$(cpu_ticks "$pid")
	[[ -s $js ]] || die "idload $name failed (exit $rc): $(tail -3 "$tmp/idload.err")"
	if ((rc != 0)); then
		failed=1
		say "$name round $round: checks FAILED, see $js"
	fi
	local total
	total=$(jnum "$js" total_requests)
	awk -v c0="$c0" -v c1="$c1" -v clk="$clk" -v total="$total" \
		-v rps="$(jnum "$js" req_per_s)" -v ips="$(jnum "$js" ids_per_s)" \
		-v p50="$(jnum "$js" p50_us)" -v p99="$(jnum "$js" p99_us)" -v p999="$(jnum "$js" p999_us)" \
		-v errs="$(jnum "$js" errors)" -v util="$(jnum "$js" client_cpu_util)" \
		-v chk="$(jnum "$js" ids_checked)" -v dups="$(jnum "$js" duplicates)" \
		-v ord="$(jnum "$js" order_violations)" -v mal="$(jnum "$js" malformed)" -v late="$(jnum "$js" late_sends)" \
		'BEGIN { us = total > 0 ? (c1 - c0) / clk * 1e6 / total : 0
		         print rps, ips, p50, p99, p999, errs, us, util, chk, dups, ord, mal, late + 0 }' >>"$tmp/$name.tsv"
	say "$(printf '%-9s round %s: %8.0f req/s %10.0f IDs/s  p99 %6.0fµs  p99.9 %6.0fµs' "$name" "$round" \
		"$(jnum "$js" req_per_s)" "$(jnum "$js" ids_per_s)" "$(jnum "$js" p99_us)" "$(jnum "$js" p999_us)")"
}

# client_measure NAME PID ADDR ROUND: one clientload run, one line appended
# to NAME.tsv: IDs/s server-CPU-µs-per-1000-IDs ids-checked dups order.
client_measure() {
	local name=$1 pid=$2 addr=$3 round=$4
	local js="$tmp/$name.$round.json" c0 c1 rc=0
	c0=$(cpu_ticks "$pid")
	"${load_pin[@]}" "$tmp/clientload" -url "http://$addr" -tag test_business -d "$DUR" -warmup "$WARM" \
		-q -json "$js" 2>>"$tmp/clientload.err" || rc=$?
	c1=$(cpu_ticks "$pid")
	[[ -s $js ]] || die "clientload $name failed (exit $rc): $(tail -3 "$tmp/clientload.err")"
	if ((rc != 0)); then
		failed=1
		say "$name round $round: checks FAILED, see $js"
	fi
	awk -v c0="$c0" -v c1="$c1" -v clk="$clk" -v total="$(jnum "$js" total_ids)" -v ips="$(jnum "$js" ids_per_s)" \
		-v chk="$(jnum "$js" ids_checked)" -v dups="$(jnum "$js" duplicates)" -v ord="$(jnum "$js" order_violations)" \
		'BEGIN { us = total > 0 ? (c1 - c0) / clk * 1e6 / total * 1000 : 0
		         print ips, us, chk, dups, ord }' >>"$tmp/$name.tsv"
	say "$(printf '%-9s round %s: %10.0f IDs/s' "$name" "$round" "$(jnum "$js" ids_per_s)")"
}

kinds=(bare alloc bareopen allocopen batch step1m step100 step100a flake flakebatch)
rate=${PERF_RATE:-}
rate_desc="PERF_RATE"
say "$ROUNDS rounds of ${kinds[*]}: $DUR each after $WARM warm-up, $CONNS connections"
for round in $(seq "$ROUNDS"); do
	# The pairs compared with each other swap order every round, so a
	# machine getting slower or faster within a round favours neither.
	if [ $((round % 2)) -eq 1 ]; then
		measure bare "$bare_pid" "$bare_addr" "$round" -mode bare -tag test_business
		measure alloc "$main_pid" "$main_addr" "$round" -mode segment -tag test_business
	else
		measure alloc "$main_pid" "$main_addr" "$round" -mode segment -tag test_business
		measure bare "$bare_pid" "$bare_addr" "$round" -mode bare -tag test_business
	fi
	if [[ -z $rate ]]; then # half of bare chi's saturated rate, in thousands
		rate=$(awk -v r="$(head -1 "$tmp/bare.tsv" | awk '{print $1}')" 'BEGIN {printf "%d", int(r / 2000) * 1000}')
		((rate > 0)) || rate=1000
		rate_desc="half of what bare chi answered in round 1"
		say "open-loop rows at $rate req/s"
	fi
	if [ $((round % 2)) -eq 1 ]; then
		measure bareopen "$bare_pid" "$bare_addr" "$round" -mode bare -tag test_business -rate "$rate"
		measure allocopen "$main_pid" "$main_addr" "$round" -mode segment -tag test_business -rate "$rate"
	else
		measure allocopen "$main_pid" "$main_addr" "$round" -mode segment -tag test_business -rate "$rate"
		measure bareopen "$bare_pid" "$bare_addr" "$round" -mode bare -tag test_business -rate "$rate"
	fi
	measure batch "$main_pid" "$main_addr" "$round" -mode segment -tag test_business -count 1000
	if [ $((round % 2)) -eq 1 ]; then
		measure step1m "$main_pid" "$main_addr" "$round" -mode segment -tag "$tag1m"
		measure step100 "$s100_pid" "$s100_addr" "$round" -mode segment -tag "$tag100"
	else
		measure step100 "$s100_pid" "$s100_addr" "$round" -mode segment -tag "$tag100"
		measure step1m "$main_pid" "$main_addr" "$round" -mode segment -tag "$tag1m"
	fi
	# The same row step on the default config, where the adaptive step grows.
	measure step100a "$main_pid" "$main_addr" "$round" -mode segment -tag "$tag100a"
	measure flake "$main_pid" "$main_addr" "$round" -mode snowflake
	measure flakebatch "$main_pid" "$main_addr" "$round" -mode snowflake -count 1000
	client_measure client "$main_pid" "$main_addr" "$round"
	resp_round "$round"
	old_round "$round"
	engines_round "$round"
done

# metric ADDR SERIES: the value of one idalloc_segment_* series (name{labels}), 0 when absent.
# Fetch metrics are per instance (no app_tag label): on the max_step instance only its one tag fetches.
metric() {
	curl -fsS "http://$1/metrics" 2>/dev/null |
		awk -v n="idalloc_segment_$2" '$1 == n {v = $2} END {printf "%.6f", v + 0}'
}
f100=$(metric "$s100_addr" "fetches_total")
f1m=$(metric "$main_addr" "fetches_total")
# The 4.5 ms bucket (ExponentialBuckets prints its bound as 0.0045000000000000005).
fast100=$(curl -fsS "http://$s100_addr/metrics" 2>/dev/null |
	awk -v p="idalloc_segment_fetch_duration_seconds_bucket{le=\"0.0045" \
		'index($1, p) == 1 {v = $2} END {printf "%.6f", v + 0}')
fd100=$(awk -v s="$(metric "$s100_addr" "fetch_duration_seconds_sum")" -v n="$f100" \
	'BEGIN { if (n > 0) printf "%.2f ms", 1000 * s / n; else print "–" }')

# ---------------------------------------------------------------- in-process
say "go test -bench 'Next|AtomicAdd' ./segment/ ./snowflake/ (benchtime $BENCHTIME)"
go test -run XXX -bench 'Next|AtomicAdd' -benchtime "$BENCHTIME" -count 1 ./segment/ ./snowflake/ >"$tmp/bench.txt" 2>&1 ||
	die "benchmarks failed: $(tail -5 "$tmp/bench.txt")"

# ---------------------------------------------------------------- table
med() { # NAME COLUMN: the median over the rounds
	awk -v c="$2" '{print $c}' "$tmp/$1.tsv" | sort -g |
		awk '{v[NR] = $1} END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
sum() { awk -v c="$2" '{s += $c} END {printf "%d", s}' "$tmp/$1.tsv"; }
int() { # thousands separators
	awk -v v="$1" 'BEGIN { s = sprintf("%.0f", v); o = ""
		while (length(s) > 3) { o = "," substr(s, length(s) - 2) o; s = substr(s, 1, length(s) - 3) }
		print s o }'
}
lat() { awk -v v="$1" 'BEGIN { if (v >= 1000) printf "%.2f ms", v / 1000; else printf "%.0f µs", v }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f×", a / b; else print "–" }'; }

row() { # NAME LABEL
	printf '| %s | %s | %s | %s | %s | %s | %s | %s | %s |\n' "$2" \
		"$(int "$(med "$1" 1)")" "$(int "$(med "$1" 2)")" \
		"$(lat "$(med "$1" 3)")" "$(lat "$(med "$1" 4)")" "$(lat "$(med "$1" 5)")" \
		"$(awk -v v="$(med "$1" 7)" 'BEGIN {printf "%.1f µs", v}')" \
		"$(awk -v v="$(med "$1" 8)" 'BEGIN {printf "%.0f%%", 100 * v}')" \
		"$(sum "$1" 6)"
}

goversion=$(go env GOVERSION)
cpu=$(awk -F': ' '/^model name/ {print $2; exit}' /proc/cpuinfo 2>/dev/null || true)
commit=$(git rev-parse --short HEAD 2>/dev/null || echo unknown)
[[ -n $(git status --porcelain 2>/dev/null | head -1) ]] && commit="$commit+changes"
checked=0 dups=0 order=0 malformed=0
for k in "${kinds[@]}"; do
	checked=$((checked + $(sum "$k" 9)))
	dups=$((dups + $(sum "$k" 10)))
	order=$((order + $(sum "$k" 11)))
	malformed=$((malformed + $(sum "$k" 12)))
done

table=$(
	cat <<EOF
Measured with \`scripts/perf.sh\` on $(date -u +%Y-%m-%d): ${cpu:-unknown CPU}, $ncpu CPUs (shared machine),
$(uname -sr), $goversion, idalloc $commit, store: $store_desc.
Load: \`idload -client $CLIENT\`, $CONNS keep-alive connections, $DUR measured after $WARM warm-up per run,
over 127.0.0.1; $pinning. Every figure is the median of $ROUNDS interleaved rounds
(each round runs every row once; the compared pairs swap order every round). Latency is request sent to body read, at the client,
from an HDR histogram. "Server CPU/req" is the server process's CPU time (/proc, user+system, warm-up
included) divided by the requests it answered: unlike req/s it does not depend on which side is the
bottleneck. "idload CPU" near 100% means the load tool, not the server, limited the run.
Closed loop (every row but two): each connection sends its next request as soon as it has read an
answer, so the server is saturated and latency is mostly queueing (median ≈ $CONNS ÷ req/s).
Open loop (\`idload -rate\`): the $CONNS connections share a fixed request rate ($rate_desc),
so latency is that of a request to a server with headroom; idload sent $(int "$(($(sum bareopen 13) + $(sum allocopen 13)))") of
those requests a whole interval behind their schedule (its own timer slack, or a server that fell behind).

| GET, $CONNS connections | req/s | IDs/s | p50 | p99 | p99.9 | server CPU/req | idload CPU | errors (all rounds) |
|---|--:|--:|--:|--:|--:|--:|--:|--:|
$(row bare "bare chi handler (\`cmd/barechi\`: url.Values, Header().Set, fmt)")
$(row alloc "idalloc \`/alloc?app_tag=test_business\`")
| **/alloc ÷ bare** (req/s: higher is better; the rest: lower is better) | **$(ratio "$(med alloc 1)" "$(med bare 1)")** | | $(ratio "$(med alloc 3)" "$(med bare 3)") | **$(ratio "$(med alloc 4)" "$(med bare 4)")** | $(ratio "$(med alloc 5)" "$(med bare 5)") | $(ratio "$(med alloc 7)" "$(med bare 7)") | | |
$(row bareopen "bare chi handler, open loop at $(int "$rate") req/s")
$(row allocopen "idalloc \`/alloc?app_tag=test_business\`, open loop at $(int "$rate") req/s")
| **/alloc ÷ bare, open loop** | | | $(ratio "$(med allocopen 3)" "$(med bareopen 3)") | **$(ratio "$(med allocopen 4)" "$(med bareopen 4)")** | $(ratio "$(med allocopen 5)" "$(med bareopen 5)") | $(ratio "$(med allocopen 7)" "$(med bareopen 7)") | | |
$(row batch "idalloc \`/alloc?app_tag=test_business&count=1000\`")
$(row step1m "idalloc \`/alloc\`, tag with step 1,000,000")
$(row step100 "idalloc \`/alloc\`, tag with step $(int "$SMALL") (segment.max_step $(int "$SMALL"))")
$(row step100a "idalloc \`/alloc\`, tag with step $(int "$SMALL"), adaptive step (default segment.max_step)")
$(row flake "idalloc \`/snowflake\`")
$(row flakebatch "idalloc \`/snowflake?count=1000\`")

Every ID of every run was kept and checked: $(int "$checked") IDs, $dups duplicates, $order violations of
per-connection strict increase, $malformed malformed answers.
Segment fetches: the step-$(int "$SMALL") tag made $(int "$f100") over its $ROUNDS runs (mean $fd100 each, one synced
transaction; $(int "$(awk -v a="$f100" -v b="$fast100" 'BEGIN {print a - b}')") took over 4.5 ms); the default instance made $(int "$f1m") for all its tags.
At $(int "$(med step100 1)") req/s a $(int "$SMALL")-ID segment lasts $(awk -v r="$(med step100 1)" -v s="$SMALL" 'BEGIN { if (r > 0) printf "%.1f ms", 1000 * s / r; else print "–" }'); the next one is fetched in the background once
10% of the current one is used, so only a fetch slower than the remaining 90% makes requests wait.
p99.9, step $(int "$SMALL") ÷ step 1,000,000: $(ratio "$(med step100 5)" "$(med step1m 5)") with the step pinned,
$(ratio "$(med step100a 5)" "$(med step1m 5)") with the adaptive step. $fetch_note

| Go client, one tag | IDs/s | server CPU per 1,000 IDs |
|---|--:|--:|
| \`client.Next\` refilled in the background from ranges (\`cmd/clientload\`: $(jnum "$tmp/client.1.json" goroutines) goroutine(s), pinned as idload is) | $(int "$(med client 1)") | $(awk -v v="$(med client 2)" 'BEGIN {printf "%.1f µs", v}') |

clientload kept and checked $(int "$(sum client 3)") IDs: $(sum client 4) duplicates, $(sum client 5) violations of
per-goroutine strict increase. It measures what one server feeds one tag of one client while its callers run.
$(resp_table)$(old_table)$(engines_table)

In-process, \`go test -run XXX -bench 'Next|AtomicAdd' ./segment/ ./snowflake/\` (GOMAXPROCS $ncpu, not pinned):

| package | benchmark | ns/op | allocs/op |
|---|---|--:|--:|
$(awk '/^pkg: / {pkg = $2; sub(/.*\//, "", pkg)}
	/^Benchmark/ {
		ns = ""; al = ""
		for (i = 3; i < NF; i++) { if ($(i + 1) == "ns/op") ns = $i; if ($(i + 1) == "allocs/op") al = $i }
		printf "| %s | %s | %s | %s |\n", pkg, $1, ns, al
	}' "$tmp/bench.txt")
EOF
)

printf '%s\n' "$table"
if [[ -n $out ]]; then
	printf '%s\n' "$table" >"$out"
	say "table written to $out"
fi
if ((failed)); then
	say "some runs failed their checks (duplicates, order or malformed answers): see above"
	exit 2
fi
