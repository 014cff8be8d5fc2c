# shellcheck shell=bash
# perf_engines.sh: the engines rows of perf.sh, which sources this file and
# provides tmp, ROUNDS, DUR, WARM, CONNS, LIFETIME, runid, say, die,
# start_idalloc, create_tag, measure, metric, med, sum, int, lat and ratio.
# Without PERF_ENGINES=1 it does nothing.
#
#   PERF_ENGINES=1 scripts/perf.sh
#
# starts three more idalloc instances, the same binary and config but for
# the store: SQLite (a temporary file), MariaDB and PostgreSQL, each with
# segment.max_step 1, and in every round measures on each, in an order that
# rotates from round to round: /alloc on test_business, and /alloc on a tag
# with step 1, where every ID is one fetch (one transaction, one
# compare-and-set), so its IDs/s is the fetches/s one tag sustains on that
# engine. One instance per engine serves both rows: max_step only caps the
# adaptive step's growth, so test_business keeps its row's step, 100,000.
#
# Environment (optional):
#   IDALLOC_TEST_PERF_DSN     the MariaDB/MySQL database (go-sql-driver DSN), as
#                        perf.sh's; else a private database made on
#                        127.0.0.1:3306 as root (the mariadb client), dropped
#                        at the end
#   IDALLOC_TEST_PERF_PG_DSN  the PostgreSQL database (as pgx takes it); else a
#                        private database made on 127.0.0.1:5432 as user
#                        postgres (psql), dropped at the end
#   PERF_STEP1_CONNS=8   connections of the step-1 rows: each request waits
#                        for a fetch of its own, one at a time per tag, so
#                        more connections only queue (p99 ≈ connections ×
#                        one fetch) and near wait_timeout (1s) would fail
# Tags named perf_step1_<run id> stay behind in a database given by DSN.

ENGINES=${PERF_ENGINES:-}
STEP1_CONNS=${PERF_STEP1_CONNS:-8}
eng_names=(sqlite mariadb postgres)
eng_kinds=(e_alloc_sqlite e_alloc_mariadb e_alloc_postgres e_step1_sqlite e_step1_mariadb e_step1_postgres)
eng_made_my="" eng_made_pg="" # the private databases this run made, to drop
# Six more rows a round: about a minute with the default durations.
[[ -z $ENGINES ]] || LIFETIME=$((LIFETIME + 60 * ROUNDS))

# eng_sql_my SQL and eng_sql_pg SQL: one statement on the local servers, as
# .ci/run reaches them.
eng_sql_my() { "$eng_my_client" -h127.0.0.1 -P3306 -uroot -N -B -e "$1"; }
eng_sql_pg() { psql -w -X -q -h 127.0.0.1 -p 5432 -U postgres -d postgres -Atc "$1"; }

