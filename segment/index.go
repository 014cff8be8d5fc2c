package segment

import "sync/atomic"

// bufferIndex maps each tag served to its buffer, and is read without a
// lock: a lookup is one read of an immutable map (base), or two for a tag
// added lately (base, then recent). Tags are added, never removed: a tag
// gone from the store keeps its buffer, whose IDs are still reserved.
//
// Both maps are replaced whole, never changed (copy on write). Adding a
// tag to a large index copies recent only, which stays small: once it
// holds recentMax tags it is folded into a new base, and the tag-list
// reload folds what it holds (fold). So adding n tags one at a time costs
// about n·(n/recentMax + recentMax) map writes, not the n²/2 of copying
// one map for each, and a tag pays the second lookup only until the next
// reload. A small index (under foldAlways tags) folds at every addition.
type bufferIndex struct {
	base, recent atomic.Pointer[map[string]*buffer]
}

// recentMax bounds recent: at 100,000 tags an addition copies at most a
// thousand entries, and a fold, once per thousand additions, a hundred
// thousand.
const recentMax = 1024

// foldAlways: below this many tags in base every addition folds, a copy of
// a few thousand entries at most, so that a tag just created is found by
// the one lookup at once.
const foldAlways = 8 * recentMax

// init makes x empty; it is used only after.
func (x *bufferIndex) init() {
	x.base.Store(&map[string]*buffer{})
	x.recent.Store(&map[string]*buffer{})
}

// hot returns tag's buffer when base has it, nil otherwise: Next's
// lookup, one read of one map, inlined there; a miss goes on in
// Allocator.buffer, which calls get. (With get's whole lookup inlined,
// Next measured 5-15% slower: BenchmarkNext, BenchmarkNextParallel.)
func (x *bufferIndex) hot(tag string) *buffer { return (*x.base.Load())[tag] }

// get returns tag's buffer, nil when tag is not served. A fold between its
// loads of base and recent would hide a tag being folded (the old base,
// then the emptied recent); a miss looks again in base when it was
// replaced meanwhile, since the new base is stored before recent is
// emptied.
func (x *bufferIndex) get(tag string) *buffer {
	base := x.base.Load()
	if b := (*base)[tag]; b != nil {
		return b
	}
	if b := (*x.recent.Load())[tag]; b != nil {
		return b
	}
	if now := x.base.Load(); now != base {
		return (*now)[tag]
	}
	return nil
}

// add makes the buffers of bs found. The caller serialises additions
// (Allocator.tagsMu) and adds no tag twice.
func (x *bufferIndex) add(bs []*buffer) {
	if len(bs) == 0 {
		return
	}
	old := *x.recent.Load()
	if len(old)+len(bs) >= recentMax || len(*x.base.Load()) < foldAlways {
		x.foldWith(bs)
		return
	}
	m := make(map[string]*buffer, len(old)+len(bs))
	for k, b := range old {
		m[k] = b
	}
	for _, b := range bs {
		m[b.tag] = b
	}
	x.recent.Store(&m)
}

// fold moves recent's tags into base, when there are any. Callers
// serialise it with add.
func (x *bufferIndex) fold() {
	if len(*x.recent.Load()) > 0 {
		x.foldWith(nil)
	}
}

// foldWith makes a new base of base, recent and bs, and empties recent.
// The new base is stored first: a lookup between the two stores finds a
// tag in both maps, never in neither.
func (x *bufferIndex) foldWith(bs []*buffer) {
	base, recent := *x.base.Load(), *x.recent.Load()
	// Sized for what it holds: growth would leave up to twice the slots.
	m := make(map[string]*buffer, len(base)+len(recent)+len(bs))
	for k, b := range base {
		m[k] = b
	}
	for k, b := range recent {
		m[k] = b
	}
	for _, b := range bs {
		m[b.tag] = b
	}
	x.base.Store(&m)
	x.recent.Store(&map[string]*buffer{})
}

// each calls fn for every buffer, once each, in no order. recent is
// loaded first: a fold between the loads puts its tags in the base loaded
// after, never in neither.
func (x *bufferIndex) each(fn func(*buffer)) {
	recent := *x.recent.Load()
	base := *x.base.Load()
	for _, b := range base {
		fn(b)
	}
	for tag, b := range recent {
		if _, ok := base[tag]; !ok {
			fn(b)
		}
	}
}

// len is how many tags are served, about: a fold under way may count a
// tag twice.
func (x *bufferIndex) len() int { return len(*x.base.Load()) + len(*x.recent.Load()) }
