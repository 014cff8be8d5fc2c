package main

import (
	"fmt"
	"slices"
)

// checkSuccess validates a resp_code 0 body for the mode and the batch size
// asked for (0: a single ID) and returns the IDs it carries: r.ids for a
// batch, or one into one for a single ID. Every rule is one the contract
// states: id is the first ID, a batch has exactly count strictly increasing
// IDs, snowflake answers carry equal string forms, segment IDs are positive.
func checkSuccess(r *response, m mode, count int, one *[1]int64) ([]int64, error) {
	if !r.hasID {
		return nil, fmt.Errorf(`no "id" in a resp_code 0 answer`)
	}
	ids := one[:]
	one[0] = r.id
	if count > 0 {
		if !r.hasIDs {
			return nil, fmt.Errorf(`count=%d but no "ids"`, count)
		}
		if len(r.ids) != count {
			return nil, fmt.Errorf(`count=%d but %d ids`, count, len(r.ids))
		}
		if r.ids[0] != r.id {
			return nil, fmt.Errorf(`"id" %d is not ids[0] %d`, r.id, r.ids[0])
		}
		for i := 1; i < len(r.ids); i++ {
			if r.ids[i] <= r.ids[i-1] {
				return nil, fmt.Errorf("ids not strictly increasing: ids[%d]=%d after %d", i, r.ids[i], r.ids[i-1])
			}
		}
		ids = r.ids
	} else if r.hasIDs && (len(r.ids) != 1 || r.ids[0] != r.id) {
		return nil, fmt.Errorf(`single-ID answer with "ids" %v that is not ["id"]`, r.ids)
	}
	if m == modeSnowflake {
		if !r.hasIDStr || r.idStr != r.id {
			return nil, fmt.Errorf(`"id_str" missing or not equal to "id" %d`, r.id)
		}
		if count > 0 && (!r.hasIDsStr || !slices.Equal(r.idsStr, r.ids)) {
			return nil, fmt.Errorf(`"ids_str" missing or not equal to "ids"`)
		}
		if r.id < 0 {
			return nil, fmt.Errorf("negative snowflake ID %d", r.id)
		}
	} else if ids[0] < 1 {
		return nil, fmt.Errorf("segment ID %d below 1", ids[0])
	}
	return ids, nil
}

// keeper holds every ID one client received from one instance, in arrival
// order, and checks that each answer starts above the last one.
type keeper struct {
	ids    []int64
	last   int64
	any    bool
	sorted bool // false once an order violation put ids out of order
}

// add records a (valid, internally increasing) batch. It returns false and
// the previous last ID when the batch does not start above it. The IDs are
// kept only while keep is true.
func (k *keeper) add(ids []int64, keep bool) (ok bool, prev int64) {
	ok, prev = !k.any || ids[0] > k.last, k.last
	if !ok {
		k.sorted = false
	}
	k.any, k.last = true, ids[len(ids)-1]
	if keep {
		k.ids = append(k.ids, ids...)
	}
	return ok, prev
}

func newKeeper() *keeper { return &keeper{sorted: true} }

// dupResult is what findDuplicates reports.
type dupResult struct {
	Checked    int64   // IDs looked at
	Duplicates int64   // occurrences beyond the first of any ID
	Examples   []int64 // a few duplicated IDs
}

const maxExamples = 5

// findDuplicates counts IDs that occur more than once across lists. Each
// list should be sorted ascending (one client's IDs from one instance are,
// when the order check passed); unsorted lists are sorted in place first.
// The sorted lists are then merged with a heap, so no copy of all the IDs
// is ever made.
func findDuplicates(lists [][]int64) dupResult {
	var res dupResult
	h := mergeHeap{}
	for _, l := range lists {
		res.Checked += int64(len(l))
		if len(l) == 0 {
			continue
		}
		if !slices.IsSorted(l) {
			slices.Sort(l)
		}
		h = append(h, cursor{list: l})
	}
	h.init()
	var prev int64
	first := true
	for len(h) > 0 {
		v := h[0].list[h[0].pos]
		if !first && v == prev {
			res.Duplicates++
			if len(res.Examples) < maxExamples && (len(res.Examples) == 0 || res.Examples[len(res.Examples)-1] != v) {
				res.Examples = append(res.Examples, v)
			}
		}
		prev, first = v, false
		h[0].pos++
		if h[0].pos == len(h[0].list) {
			h[0] = h[len(h)-1]
			h = h[:len(h)-1]
		}
		h.down(0)
	}
	return res
}

type cursor struct {
	list []int64
	pos  int
}

// mergeHeap is a min-heap of cursors by their current value. It is written
// out rather than built on container/heap, whose interface calls cost more
// than the comparisons on tens of millions of IDs.
type mergeHeap []cursor

func (h mergeHeap) less(i, j int) bool { return h[i].list[h[i].pos] < h[j].list[h[j].pos] }

func (h mergeHeap) init() {
	for i := len(h)/2 - 1; i >= 0; i-- {
		h.down(i)
	}
}

func (h mergeHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && h.less(r, l) {
			m = r
		}
		if !h.less(m, i) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
