package main

import "math/bits"

// idSet is one goroutine's record of the IDs it was handed, as a bitmap in
// pages of 65,536 IDs: a tag's IDs from one server are dense, so a page
// holds one bit per ID where a list would hold eight bytes, and a run of
// tens of millions of IDs per second needs megabytes, not gigabytes.
// Each goroutine owns its set (no shared cache line on the hot path);
// merge compares the sets once the run is over.
type idSet struct {
	first int64   // page number (id >> pageBits) of pages[0]
	pages []*page // nil until an ID falls in it
	far   []int64 // IDs below pages[0] or maxPages beyond it: rare, checked by merge
	ids   int64   // IDs added
	dups  int64   // IDs added twice to this set
}

const (
	pageBits = 16
	maxPages = 1 << 20 // pages per set: 2^36 IDs from the first one
)

type page [(1 << pageBits) / 64]uint64

// add records id, counting it as a duplicate when this set already has it.
func (s *idSet) add(id int64) {
	s.ids++
	if s.pages == nil {
		s.first = id >> pageBits
	}
	i := id>>pageBits - s.first
	if i < 0 || i >= maxPages {
		s.far = append(s.far, id)
		return
	}
	for int64(len(s.pages)) <= i {
		s.pages = append(s.pages, nil)
	}
	p := s.pages[i]
	if p == nil {
		p = new(page)
		s.pages[i] = p
	}
	w, bit := &p[(id>>6)&(int64(len(p))-1)], uint64(1)<<(id&63)
	if *w&bit != 0 {
		s.dups++
	}
	*w |= bit
}

// merge returns how many of the IDs in sets were handed out more than once
// (within a set or across sets) and how many distinct IDs they hold.
// It takes the sets' pages over: the sets are not used after.
func merge(sets []*idSet) (dups, distinct int64) {
	all := make(map[int64]*page)
	var far []int64
	for _, s := range sets {
		dups += s.dups
		for i, p := range s.pages {
			if p == nil {
				continue
			}
			k := s.first + int64(i)
			q := all[k]
			if q == nil {
				all[k] = p
				continue
			}
			for j := range q {
				dups += int64(bits.OnesCount64(q[j] & p[j]))
				q[j] |= p[j]
			}
		}
		far = append(far, s.far...)
	}
	for _, id := range far {
		q := all[id>>pageBits]
		if q == nil {
			q = new(page)
			all[id>>pageBits] = q
		}
		w, bit := &q[(id>>6)&(int64(len(q))-1)], uint64(1)<<(id&63)
		if *w&bit != 0 {
			dups++
		}
		*w |= bit
	}
	for _, q := range all {
		for _, w := range q {
			distinct += int64(bits.OnesCount64(w))
		}
	}
	return dups, distinct
}
