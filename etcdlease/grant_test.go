package etcdlease

import (
	"math"
	"slices"
	"testing"
	"time"
)

func TestCandidates(t *testing.T) {
	const now = 1000
	// Worker 0 and 3 held; 1 released ahead of the clock, 2 behind it,
	// 4 ahead; 5 and up never used.
	v := clusterView{
		held: map[int64]bool{0: true, 3: true},
		last: map[int64]lastEntry{0: {ms: 10}, 1: {ms: now + 1}, 2: {ms: now}, 3: {ms: 5}, 4: {ms: now + 5}},
		top:  4,
	}
	empty := clusterView{held: map[int64]bool{}, last: map[int64]lastEntry{}, top: -1}
	for _, tc := range []struct {
		name  string
		v     clusterView
		maxID int64
		nowMS int64
		k     int
		want  []int64
	}{
		{"best: at or below the clock, lowest", v, 1023, now, 1, []int64{2}},
		{"then unused IDs, then those ahead of the clock", v, 1023, now, 4, []int64{2, 5, 6, 7}},
		{"ahead of the clock only when nothing else is free", v, 4, now, 4, []int64{2, 1, 4}},
		{"a clock before every record prefers nothing", v, 1023, -1, 3, []int64{1, 2, 4}},
		{"an unused ID beats one ahead of the clock", clusterView{
			held: map[int64]bool{1: true},
			last: map[int64]lastEntry{0: {ms: now + 1}, 1: {ms: 5}},
			top:  1,
		}, 2, now, 1, []int64{2}},
		{"all held", clusterView{held: map[int64]bool{0: true, 1: true}, top: 1}, 1, now, 2, nil},
		{"empty cluster", empty, 1023, now, 3, []int64{0, 1, 2}},
		{"a huge range costs no more than the keys", empty, math.MaxInt64, now, 2, []int64{0, 1}},
		{"a huge range with a clock before zero", empty, math.MaxInt64, -1, 2, []int64{0, 1}},
	} {
		if got := tc.v.candidates(tc.maxID, tc.nowMS, tc.k); !slices.Equal(got, tc.want) {
			t.Errorf("%s: candidates(%d, %d, %d) = %v, want %v", tc.name, tc.maxID, tc.nowMS, tc.k, got, tc.want)
		}
	}
}

func TestTTLSeconds(t *testing.T) {
	for _, tc := range []struct {
		ttl  time.Duration
		want int64
	}{
		{time.Nanosecond, 1},
		{400 * time.Millisecond, 1},
		{time.Second, 1},
		{time.Second + time.Nanosecond, 2},
		{30 * time.Second, 30},
	} {
		if got := ttlSeconds(tc.ttl); got != tc.want {
			t.Errorf("ttlSeconds(%v) = %d, want %d", tc.ttl, got, tc.want)
		}
	}
}

func TestOpenEndpoints(t *testing.T) {
	for _, tc := range []struct {
		dsn  string
		want []string
	}{
		{"http://127.0.0.1:2379", []string{"http://127.0.0.1:2379"}},
		{"127.0.0.1:2379, 127.0.0.2:2379", []string{"http://127.0.0.1:2379", "http://127.0.0.2:2379"}},
		{"https://etcd-0:2379,,http://etcd-1:2379,", []string{"https://etcd-0:2379", "http://etcd-1:2379"}},
	} {
		st, err := Open(tc.dsn, Options{})
		if err != nil {
			t.Errorf("Open(%q): %v", tc.dsn, err)
			continue
		}
		if got := st.c.Endpoints(); !slices.Equal(got, tc.want) {
			t.Errorf("Open(%q) endpoints = %q, want %q", tc.dsn, got, tc.want)
		}
		if st.prefix != DefaultPrefix {
			t.Errorf("Open(%q) prefix = %q, want %q", tc.dsn, st.prefix, DefaultPrefix)
		}
		if err := st.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := st.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	}
	for _, dsn := range []string{"", " , ,"} {
		if _, err := Open(dsn, Options{}); err == nil {
			t.Errorf("Open(%q): no error, want one for a DSN with no endpoint", dsn)
		}
	}
}
