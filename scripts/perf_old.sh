# shellcheck shell=bash
# perf_old.sh: the old-against-new rows of perf.sh, which sources this file
# and provides tmp, srv_pin, load_pin, DUR, WARM, CONNS, ROUNDS, RESP_N,
# resp_skip, resp_port, main_pid, main_addr, commit, failed, write_config,
# start_idalloc, measure, client_measure, resp_measure, resp_cmd, free_port,
# cpu_ticks, jnum, say, die, med, sum, int, lat and ratio. Without PERF_OLD
# it does nothing.
#
#   PERF_OLD=30f3676 scripts/perf.sh
#
# builds idalloc at that git revision (git archive into the temporary
# directory, go build there, the sources removed after), starts it beside
# this tree's default instance with the same config (its own SQLite file,
# its own resp_addr), and in every round measures, old and new back to back
# (the order swapped from row to row and round to round): /alloc with
# idload, GET over RESP pipelined (-P 16) with redis-benchmark, and the Go
# client with cmd/clientload. The load tools are built once, from this tree,
# so both servers answer the same clients. SQLite only: two binaries of
# different ages should not share one MySQL schema.

OLD=${PERF_OLD:-}
# Every server stops by itself after LIFETIME: these rows take about a
# minute more per round with the default durations.
[[ -z $OLD ]] || LIFETIME=$((LIFETIME + 60 * ROUNDS))

# old_build: the old binary, into tmp.
old_build() {
	[[ -n $OLD ]] || return 0
	[[ -z ${IDALLOC_TEST_PERF_DSN:-} ]] || die "PERF_OLD measures on SQLite only: unset IDALLOC_TEST_PERF_DSN"
	old_rev=$(git rev-parse --verify --quiet "$OLD^{commit}") || die "PERF_OLD=$OLD is not a revision of this repository"
	old_label=$(git rev-parse --short "$old_rev")
	say "building idalloc $old_label (PERF_OLD)"
	mkdir "$tmp/old-src"
	git archive "$old_rev" | tar -x -C "$tmp/old-src" || die "git archive $old_label failed"
	(cd "$tmp/old-src" && go build -o "$tmp/idalloc-old" .) || die "go build of idalloc $old_label failed"
	rm -rf "$tmp/old-src"
}

# old_start: the old idalloc, configured as perf.sh's default instance.
old_start() {
	[[ -n $OLD ]] || return 0
	local resp=""
	old_resp_port=""
	if [[ -z $resp_skip ]]; then
		old_resp_port=$(free_port)
		resp="\"resp_addr\": \"127.0.0.1:$old_resp_port\","
	fi
	write_config "$tmp/old.json" "$tmp/old.db" 1000000 true "$resp"
	start_idalloc old "$tmp/old.json" "$tmp/idalloc-old"
	if [[ -n $old_resp_port ]]; then
		for _ in $(seq 100); do
			resp_cmd "$old_resp_port" PING | grep -q '^+PONG' && break
			sleep 0.1
		done
		resp_cmd "$old_resp_port" PING | grep -q '^+PONG' ||
			die "idalloc $old_label does not answer PING on resp_addr 127.0.0.1:$old_resp_port"
	fi
	say "idalloc $old_label (PERF_OLD) on $old_addr${old_resp_port:+, resp_addr 127.0.0.1:$old_resp_port}"
}

# old_one SIDE ROW ROUND: one measurement of ROW (alloc, resp or client)
# against SIDE (old or new), into SIDEROW.tsv.
old_one() {
	local pid=$main_pid addr=$main_addr port=$resp_port
	if [[ $1 == old ]]; then
		pid=$old_pid addr=$old_addr port=$old_resp_port
	fi
	case $2 in
	alloc) measure "$1alloc" "$pid" "$addr" "$3" -mode segment -tag test_business ;;
	resp) [[ -n $resp_skip ]] || resp_measure "$1resp" "$pid" "$port" 16 "$RESP_N" ;;
	client) client_measure "$1client" "$pid" "$addr" "$3" ;;
	esac
}

