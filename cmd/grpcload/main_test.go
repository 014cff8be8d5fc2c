package main

import (
	"strings"
	"testing"
)

func TestLoopback(t *testing.T) {
	for _, tc := range []struct {
		http, grpc string
		ok         bool
	}{
		{"http://127.0.0.1:8880", "127.0.0.1:9090", true},
		{"http://localhost:8880", "[::1]:9090", true},
		{"http://10.0.0.5:8880", "127.0.0.1:9090", false},
		{"http://127.0.0.1:8880", "example.com:9090", false},
		{"http://127.0.0.1:8880", "127.0.0.1", false},
	} {
		if err := loopback(tc.http, tc.grpc); (err == nil) != tc.ok {
			t.Errorf("loopback(%q, %q) = %v, want ok %v", tc.http, tc.grpc, err, tc.ok)
		}
	}
}

func TestSides(t *testing.T) {
	for _, tc := range []struct {
		call  string
		count int64
		want  string // the sides' names, or the error's start
	}{
		{"next", 0, "http /alloc, grpc Next"},
		{"next", 1000, "http /alloc, grpc Next"},
		{"ranges", 100000, "http /alloc as=ranges, grpc NextRanges, grpc StreamRanges"},
		{"ranges", 0, "-call ranges needs -count"},
		{"snowflake", 0, `-call "snowflake"`},
	} {
		sides, err := sidesOf(tc.call, "http://127.0.0.1:8880", "127.0.0.1:9090", "t", tc.count)
		var got string
		if err != nil {
			got = err.Error()
		} else {
			var names []string
			for _, s := range sides {
				names = append(names, s.name)
			}
			got = strings.Join(names, ", ")
		}
		if !strings.HasPrefix(got, tc.want) {
			t.Errorf("sidesOf(%q, %d): got %q, want %q", tc.call, tc.count, got, tc.want)
		}
	}
}

func TestMedian(t *testing.T) {
	calls, ids := median([]result{{3, 30, 0}, {1, 10, 0}, {2, 20, 0}})
	if calls != 2 || ids != 20 {
		t.Errorf("median: got %v calls/s, %v IDs/s, want 2 and 20", calls, ids)
	}
}