# engines_dbs: the DSNs of the two server engines, making private databases
# where none is given, and what the table says of each (version, durability).
# The eng_dsn_* are read by name in engines_start.
# shellcheck disable=SC2034
engines_dbs() {
	local name="idalloc_perf_${runid}_$$"
	eng_my_client=$(command -v mariadb || command -v mysql || true)
	if [[ -n ${IDALLOC_TEST_PERF_DSN:-} ]]; then
		eng_dsn_mariadb=$IDALLOC_TEST_PERF_DSN
		eng_desc_mariadb="the database of IDALLOC_TEST_PERF_DSN (its server's settings not read)"
	else
		if [[ -z $eng_my_client ]] || ! eng_sql_my 'SELECT 1' >/dev/null 2>&1; then
			die "PERF_ENGINES=1: no MariaDB answers as root on 127.0.0.1:3306 (start one as .ci/run does, or set IDALLOC_TEST_PERF_DSN)"
		fi
		eng_sql_my "CREATE DATABASE $name" || die "cannot create database $name on 127.0.0.1:3306"
		eng_made_my=$name
		eng_dsn_mariadb="root@tcp(127.0.0.1:3306)/$name"
		eng_desc_mariadb="$(eng_sql_my 'SELECT CONCAT(VERSION(), ", innodb_flush_log_at_trx_commit ",
			@@innodb_flush_log_at_trx_commit, ", log_bin ", @@log_bin, ", sync_binlog ", @@sync_binlog)'), a private database on 127.0.0.1:3306"
	fi
	command -v psql >/dev/null || [[ -n ${IDALLOC_TEST_PERF_PG_DSN:-} ]] || die "PERF_ENGINES=1 needs psql, or IDALLOC_TEST_PERF_PG_DSN"
	if [[ -n ${IDALLOC_TEST_PERF_PG_DSN:-} ]]; then
		eng_dsn_postgres=$IDALLOC_TEST_PERF_PG_DSN
		eng_desc_postgres="the database of IDALLOC_TEST_PERF_PG_DSN"
	else
		eng_sql_pg 'SELECT 1' >/dev/null 2>&1 ||
			die "PERF_ENGINES=1: no PostgreSQL answers as postgres on 127.0.0.1:5432 (start one as .ci/run does, or set IDALLOC_TEST_PERF_PG_DSN)"
		eng_sql_pg "CREATE DATABASE $name" || die "cannot create database $name on 127.0.0.1:5432"
		eng_made_pg=$name
		eng_dsn_postgres="postgres://postgres@127.0.0.1:5432/$name?sslmode=disable"
		eng_desc_postgres="PostgreSQL $(eng_sql_pg "SELECT current_setting('server_version') || ', synchronous_commit ' ||
			current_setting('synchronous_commit') || ', fsync ' || current_setting('fsync')"), a private database on 127.0.0.1:5432"
	fi
	eng_dsn_sqlite="$tmp/eng_sqlite.db"
	eng_desc_sqlite="a temporary file, WAL, synchronous=FULL, in the server process"
}

# engines_start: the three instances, and the step-1 tag on each.
engines_start() {
	[[ -n $ENGINES ]] || return 0
	engines_dbs
	local e cfg addr drv dsn
	tag1=perf_step1_$runid
	for e in "${eng_names[@]}"; do
		drv=$e
		[[ $e == mariadb ]] && drv=mysql
		cfg="$tmp/eng_$e.json"
		dsn="eng_dsn_$e"
		cat >"$cfg" <<EOF
{
  "http_addr": "127.0.0.1:0",
  "driver": "$drv",
  "dsn": "${!dsn}",
  "shutdown_drain": "0s",
  "segment": {"max_step": 1},
  "snowflake": {"enabled": false}
}
EOF
		# driver=engine: not perf.sh's mysql, whose branch would put
		# IDALLOC_TEST_PERF_DSN over the config's store.
		if [[ $e == sqlite ]]; then
			driver=engine start_idalloc "eng_$e" "$cfg"
		else
			driver=engine start_idalloc "eng_$e" "$cfg" "$tmp/idalloc" -init-schema
		fi
		addr="eng_${e}_addr"
		create_tag "${!addr}" "$tag1" 1
	done
	say "engines: sqlite on $eng_sqlite_addr, mariadb on $eng_mariadb_addr, postgres on $eng_postgres_addr (segment.max_step 1)"
}

# engines_round ROUND: both rows on every engine, the engines' order rotated
# by one each round so that none is always first after the other rows.
engines_round() {
	[[ -n $ENGINES ]] || return 0
	local round=$1 row i e pid addr
	for row in alloc step1; do
		for i in 0 1 2; do
			e=${eng_names[$(((i + round) % 3))]}
			pid="eng_${e}_pid" addr="eng_${e}_addr"
			if [[ $row == alloc ]]; then
				measure "e_alloc_$e" "${!pid}" "${!addr}" "$round" -mode segment -tag test_business
			else
				measure "e_step1_$e" "${!pid}" "${!addr}" "$round" -mode segment -tag "$tag1" -c "$STEP1_CONNS"
			fi
		done
	done
}

# engines_cleanup: drops the private databases (after the servers stopped).
engines_cleanup() {
	[[ -z $eng_made_my ]] || eng_sql_my "DROP DATABASE IF EXISTS $eng_made_my" || say "could not drop database $eng_made_my"
	[[ -z $eng_made_pg ]] || eng_sql_pg "DROP DATABASE IF EXISTS $eng_made_pg WITH (FORCE)" || say "could not drop database $eng_made_pg"
}

