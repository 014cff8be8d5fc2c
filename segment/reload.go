package segment

import (
	"context"
	"slices"
	"time"
)

// The tag list is reloaded by what changed: every Config.TagRefresh (and on
// a miss, at most once per minReloadGap) the allocator asks the store for
// the rows written since its last reload, by the store's clock
// (Store.TagsSince), and applies them: a new tag gets its buffer, a row
// whose step changed hands it to its buffer, and the list Tags shows takes
// the rows as read, max_id and update_time included (every fetch writes
// its row, so a reload carries the max_id of every tag fetched since, on
// any instance: GET /tags stays as current as when every reload read every
// row). Rows that did not change are neither read nor copied.
//
// A reload asks from the store's clock at the last reload less
// changeOverlap, and every fullReloadEvery-th reload of the refresher
// reads every row, for what changes cannot show (see fullReloadEvery).
// Either is read in pages of reloadPage rows, so no reload holds more than
// a page of the store's answer at once, however many tags there are.

// changeOverlap is how far before the store's clock at the last reload the
// next asks from: a write whose statement read the clock before that
// reading and committed after it (a fetch that waited for a row lock, a
// commit slow to return, a node of a multi-primary cluster whose clock is
// behind) is still seen. The rows written within it are read twice, which
// changes nothing.
const changeOverlap = 10 * time.Second

// fullReloadEvery: every this many reloads the refresher reads every row
// (5 minutes at the default tag_refresh), for what changes cannot show: a
// row deleted by hand (gone from Tags then), or written without setting
// its update_time (an operator's UPDATE on SQLite or PostgreSQL), a write
// that committed more than changeOverlap late. The store's clock set back
// (asOf below the last) makes the reload read every row at once.
const fullReloadEvery = 30

// reloadPage is how many rows one store call of a reload lists.
const reloadPage = 1000

// reloadState is where the reloads stand; reloadMu guards it.
type reloadState struct {
	// since is where the next reload asks from: the store's clock at the
	// last, less changeOverlap; zero before the first, which reads every
	// row.
	since time.Time
	// asOf is the store's clock at the last reload.
	asOf time.Time
}

func (a *Allocator) reload(ctx context.Context, full bool) error {
	a.reloadMu.Lock()
	defer a.reloadMu.Unlock()
	return a.reloadLocked(ctx, full)
}

// reloadLocked reads the rows changed since the last reload, or every row
// when full, and applies them; reloadMu must be held. A reload that fails
// part-way keeps what it applied (rows as the store had them) and asks
// from the same moment next time.
func (a *Allocator) reloadLocked(ctx context.Context, full bool) error {
	a.lastReload.Store(a.now().UnixNano())
	since := a.reloads.since
	if full {
		since = time.Time{}
	}
	var seen []bool // for a full reload: which listed rows the store still has
	var listedBefore []Tag
	if since.IsZero() {
		listedBefore = a.list.get()
		seen = make([]bool, len(listedBefore))
	}
	var asOf time.Time
	for after := ""; ; {
		pctx, cancel := context.WithTimeout(ctx, a.cfg.FetchTimeout)
		rows, at, err := a.store.TagsSince(pctx, since, after, reloadPage)
		cancel()
		if err != nil {
			return err
		}
		if after == "" {
			asOf = at
		}
		a.apply(rows)
		for _, r := range rows {
			if i, ok := slices.BinarySearchFunc(listedBefore, r.AppTag, compareTag); ok {
				seen[i] = true
			}
		}
		if len(rows) < reloadPage {
			break
		}
		after = rows[len(rows)-1].AppTag
	}
	if !since.IsZero() && asOf.Before(a.reloads.asOf) {
		// The store's clock went back: rows written since may carry
		// times before since. Read them all.
		return a.reloadLocked(ctx, true)
	}
	if seen != nil {
		var gone []string
		for i, ok := range seen {
			if !ok {
				gone = append(gone, listedBefore[i].AppTag)
			}
		}
		a.list.remove(gone...)
	}
	a.reloads = reloadState{since: asOf.Add(-changeOverlap), asOf: asOf}
	a.tagsMu.Lock()
	a.index.fold() // tags added since the last reload get one lookup again
	a.tagsMu.Unlock()
	return nil
}

// apply makes rows, as the store has them, this allocator's: each new tag
// served in its row's format, each listed as read, each changed step its
// buffer's. A tag served already keeps its buffer and format: formats
// never change.
func (a *Allocator) apply(rows []Tag) {
	type stepChange struct {
		b    *buffer
		step int64
	}
	var changed []Tag
	var steps []stepChange
	a.tagsMu.Lock()
	a.addTagsLocked(rows)
	for _, r := range rows {
		old, ok := a.list.find(r.AppTag)
		if ok && sameRow(old, listed(r)) {
			continue
		}
		changed = append(changed, r)
		if b := a.index.get(r.AppTag); ok && b != nil && old.Step != r.Step && r.Step > 0 {
			steps = append(steps, stepChange{b, r.Step})
		}
	}
	a.list.put(changed...)
	a.tagsMu.Unlock()
	// Outside tagsMu, which no buffer lock is ever taken under; reloadMu
	// still orders it against UpdateTag's.
	for _, c := range steps {
		c.b.followRowStep(c.step)
	}
}

// sameRow reports whether two listed rows are alike in every field.
func sameRow(x, y Tag) bool {
	return x.AppTag == y.AppTag && x.MaxID == y.MaxID && x.Step == y.Step && x.Start == y.Start &&
		x.Description == y.Description && x.UpdateTime.Equal(y.UpdateTime) && x.Format == y.Format &&
		x.Length == y.Length && x.FormatSpec == y.FormatSpec
}

// addTagsLocked makes the tags of rows that are not served yet servable,
// each in its row's format; tagsMu must be held. Tags that vanish from the
// store are kept: their buffered IDs are still reserved and unique.
func (a *Allocator) addTagsLocked(rows []Tag) {
	var added []*buffer
	for _, r := range rows {
		if a.index.get(r.AppTag) != nil || !ValidTag(r.AppTag) {
			continue
		}
		b := newBuffer(a, r)
		if b.dated != nil {
			a.hasDated.Store(true)
		}
		added = append(added, b)
	}
	a.index.add(added)
}

func (a *Allocator) refreshLoop() {
	defer a.wg.Done()
	t := time.NewTicker(a.cfg.TagRefresh)
	defer t.Stop()
	var clockTick <-chan time.Time // nil, never ready, without a PeriodStore
	if a.periods != nil {
		c := time.NewTicker(min(a.cfg.TagRefresh, clockRecheck))
		defer c.Stop()
		clockTick = c.C
	}
	for n := 1; ; {
		select {
		case <-a.closing:
			return
		case <-t.C:
			// A failed reload keeps the list it has; the next tick tries
			// again, from where the last that worked stood.
			if err := a.reload(context.Background(), n%fullReloadEvery == 0); err != nil {
				a.cfg.Logger.Warn("reload tag list", "err", err)
			}
			n++
		case <-clockTick:
			a.checkClock()
		}
	}
}
