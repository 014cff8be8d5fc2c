// Package dated is the pure core of idalloc's business-number format
// `dated` (docs/api.md §11): numbers that carry the period they were issued in
// and restart each period, such as 20261126000123 or ORD-20261126-000123.
// It holds the layout, the settings and their checks, the period
// arithmetic and the composition of IDs, and nothing else: no I/O, no
// clock, no store. The segment allocator keeps one counter per (tag,
// stamp) in its store and asks this package which stamp an instant
// belongs to and how a (stamp, sequence) pair is written.
//
// # The number
//
// An ID is prefix, separator, stamp, separator, sequence:
//
//	prefix ORD, separator -:  ORD-20261126-000123
//	prefix ORD, no separator: ORD20261126000123
//	separator - only:         20261126-000123
//	neither:                  20261126000123 (a number: stamp × 10^length + sequence)
//
// The stamp is the period's wall-clock reading in the tag's time zone,
// yyyy, yyyyMM, yyyyMMdd, yyyyMMddHH or yyyyMMddHHmm (4 to 12 digits); the
// sequence is zero-padded to length digits. Stamp digits + length ≤ 18,
// so the numeric form is below 10^18 < 2^63 and fits an int64, and the
// longest text is MaxTextLength bytes. Each period issues the sequence
// numbers start to 10^length − 1; a start above that is refused (a period
// with no number in it is a tag that can never issue). When a period's
// numbers are spent the caller answers ErrPeriodExhausted until Key.End,
// where the next period's counter begins at start again.
//
// # Periods and the clocks
//
// Format.Of maps an instant to its Key: the stamp and the stretch of real
// time [Start, End) over which the zone's wall clock reads that stamp.
// The next period is Of(k.End). Of never reads a clock: the caller passes
// the instant, read from the instance's own (injectable) clock. Reading
// the store's clock for every ID would cost a round trip per ID, and it is
// not what uniqueness rests on: (stamp, sequence) is unique because each
// stamp has its own counter in the store, advanced by compare-and-set, so
// two instances that disagree about the period merely draw from two
// counters, each without repeats. The clock decides only whether the stamp
// is right, that a number issued at 23:59:59.9 does not carry tomorrow's
// date. For that the caller bounds the instance's clock by the store's: it
// measures the difference at every fetch and refuses dated tags while it
// exceeds dated.max_clock_skew. That check lives with the caller, which
// has both clocks; this package has neither.
//
// Stamps are for years 1000 to 9999 in the tag's zone, so that a stamp
// always has its period's number of digits; Of refuses an instant outside
// them (ErrClockRange: that clock is wrong).
//
// # Summer time, and why a stamp may continue instead of restarting
//
// Periods are the wall clock's, because that is what an order number is
// read against: the day 20261126 in Asia/Shanghai begins at 16:00 UTC,
// and a day in Europe/Berlin lasts 23 hours in spring and 25 in autumn.
//
//   - Spring forward (Europe/Berlin, 29 Mar 2026, 02:00 → 03:00): the wall
//     clock never reads 02:xx, so the hour stamp 2026032902 and the minute
//     stamps 2026032902mm are never issued; hour 01 ends where hour 03
//     begins.
//   - Fall back (25 Oct 2026, 03:00 → 02:00): the wall clock reads 02:xx
//     for two real hours in a row. The hour 2026102502 is one Key of two
//     hours; its numbers run on through both. Each minute stamp 02:mm
//     occurs twice, an hour apart: two Keys with the same Stamp, between
//     which other stamps are issued.
//
// The rule: a counter belongs to a stamp, never to a stretch of time, so a
// stamp that comes round again continues its numbers where they stopped;
// it does not restart at start. "Unique forever" and "restart each
// period" conflict only here, and uniqueness wins: an order number is a
// reference that ledgers, refunds and disputes rely on, while restarting
// is presentation. Giving the second 02:30 its own counter would issue
// 202610250230000001 twice, the very repeat CosId made at a restart (CosId
// #748). The two passes cannot be told apart in the number without a digit
// the layout does not have, and keeping standard time all year would make
// the stamp disagree with every clock in the zone for half the year. Who
// wants neither skipped nor repeated stamps names a zone without summer
// time (UTC, Asia/Shanghai). The same rule covers every zone change the
// tz database knows, including 30-minute ones (Australia/Lord_Howe) and
// skipped days (Pacific/Apia, 30 Dec 2011).
//
// # The zone database
//
// The package imports time/tzdata, the tz database embedded in the binary
// (about 450 KB), which time.LoadLocation falls back on when the machine
// has none. A tag's zone is stored with the tag and every instance must
// be able to load it: a container image without /usr/share/zoneinfo
// (scratch, distroless) would otherwise refuse to serve a tag another
// instance created, and the tests would depend on the machine. The machine's
// database is still preferred when present, so two instances with databases
// of different versions may disagree on a zone whose rules changed; that
// can move a stamp, never repeat a number, as above. "Local" is refused:
// it is each machine's own zone.
package dated

import _ "time/tzdata" // see the package comment: every instance must load every tag's zone