# eng_row LABEL KIND COLUMN FORMAT [lower]: one engine row, its ratios to
# MariaDB.
eng_row() {
	local label=$1 kind=$2 col=$3 fmt=$4 e v m
	m=$(med "e_${kind}_mariadb" "$col")
	printf '| %s ' "$label"
	for e in "${eng_names[@]}"; do
		v=$(med "e_${kind}_$e" "$col")
		printf '| %s ' "$($fmt "$v")"
	done
	printf '| %s | %s |\n' "$(ratio "$(med "e_${kind}_sqlite" "$col")" "$m")" "$(ratio "$(med "e_${kind}_postgres" "$col")" "$m")"
}

# eng_fetch: each instance's fetches and their mean duration, from its
# metrics (test_business's few fetches included, and the warm-ups').
eng_fetch() {
	local e a
	local -A n ms
	for e in "${eng_names[@]}"; do
		a="eng_${e}_addr"
		n[$e]=$(metric "${!a}" fetches_total)
		ms[$e]=$(awk -v s="$(metric "${!a}" fetch_duration_seconds_sum)" -v n="${n[$e]}" 'BEGIN { print (n > 0 ? 1000 * s / n : 0) }')
	done
	printf '| segment fetches made, all rounds | %s | %s | %s | | |\n' "$(int "${n[sqlite]}")" "$(int "${n[mariadb]}")" "$(int "${n[postgres]}")"
	printf '| mean fetch, server side (idalloc_segment_fetch_duration_seconds) '
	for e in "${eng_names[@]}"; do
		printf '| %s ' "$(awk -v v="${ms[$e]}" 'BEGIN { if (v > 0) printf "%.2f ms", v; else print "–" }')"
	done
	printf '| %s | %s |\n' "$(ratio "${ms[sqlite]}" "${ms[mariadb]}")" "$(ratio "${ms[postgres]}" "${ms[mariadb]}")"
}

# engines_table: the engines section of the table.
engines_table() {
	[[ -n $ENGINES ]] || return 0
	local k checked=0 dups=0 errors=0
	for k in "${eng_kinds[@]}"; do
		checked=$((checked + $(sum "$k" 9))) dups=$((dups + $(sum "$k" 10))) errors=$((errors + $(sum "$k" 6)))
	done
	cat <<EOF

Engines side by side (\`PERF_ENGINES=1\`): three more idalloc instances, one per store, each with
segment.max_step 1, measured in the same $ROUNDS interleaved rounds (the engines' order rotating every round); medians.
SQLite: $eng_desc_sqlite. MariaDB: $eng_desc_mariadb.
PostgreSQL: $eng_desc_postgres. The database servers share this machine's CPUs,
unpinned (idload's CPU included); the server CPU of the SQLite instance includes its store's work.
/alloc on test_business ($CONNS connections) keeps that row's step, 100,000 (max_step caps only the adaptive growth): one
fetch per 100,000 IDs, in the background. Step 1 ($STEP1_CONNS connections): every ID is one fetch, one transaction whose
compare-and-set commits durably, and an instance runs one fetch at a time per tag, so IDs/s is the fetches/s one
tag sustains on one instance. Ratios are to MariaDB (req/s and IDs/s: higher is better; latency: lower is better).

| | SQLite | MariaDB | PostgreSQL | SQLite ÷ MariaDB | PostgreSQL ÷ MariaDB |
|---|--:|--:|--:|--:|--:|
$(eng_row "\`/alloc?app_tag=test_business\`, req/s" alloc 1 int)
$(eng_row "\`/alloc?app_tag=test_business\`, p99" alloc 4 lat)
$(eng_row "step 1: IDs/s = fetches/s of one tag" step1 2 int)
$(eng_row "step 1: p50" step1 3 lat)
$(eng_row "step 1: p99" step1 4 lat)
$(eng_fetch)

Engines rows: $(int "$checked") IDs checked, $dups duplicates, $errors errors (all rounds).
EOF
}
