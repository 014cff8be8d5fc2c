// Package e2e is idalloc's end-to-end fault suite. It holds only tests: they
// build the idalloc binary once per test process, start a private MariaDB
// (its own datadir, socket and port under a temporary directory, so it can be
// frozen and killed without touching any other server), and drive real
// idalloc processes over HTTP on 127.0.0.1 through the faults the contract
// (docs/api.md §5) must survive:
//
//   - kill -9 of one of three instances sharing a database, twice, under load;
//   - graceful restarts (no ID wasted) followed by a kill -9 (none re-issued);
//   - the database frozen with SIGSTOP for 10 s (buffered IDs flow, /health
//     degraded, resp_code 3 with Retry-After at once, recovery on SIGCONT);
//   - a snowflake instance frozen past its worker lease TTL while another
//     takes its worker ID over (no duplicate, no ID under a lapsed lease);
//   - a lease store that forgets while an instance holds a worker ID under
//     load (FLUSHALL and a restart of a private Redis without persistence,
//     a private etcd's data wiped, the SQL worker_leases rows deleted), and a
//     second instance starts at once: no duplicate, the new grant waits out
//     TTL + max_drift_error (needs redis-server, etcd);
//   - two snowflake instances under load while their cluster's
//     worker_leases rows are deleted three times, then one worker ID's row:
//     no duplicate, each next grant of a deleted worker ID waits;
//   - SIGTERM under load (/health draining at once, /alloc served through the
//     drain, exit status 0);
//   - a scrambled tag across graceful restarts and a kill -9 (no ID repeats,
//     every ID of the tag's length);
//   - 60 Redis-protocol clients that pipeline SNOWFLAKE 1000 and never read,
//     with the default configuration (the process stays under 300 MB: they
//     are cut at resp_max_pending_total or resp_max_pending, counted);
//   - max_conns (10,000) keep-alive connections held idle by one client:
//     new clients are still answered within 2 s (it raises RLIMIT_NOFILE
//     if it may, or skips);
//   - resp_max_conns (200) connections each sending half a GET, some
//     trickling a byte every 0.5 s: a new client is served at once, and
//     each of them is answered an error and closed at resp_command_timeout;
//     twice max_conns (300) connections sending headers one line every 0.2
//     to 0.5 s, reopened when closed: two clients calling /alloc meanwhile
//     have at least 99 % of their requests answered (the figures are
//     logged);
//   - two regions (region.count 2) on two private MariaDB servers, two
//     instances each, the same tags created in both, under load for 30 s
//     with region 1's server frozen for the middle 10 s: no ID of a tag
//     twice, each region's IDs ≡ its region.id (mod 2) and interleaved
//     with the other's, region 0's callers unaffected; snowflake worker IDs
//     split between the regions (worker_bits 2, no ID twice); a database
//     recorded as one region refuses instances configured as another;
//   - a 3-node MariaDB Galera cluster (multi-primary) of its own, on loopback
//     ports, shared by the Galera tests: concurrent store fetches through
//     every node never overlap; three instances, one per node, step 10, issue
//     no duplicate; three snowflake instances starting at once get distinct
//     worker IDs without waiting; a node killed with -9 under load and
//     restarted costs no duplicate while the others keep serving.
//
// Run it with
//
//	go test -race -count=1 -v ./e2e/
//
// It needs mariadbd and mariadb-install-db (on PATH, or in /usr/sbin and
// /usr/bin); without them, or with -short, every test skips with a one-line
// reason; the Galera tests also need root (the nodes run as user mysql),
// galera-4's /usr/lib/galera/libgalera_smm.so and rsync. Every process it starts is killed by PID at cleanup, and dies with
// the test process (Pdeathsig) if that is killed.
package e2e