# old_round ROUND: every old-against-new row once, in ABBA order (the side
# that goes first alternates from row to row and from round to round).
old_round() {
	[[ -n $OLD ]] || return 0
	local a=old b=new
	(($1 % 2)) || {
		a=new
		b=old
	}
	old_one "$a" alloc "$1"
	old_one "$b" alloc "$1"
	old_one "$b" resp "$1"
	old_one "$a" resp "$1"
	old_one "$a" client "$1"
	old_one "$b" client "$1"
}

# old_pair LABEL ROW COLUMN FORMAT: one table line, old, new, new ÷ old.
old_pair() {
	local o n
	o=$(med "old$2" "$3")
	n=$(med "new$2" "$3")
	case $4 in
	int) printf '| %s | %s | %s | **%s** |\n' "$1" "$(int "$o")" "$(int "$n")" "$(ratio "$n" "$o")" ;;
	lat) printf '| %s | %s | %s | %s |\n' "$1" "$(lat "$o")" "$(lat "$n")" "$(ratio "$n" "$o")" ;;
	*) printf '| %s | %s | %s | %s |\n' "$1" "$(awk -v v="$o" -v f="$4" 'BEGIN {printf f, v}')" \
		"$(awk -v v="$n" -v f="$4" 'BEGIN {printf f, v}')" "$(ratio "$n" "$o")" ;;
	esac
}

# old_table: the old-against-new section of the table, after the RESP rows.
old_table() {
	[[ -n $OLD ]] || return 0
	local resp_rows="" checked procs
	checked=$(($(sum oldalloc 9) + $(sum newalloc 9) + $(sum oldclient 3) + $(sum newclient 3)))
	procs=$(jnum "$tmp/newclient.1.json" goroutines)
	if [[ -z $resp_skip ]]; then
		resp_rows=$(
			old_pair "RESP \`GET test_business\`, -P 16: req/s (= IDs/s)" resp 1 int
			old_pair "RESP -P 16: p50" resp 2 lat
			old_pair "RESP -P 16: p99" resp 3 lat
			old_pair "RESP -P 16: server CPU/req" resp 4 "%.2f µs"
		)
		resp_rows=$'\n'$resp_rows
	fi
	cat <<EOF


Old against new (\`PERF_OLD=$OLD\`): idalloc $old_label, built from \`git archive\`, beside idalloc $commit (the default
instance above), the same config and a SQLite file each, measured back to back in each of the $ROUNDS rounds
(which goes first alternates from row to row and round to round) by the same load tools, built from this tree; medians.
The client row is \`cmd/clientload\`: $procs goroutine(s) (GOMAXPROCS, pinned as idload is) call \`client.Next\` on one
\`client.Client\` (default MaxRange and MaxBatch) for $DUR after $WARM warm-up while it refills from the server in the background;
it measures what one server feeds one tag of one client, every ID checked. Ratios: new ÷ old
(req/s and IDs/s: higher is better; the rest: lower is better).

| old $old_label against new $commit | old | new | new ÷ old |
|---|--:|--:|--:|
$(old_pair "\`/alloc?app_tag=test_business\`, $CONNS connections: req/s" alloc 1 int)
$(old_pair "\`/alloc\`: p50" alloc 3 lat)
$(old_pair "\`/alloc\`: p99" alloc 4 lat)
$(old_pair "\`/alloc\`: server CPU/req" alloc 7 "%.1f µs")$resp_rows
$(old_pair "Go client \`Next\` (\`cmd/clientload\`): IDs/s" client 1 int)
$(old_pair "Go client: server CPU per 1,000 IDs" client 2 "%.1f µs")

These rows checked $(int "$checked") IDs: $(($(sum oldalloc 10) + $(sum newalloc 10) + $(sum oldclient 4) + $(sum newclient 4))) duplicates, $(($(sum oldalloc 11) + $(sum newalloc 11) + $(sum oldclient 5) + $(sum newclient 5))) order violations, $(($(sum oldalloc 12) + $(sum newalloc 12))) malformed answers.
EOF
}
