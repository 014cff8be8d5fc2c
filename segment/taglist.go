package segment

import (
	"slices"
	"strings"
	"sync"
	"sync/atomic"
)

// tagList is the list Tags shows: the store's rows as last read, sorted by
// AppTag, keys dropped and formats spelled out (listed), plus the rows
// made or changed through this allocator since.
//
// A reload reads the rows written since the last (reload.go): a few of
// many. So a change waits in pending and is merged when the list is next
// read, in one copy of the list for every change since: a reload costs
// what changed, a read after changes one copy, and a read of an unchanged
// list one atomic load. pending is merged at once when it grows past an
// eighth of the list, so that it never holds more.
type tagList struct {
	sorted atomic.Pointer[[]Tag]
	dirty  atomic.Bool // pending holds changes not merged

	mu sync.Mutex
	// pending are the changes not merged yet, by tag: a row to list, or
	// gone (a row deleted from the store, seen by a full reload).
	pending map[string]pendingRow
}

type pendingRow struct {
	row  Tag
	gone bool
}

// pendingMin is how many changes wait for a read even in a short list.
const pendingMin = 1024

// init makes l empty; it is used only after.
func (l *tagList) init() { l.sorted.Store(&[]Tag{}) }

// listed is row as Tags shows it: without its key, its format spelled out.
func listed(row Tag) Tag {
	row.FormatKey = nil
	if row.Format == "" {
		row.Format = FormatSequential
	}
	return row
}

func compareTag(r Tag, tag string) int { return strings.Compare(r.AppTag, tag) }

// get returns the list with every change merged. It is shared: callers
// must not modify it.
func (l *tagList) get() []Tag {
	if l.dirty.Load() {
		l.mu.Lock()
		l.mergeLocked()
		l.mu.Unlock()
	}
	return *l.sorted.Load()
}

// find returns tag's row as listed.
func (l *tagList) find(tag string) (Tag, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if p, ok := l.pending[tag]; ok {
		return p.row, !p.gone
	}
	rows := *l.sorted.Load()
	if i, ok := slices.BinarySearchFunc(rows, tag, compareTag); ok {
		return rows[i], true
	}
	return Tag{}, false
}

// put lists rows (listed), each in place of its tag's row.
func (l *tagList) put(rows ...Tag) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, r := range rows {
		l.pendLocked(r.AppTag, pendingRow{row: listed(r)})
	}
	l.boundLocked()
}

// remove drops tags' rows from the list.
func (l *tagList) remove(tags ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range tags {
		l.pendLocked(t, pendingRow{gone: true})
	}
	l.boundLocked()
}

func (l *tagList) pendLocked(tag string, p pendingRow) {
	if l.pending == nil {
		l.pending = make(map[string]pendingRow)
	}
	l.pending[tag] = p
	l.dirty.Store(true)
}

// boundLocked merges the changes once they are more than an eighth of
// the list: a list that grows by many changes (a start, a bulk create) is
// copied a few times as it grows, not once per change.
func (l *tagList) boundLocked() {
	if len(l.pending) > max(pendingMin, len(*l.sorted.Load())/8) {
		l.mergeLocked()
	}
}

// mergeLocked makes a new list of the old and pending, in one pass over
// both sorted, and empties pending.
func (l *tagList) mergeLocked() {
	if len(l.pending) == 0 {
		l.dirty.Store(false)
		return
	}
	changes := make([]string, 0, len(l.pending))
	for tag := range l.pending {
		changes = append(changes, tag)
	}
	slices.Sort(changes)
	old := *l.sorted.Load()
	rows := make([]Tag, 0, len(old)+len(changes))
	i := 0
	for _, tag := range changes {
		for i < len(old) && old[i].AppTag < tag {
			rows = append(rows, old[i])
			i++
		}
		if i < len(old) && old[i].AppTag == tag {
			i++
		}
		if p := l.pending[tag]; !p.gone {
			rows = append(rows, p.row)
		}
	}
	rows = append(rows, old[i:]...)
	l.sorted.Store(&rows)
	l.pending = nil
	l.dirty.Store(false)
}
