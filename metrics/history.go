package metrics

import (
	"math"
	"time"
)

// Each tag's recent past, for the monitor page's sparklines (docs/api.md
// §10): the IDs it issued and the ranges it received from the store (its
// double buffer's refills) in each of the last HistoryPoints steps of
// HistoryStep, kept by the samples that compute the rates (activity), so
// that a reloaded page finds it. Five minutes in steps of ten seconds: what
// an operator looks back over when something changed, each point as
// smooth as the rate beside it (rateWindow), 30 points a sparkline draws a
// few pixels apart.
//
// A sample spreads the IDs issued since the one before evenly over the
// time between them: while nothing samples (no page open, no scrape) the
// steps share that time's IDs, and the line shows their average. Refills
// are counted in the step of the sample that sees them. A tag holds a ring
// (208 bytes) only while it issued IDs or received a range within
// the window; any other tag holds none, and a sample spends nothing on it
// beyond its rate.
const (
	// HistoryPoints is how many steps a History holds.
	HistoryPoints = 30
	// HistoryStep is how much time each of its points covers.
	HistoryStep = 10 * time.Second
)

// History is one tag's last HistoryPoints whole steps, oldest first.
type History struct {
	// IDs is how many IDs the tag issued in each step; a step no sample
	// ended in shares the IDs of the time around it (see above).
	IDs [HistoryPoints]float32
	// Refills is how many ranges the tag received in each step, at most
	// math.MaxUint16.
	Refills [HistoryPoints]uint16
}

// history is a tag's ring of steps, indexed by the step's number (Unix
// time in steps) modulo ringSteps: the HistoryPoints whole steps and the
// one under way. The zero value is an empty ring.
type history struct {
	last    int64 // the newest step written
	ids     [ringSteps]float32
	refills [ringSteps]uint16
}

const ringSteps = HistoryPoints + 1

// stepOf is the number of the step t falls in.
func stepOf(t time.Time) int64 { return t.UnixNano() / int64(HistoryStep) }

// stepStart is when step n begins.
func stepStart(n int64) time.Time { return time.Unix(0, n*int64(HistoryStep)) }

// slot is step n's place in the ring.
func slot(n int64) int { return int(n % ringSteps) }

// add records ids issued over (from, to] and refills seen at to.
func (h *history) add(from, to time.Time, ids, refills int64) {
	n := stepOf(to)
	if n < h.last { // a wall clock set back: into the newest step
		n, from = h.last, to
	}
	for s := max(h.last+1, n-ringSteps+1); s <= n; s++ {
		h.ids[slot(s)], h.refills[slot(s)] = 0, 0 // steps nothing sampled in, or from the window before
	}
	h.last = n
	if first := max(stepOf(from), n-ringSteps+1); ids > 0 && first < n && to.After(from) {
		span := float64(to.Sub(from))
		for s := first; s <= n; s++ {
			lo, hi := later(from, stepStart(s)), earlier(to, stepStart(s+1))
			if hi.After(lo) {
				h.ids[slot(s)] += float32(float64(ids) * float64(hi.Sub(lo)) / span)
			}
		}
	} else if ids > 0 {
		h.ids[slot(n)] += float32(ids)
	}
	r := &h.refills[slot(n)]
	*r = uint16(min(int64(*r)+refills, math.MaxUint16))
}

// stale reports whether nothing of h is among the HistoryPoints steps
// before step n.
func (h *history) stale(n int64) bool { return h.last < n-HistoryPoints }

// before fills out with the HistoryPoints steps before step end and
// reports whether any holds an ID or a refill.
func (h *history) before(end int64, out *History) bool {
	some := false
	for i := range HistoryPoints {
		s := end - HistoryPoints + int64(i)
		if s > h.last || s <= h.last-ringSteps {
			continue // not written since the window moved past it
		}
		out.IDs[i], out.Refills[i] = h.ids[slot(s)], h.refills[slot(s)]
		some = some || out.IDs[i] > 0 || out.Refills[i] > 0
	}
	return some
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func earlier(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// HistoryEnd is where the histories end: the start of the step of the
// last sample, taken now unless the last is under a second old. Every
// tag's History read with it covers the same steps, the last whole ones
// sampled. Zero before Watch.
func (o *Observer) HistoryEnd() time.Time {
	a := &o.activity
	a.mu.Lock()
	defer a.mu.Unlock()
	a.sampleLocked()
	if a.at.IsZero() {
		return time.Time{}
	}
	return stepStart(stepOf(a.at)).UTC()
}

// History returns tag's HistoryPoints steps before end (HistoryEnd), and
// false when it issued no ID and received no range in them. It takes no
// sample and allocates nothing.
func (o *Observer) History(tag string, end time.Time) (History, bool) {
	var out History
	if end.IsZero() {
		return out, false
	}
	a := &o.activity
	a.mu.Lock()
	defer a.mu.Unlock()
	h := a.tags[tag].hist
	if h == nil {
		return out, false
	}
	return out, h.before(stepOf(end), &out)
}
