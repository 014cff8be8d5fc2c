package server

import (
	"cmp"
	"compress/gzip"
	"io"
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/idalloc/idalloc/metrics"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/workerlease"
)

// GET /status is the monitor page's data, one answer per refresh for a
// page of the tags (paging.go: ?prefix=, ?after=, ?limit= from 1 to 1,000,
// 100 by default, ?sort=busiest): the instance's state as /health decides
// it, each tag's double buffer, and the snowflake lease. It is read from
// memory only (the allocator's snapshots, the health checker's last ping,
// the lease keeper, the drift counters), so a page left open costs the
// store nothing, and the server what the page holds, with no allocation
// per tag (BenchmarkStatus), plus at most one pass over every tag a
// second (metrics.Observer) for the IDs buffered in all, busiest first and
// each tag's last five minutes (its history, which the page draws).
//
// The answer is docs/api.md §10's. Every value that counts or names IDs
// is a JSON string of digits (JavaScript's numbers lose precision above
// 2^53); small figures are numbers. Nothing secret is in it: no scrambled
// tag's key, no lease token.

// The pools keep a polled /status from allocating per tag: the snapshots
// and the body grow once to the instance's tag count and are reused. Unlike
// bufPool they keep large buffers, which is the point here; an idle pool
// is emptied by the garbage collector.
var (
	snapPool       = sync.Pool{New: func() any { return new([]segment.TagSnapshot) }}
	statusBodyPool = sync.Pool{New: func() any { return new([]byte) }}
)

// handleStatus serves GET /status (guarded like GET /tags).
func (s *Server) handleStatus(w http.ResponseWriter, r *http.Request) int {
	q, err := s.readPageQuery(r.URL.RawQuery, statusLimits)
	if err != nil {
		return s.fail(w, r, err)
	}
	p := s.seg.TagPage(q)
	sp := snapPool.Get().(*[]segment.TagSnapshot)
	snaps := (*sp)[:0]
	for i := range p.Tags {
		snaps = append(snaps, s.snapshotOf(&p.Tags[i]))
	}
	bp := statusBodyPool.Get().(*[]byte)
	body := s.appendStatus((*bp)[:0], time.Now(), &p, snaps)
	if len(body) >= statusGzipMin && acceptsGzip(r.Header.Get("Accept-Encoding")) {
		sendGzipped(w, body)
	} else {
		send(w, http.StatusOK, body)
	}
	clear(snaps) // drop the tag names, so the pool pins no old strings
	*sp, *bp = snaps[:0], body[:0]
	snapPool.Put(sp)
	statusBodyPool.Put(bp)
	return http.StatusOK
}

// statusGzipMin is the body size from which /status is gzipped: about 25
// tags. A page left open on an instance of 1,000 tags would otherwise pull
// some 345 KB every second; its figures repeat, so gzip cuts that about
// tenfold for a few hundred µs of one core.
const statusGzipMin = 8 << 10

// gzipPool keeps gzip writers, whose state is some 800 KB to build anew.
var gzipPool = sync.Pool{New: func() any {
	zw, _ := gzip.NewWriterLevel(io.Discard, gzip.BestSpeed) // the level is valid
	return zw
}}

// sendGzipped answers 200 with body gzipped.
func sendGzipped(w http.ResponseWriter, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonCT
	h["Cache-Control"] = noStore
	h.Set("Content-Encoding", "gzip")
	h.Set("Vary", "Accept-Encoding")
	zw := gzipPool.Get().(*gzip.Writer)
	zw.Reset(w)
	// A write error means the client left; nobody to tell.
	_, _ = zw.Write(body)
	_ = zw.Close()
	zw.Reset(io.Discard) // drop w, so the pool pins no connection
	gzipPool.Put(zw)
}

