# perf_resp.sh: the Redis-protocol rows of perf.sh, which sources this file
# and provides tmp, pids, srv_pin, load_pin, life, CONNS, cpu_ticks, say, die,
# med, int, lat and ratio.
#
# redis-benchmark GET against idalloc's resp_addr, beside a private
# redis-server's own GET of one key (started here on a free port, pinned like
# the other servers, stopped by PID with them), pipelined (-P 16) and not
# (-P 1). redis-benchmark reads the answers but keeps no IDs: uniqueness over
# RESP is what resp/'s tests check; here only speed is measured.
#
# Environment (optional):
#   PERF_RESP_N=1000000  requests per -P 16 run; -P 1 runs send a tenth of it

RESP_N=${PERF_RESP_N:-1000000}
resp_skip="" # why there are no RESP rows, when there are none

# free_port: a loopback port nothing listens on now. The server started on
# it fails loudly if another process takes it first.
free_port() {
	local p
	for _ in $(seq 100); do
		p=$((20000 + RANDOM % 40000))
		(exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || {
			echo "$p"
			return 0
		}
	done
	die "no free port found"
}

# resp_prepare: sets resp_json, the resp_addr line of idalloc's config, when
# the rows will run, and resp_skip, why not, when they will not.
resp_prepare() {
	local t
	resp_json=""
	for t in redis-benchmark redis-server; do
		if ! command -v "$t" >/dev/null; then
			resp_skip="$t not installed (apt-get install -y redis-server redis-tools)"
			return 0
		fi
	done
	resp_port=$(free_port)
	resp_json="\"resp_addr\": \"127.0.0.1:$resp_port\","
}

# resp_start: redis-server on a free port, without persistence, its key set
# so that its GET answers a value as idalloc's does.
resp_start() {
	[[ -z $resp_skip ]] || return 0
	local pid port
	port=$(free_port)
	"${srv_pin[@]}" "${life[@]}" redis-server --bind 127.0.0.1 --port "$port" --save '' --appendonly no \
		--dir "$tmp" --daemonize no >"$tmp/redis.log" 2>&1 &
	pid=$!
	pids+=("$pid")
	redis_pid=$(proc_of "$pid") || exit 1
	redis_port=$port
	for _ in $(seq 100); do
		resp_cmd "$redis_port" SET test_business 1 | grep -q '^+OK' && break
		sleep 0.1
	done
	resp_cmd "$redis_port" GET test_business | grep -q '^\$1' || {
		cat "$tmp/redis.log" >&2
		die "redis-server did not start on $port"
	}
	for _ in $(seq 100); do
		resp_cmd "$resp_port" PING | grep -q '^+PONG' && break
		sleep 0.1
	done
	resp_cmd "$resp_port" PING | grep -q '^+PONG' || die "idalloc does not answer PING on resp_addr 127.0.0.1:$resp_port"
	say "redis-server on 127.0.0.1:$redis_port, idalloc's resp_addr on 127.0.0.1:$resp_port"
}

# resp_cmd PORT ARGS...: one command over bash's /dev/tcp, its first reply
# line (no redis-cli needed).
resp_cmd() {
	local port=$1 a req
	shift
	req="*$#\r\n"
	for a in "$@"; do req+="\$${#a}\r\n$a\r\n"; done
	(
		exec 3<>"/dev/tcp/127.0.0.1/$port" || exit 1
		printf '%b' "$req" >&3
		IFS= read -r -t 2 line <&3 && printf '%s\n' "${line%$'\r'}"
	) 2>/dev/null || true
}

# resp_measure NAME PID PORT PIPELINE N: one redis-benchmark run, one line
# appended to NAME.tsv: req/s p50-µs p99-µs server-CPU-µs/req.
resp_measure() {
	local name=$1 pid=$2 port=$3 pipe=$4 n=$5 c0 c1 csv
	c0=$(cpu_ticks "$pid")
	csv=$("${load_pin[@]}" redis-benchmark -h 127.0.0.1 -p "$port" -c "$CONNS" -n "$n" -P "$pipe" --csv \
		GET test_business 2>>"$tmp/redis-benchmark.err" | tail -1) || true
	c1=$(cpu_ticks "$pid")
	[[ $csv == '"GET test_business",'* ]] || die "redis-benchmark $name: $csv $(tail -3 "$tmp/redis-benchmark.err")"
	awk -F'","' -v c0="$c0" -v c1="$c1" -v clk="$clk" -v n="$n" '{
		gsub(/"/, "", $NF)
		print $2, $5 * 1000, $7 * 1000, (c1 - c0) / clk * 1e6 / n }' <<<"$csv" >>"$tmp/$name.tsv"
	say "$(printf '%-9s -P %-2s %8.0f req/s' "$name" "$pipe" "$(tail -1 "$tmp/$name.tsv" | awk '{print $1}')")"
}

# resp_round ROUND: every RESP row once; idalloc and redis-server swap order
# every round, as the HTTP pairs do.
resp_round() {
	[[ -z $resp_skip ]] || return 0
	local pipe n
	for pipe in 16 1; do
		n=$RESP_N
		((pipe == 1)) && n=$((RESP_N / 10))
		if [ $(($1 % 2)) -eq 1 ]; then
			resp_measure "respP$pipe" "$main_pid" "$resp_port" "$pipe" "$n"
			resp_measure "redisP$pipe" "$redis_pid" "$redis_port" "$pipe" "$n"
		else
			resp_measure "redisP$pipe" "$redis_pid" "$redis_port" "$pipe" "$n"
			resp_measure "respP$pipe" "$main_pid" "$resp_port" "$pipe" "$n"
		fi
	done
}

resp_row() { # NAME LABEL
	printf '| %s | %s | %s | %s | %s |\n' "$2" "$(int "$(med "$1" 1)")" \
		"$(lat "$(med "$1" 2)")" "$(lat "$(med "$1" 3)")" \
		"$(awk -v v="$(med "$1" 4)" 'BEGIN {printf "%.2f µs", v}')"
}

# resp_table: the RESP section of the table (after the HTTP rows exist).
resp_table() {
	if [[ -n $resp_skip ]]; then
		printf '\nRESP rows skipped: %s.\n' "$resp_skip"
		return 0
	fi
	cat <<EOF

Redis protocol: \`redis-benchmark -c $CONNS -n N -P 16|1 GET test_business\` (redis-benchmark $(redis-benchmark --version | awk '{print $2}'),
N = $(int "$RESP_N") pipelined, $(int "$((RESP_N / 10))") not) against idalloc's \`resp_addr\` (the same process as the rows above) and
against a private redis-server $(redis-server --version | sed -n 's/.*v=\([0-9.]*\).*/\1/p') GETting one key, pinned like the servers above, in the same
$ROUNDS interleaved rounds; medians. Each GET is one ID; latency is redis-benchmark's, per request.

| GET over RESP, $CONNS connections | req/s (= IDs/s) | p50 | p99 | server CPU/req |
|---|--:|--:|--:|--:|
$(resp_row respP16 "idalloc \`GET test_business\`, -P 16")
$(resp_row redisP16 "redis-server \`GET\` of one key, -P 16")
| **idalloc ÷ redis-server, -P 16** | **$(ratio "$(med respP16 1)" "$(med redisP16 1)")** | | | $(ratio "$(med respP16 4)" "$(med redisP16 4)") |
$(resp_row respP1 "idalloc \`GET test_business\`, -P 1")
$(resp_row redisP1 "redis-server \`GET\` of one key, -P 1")
| **idalloc ÷ redis-server, -P 1** | **$(ratio "$(med respP1 1)" "$(med redisP1 1)")** | | | $(ratio "$(med respP1 4)" "$(med redisP1 4)") |
| **RESP -P 16 ÷ HTTP \`/alloc\`** (req/s, same run) | **$(ratio "$(med respP16 1)" "$(med alloc 1)")** | | | |
| **RESP -P 1 ÷ HTTP \`/alloc\`** | **$(ratio "$(med respP1 1)" "$(med alloc 1)")** | | | |
EOF
}
