// Package manytags measures idalloc serving many tags (docs/api.md §13): it
// holds only a test, skipped unless IDALLOC_TEST_MANY_TAGS names the tag counts
// to measure (IDALLOC_TEST_MANY_TAGS=10000,100000), so that CI does not pay for
// it. For each count and store (the embedded SQLite, and MySQL or MariaDB
// when IDALLOC_TEST_MYSQL_DSN is set) it runs two idalloc processes built
// from this module, each on a fresh database of its own: one with the
// seeded tag only, one given the tags by one bulk create through the store
// (CreateTags: a transaction per thousand), and takes one ID of every
// tag, and as many of the other's one tag, so that both served the same
// requests, and asks each for GET /status once, as a monitor page would
// (every tag then holds its last minutes' history). It then samples both processes' resident memory (VmRSS, VmHWM) every
// second over a minute of idle serving (IDALLOC_TEST_MANY_TAGS_IDLE=30s
// shortens it), tag-list reloads included (every segment.tag_refresh,
// 10s; IDALLOC_TEST_MANY_TAGS_REFRESH=2s makes a full reload, every 30th, fall
// within the minute), and prints: how long the
// create took and how long until the running process served the last tag,
// the peak RSS of each and the difference per tag, the size of /metrics
// (text and gzip), how long /status takes, and /alloc latency of one tag
// on each process, measured in alternating rounds so that both see the
// same machine.
//
// Run it with
//
//	IDALLOC_TEST_MANY_TAGS=10000,100000 go test -count=1 -v -timeout 2h ./e2e/manytags/
//
// What the figures include: every per-tag structure of the process as
// built, the per-tag series of /metrics and the whole /status answer
// included.
package manytags