// snapshotOf is row's snapshot, or for a tag this instance has no buffer
// for (yet) the row's settings and zeros. Until this instance's first
// fetch (of a dated tag's current period) its max_id is the row's, from
// start − 1 up: no fetch's 0.
func (s *Server) snapshotOf(row *segment.Tag) segment.TagSnapshot {
	snap, ok := s.seg.Snapshot(row.AppTag)
	if !ok {
		snap.AppTag, snap.Length = row.AppTag, row.Length
		snap.Format = cmp.Or(row.Format, segment.FormatSequential)
	}
	if snap.RowStep == 0 {
		snap.RowStep = row.Step
	}
	if snap.LastFetch.IsZero() {
		snap.MaxID = row.MaxID
	}
	return snap
}

// appendStatus appends the body of GET /status for page p, whose
// snapshots are snaps, to b.
func (s *Server) appendStatus(b []byte, now time.Time, p *segment.Page, snaps []segment.TagSnapshot) []byte {
	b = append(b, okPrefix+`,"now":`...)
	b = appendTime(b, now)
	b = append(b, `,"status":`...)
	b = appendString(b, s.health())
	b = append(b, `,"store_reachable":`...)
	b = strconv.AppendBool(b, s.storeOK.Load())
	b = append(b, `,"draining":`...)
	b = strconv.AppendBool(b, s.draining.Load())
	b = appendIntField(b, "buffered", s.obs.TotalBuffered())
	end := s.obs.HistoryEnd()
	b = append(b, `,"history_step_seconds":`...)
	b = strconv.AppendInt(b, int64(metrics.HistoryStep/time.Second), 10)
	b = append(b, `,"history_ends_at":`...)
	if end.IsZero() {
		b = append(b, "null"...)
	} else {
		b = appendTime(b, end)
	}
	b = s.appendSnowflake(append(b, `,"snowflake":`...), now)
	b = appendPageFields(b, p)
	b = append(b, `,"tags":[`...)
	for i := range snaps {
		if i > 0 {
			b = append(b, ',')
		}
		b = s.appendTagStatus(b, &snaps[i], end)
	}
	return append(b, "]}"...)
}

// appendTagStatus appends one tag's object, its history the steps before
// end.
func (s *Server) appendTagStatus(b []byte, t *segment.TagSnapshot, end time.Time) []byte {
	b = append(b, `{"app_tag":`...)
	b = appendString(b, t.AppTag)
	b = append(b, `,"format":`...)
	b = appendString(b, string(t.Format))
	b = append(b, `,"length":`...)
	b = strconv.AppendInt(b, int64(t.Length), 10)
	b = appendIntField(b, "step", t.RowStep)
	b = appendIntField(b, "current_step", t.Step)
	b = appendIntField(b, "buffered", t.Buffered)
	b = appendIntField(b, "current_left", t.CurrentLeft)
	b = appendIntField(b, "current_size", t.CurrentSize)
	b = appendIntField(b, "prefetched", t.Prefetched)
	b = appendIntField(b, "issued", t.Issued)
	b = appendIntField(b, "max_id", t.MaxID)
	b = appendIntField(b, "given_back", t.GivenBack)
	b = appendIntField(b, "wasted", t.Wasted)
	b = append(b, `,"last_fetch":`...)
	if t.LastFetch.IsZero() {
		b = append(b, "null"...)
	} else {
		b = appendTime(b, t.LastFetch)
	}
	b = append(b, `,"last_fetch_ms":`...)
	b = strconv.AppendFloat(b, float64(t.LastFetchTook)/float64(time.Millisecond), 'f', 3, 64)
	b = append(b, `,"fetching":`...)
	b = strconv.AppendBool(b, t.Fetching)
	b = append(b, `,"fetch_failing":`...)
	b = strconv.AppendBool(b, t.Failing)
	b = appendIntField(b, "refills", t.Refills)
	b = s.appendHistory(b, t.AppTag, end)
	b = s.appendDatedStatus(b, t)
	return append(b, '}')
}

