package segment

import (
	"fmt"
	"strings"
	"testing"
)

func listNames(rows []Tag) string {
	names := make([]string, len(rows))
	for i, r := range rows {
		names[i] = fmt.Sprintf("%s:%d", r.AppTag, r.MaxID)
	}
	return strings.Join(names, " ")
}

// TestTagListMerges: changes wait until the list is read, then merge in
// order: new rows in place, changed rows replaced, removed rows gone, the
// last change of a tag winning; keys never listed.
func TestTagListMerges(t *testing.T) {
	tests := []struct {
		name string
		do   func(l *tagList)
		want string
	}{
		{"new rows, sorted", func(l *tagList) {
			l.put(Tag{AppTag: "b", MaxID: 2}, Tag{AppTag: "a", MaxID: 1}, Tag{AppTag: "c", MaxID: 3})
		}, "a:1 b:2 c:3"},
		{"changed rows replaced", func(l *tagList) {
			l.put(Tag{AppTag: "a", MaxID: 1}, Tag{AppTag: "b", MaxID: 2})
			l.get()
			l.put(Tag{AppTag: "b", MaxID: 20}, Tag{AppTag: "0", MaxID: 0}, Tag{AppTag: "z", MaxID: 26})
		}, "0:0 a:1 b:20 z:26"},
		{"removed rows gone", func(l *tagList) {
			l.put(Tag{AppTag: "a", MaxID: 1}, Tag{AppTag: "b", MaxID: 2}, Tag{AppTag: "c", MaxID: 3})
			l.get()
			l.remove("a", "c", "never")
		}, "b:2"},
		{"the last change wins", func(l *tagList) {
			l.put(Tag{AppTag: "a", MaxID: 1})
			l.remove("a")
			l.put(Tag{AppTag: "a", MaxID: 5}, Tag{AppTag: "a", MaxID: 6})
		}, "a:6"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var l tagList
			l.init()
			tt.do(&l)
			if got := listNames(l.get()); got != tt.want {
				t.Errorf("list %q, want %q", got, tt.want)
			}
		})
	}
}

// TestTagListShownAsListed: keys are dropped and formats spelled out, in
// the list and in find, before and after a merge.
func TestTagListShownAsListed(t *testing.T) {
	var l tagList
	l.init()
	l.put(Tag{AppTag: "s", Format: FormatScrambled, FormatKey: []byte("0123456789abcdef")}, Tag{AppTag: "q"})
	for _, when := range []string{"pending", "merged"} {
		s, ok := l.find("s")
		q, _ := l.find("q")
		if !ok || s.FormatKey != nil || q.Format != FormatSequential {
			t.Errorf("%s: find = %+v, %+v; want no key, sequential spelled out", when, s, q)
		}
		l.get()
	}
	if _, ok := l.find("gone"); ok {
		t.Error("find(gone) found a row")
	}
}

// TestTagListReadsWithoutCopy: a list read again with no change is the
// same slice; changes beyond an eighth of a long list (and pendingMin)
// merge without waiting for a read.
func TestTagListReadsWithoutCopy(t *testing.T) {
	var l tagList
	l.init()
	var rows []Tag
	for i := range 10 * pendingMin {
		rows = append(rows, Tag{AppTag: fmt.Sprintf("t%06d", i)})
	}
	l.put(rows...)
	first := l.get()
	if again := l.get(); &again[0] != &first[0] {
		t.Error("a read with no change copied the list")
	}
	for i := range 10*pendingMin/8 + 1 {
		l.put(Tag{AppTag: rows[i].AppTag, MaxID: 1})
	}
	if l.dirty.Load() || len(l.pending) != 0 {
		t.Errorf("%d changes wait, want them merged past an eighth of the list", len(l.pending))
	}
}