// appendHistory appends a tag's history: its IDs a second and its refills
// in each step before end, oldest first, or null when it issued nothing
// and received no range in them.
func (s *Server) appendHistory(b []byte, tag string, end time.Time) []byte {
	b = append(b, `,"history":`...)
	h, ok := s.obs.History(tag, end)
	if !ok {
		return append(b, "null"...)
	}
	b = append(b, `{"ids_per_second":[`...)
	for i, n := range h.IDs {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendRate(b, float64(n)/metrics.HistoryStep.Seconds())
	}
	b = append(b, `],"refills":[`...)
	for i, n := range h.Refills {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendUint(b, uint64(n), 10)
	}
	return append(b, "]}"...)
}

// appendRate appends a rate of IDs a second: whole from 100 up, else to
// three significant digits, so that a trickle spread over minutes is not
// shown as 0.
func appendRate(b []byte, r float64) []byte {
	switch {
	case r == 0: // most steps of most tags: no float formatting
		return append(b, '0')
	case r >= 100:
		return strconv.AppendFloat(b, math.Round(r), 'f', 0, 64)
	}
	return strconv.AppendFloat(b, r, 'g', 3, 64)
}

// appendSnowflake appends the snowflake object: issued IDs and drift
// events as the metrics count them, and this instance's own lease without
// its token.
func (s *Server) appendSnowflake(b []byte, now time.Time) []byte {
	b = append(b, `{"enabled":`...)
	b = strconv.AppendBool(b, s.flake != nil)
	b = appendIntField(b, "issued", s.obs.SnowflakeIssued())
	drift := s.obs.DriftEvents()
	b = append(b, `,"drift":{"waited":`...)
	b = strconv.AppendInt(b, drift.Waited, 10)
	b = append(b, `,"try_later":`...)
	b = strconv.AppendInt(b, drift.TryLater, 10)
	b = append(b, `,"too_large":`...)
	b = strconv.AppendInt(b, drift.TooLarge, 10)
	b = append(b, `},"lease":`...)
	if s.own == nil {
		return append(b, "null}"...)
	}
	wait := s.own.Wait(now)
	l, held := s.own.Lease()
	if !held {
		b = append(b, `{"held":false`...)
		if wait.Reason != "" {
			b = append(b, `,"waiting":`...)
			b = appendString(b, wait.Reason)
		}
		return append(b, "}}"...)
	}
	b = append(b, `{"held":true,"cluster":`...)
	b = appendString(b, l.Cluster)
	b = append(b, `,"worker_id":`...)
	b = strconv.AppendInt(b, l.WorkerID, 10)
	b = append(b, `,"max_worker_id":`...)
	b = strconv.AppendInt(b, s.leases.MaxWorkerID(), 10) // New requires Leases with OwnLease
	b = append(b, `,"expires_at":`...)
	b = appendTime(b, l.ExpiresAt)
	b = append(b, `,"seconds_left":`...)
	b = strconv.AppendFloat(b, s.own.SecondsLeft(now), 'f', 1, 64)
	b = append(b, `,"ttl_seconds":`...)
	b = strconv.AppendFloat(b, s.leases.TTL().Seconds(), 'f', 1, 64)
	// A grant the store had no record of issues nothing until any holder
	// it may have forgotten has fenced itself.
	var opens time.Duration
	if wait.Reason == workerlease.WaitNoHistory {
		opens = wait.For
	}
	b = append(b, `,"opens_in_seconds":`...)
	b = strconv.AppendFloat(b, opens.Seconds(), 'f', 1, 64)
	return append(b, "}}"...)
}

// appendIntField appends `,"name":"v"`: an int64 as a string (see above).
func appendIntField(b []byte, name string, v int64) []byte {
	b = append(b, `,"`...)
	b = append(b, name...)
	b = append(b, `":"`...)
	b = strconv.AppendInt(b, v, 10)
	return append(b, '"')
}

// appendTime appends t as a JSON string in the contract's time format.
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, timeLayout)
	return append(b, '"')
}
