package main

import "testing"

func TestMerge(t *testing.T) {
	const far = 1 << (pageBits + 21) // beyond maxPages pages from 1
	tests := []struct {
		name                   string
		sets                   [][]int64
		wantDups, wantDistinct int64
	}{
		{"one set, no repeat", [][]int64{{1, 2, 3, 70_000, 1 << 20}}, 0, 5},
		{"repeat within a set", [][]int64{{5, 6, 5}}, 1, 2},
		{"repeat across sets", [][]int64{{1, 3, 5}, {2, 3, 4}, {5, 6}}, 2, 6},
		{"interleaved, no repeat", [][]int64{{1, 3, 5, 65_537}, {2, 4, 6, 65_536}}, 0, 8},
		{"below the first page", [][]int64{{200_000, 3}, {3, 200_000}}, 2, 2},
		{"far beyond the first page", [][]int64{{1, far}, {far, 2}}, 1, 3},
		{"negative and zero", [][]int64{{0, -1}, {-1}}, 1, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var sets []*idSet
			var total int64
			for _, ids := range tt.sets {
				s := new(idSet)
				for _, id := range ids {
					s.add(id)
				}
				if s.ids != int64(len(ids)) {
					t.Fatalf("set counted %d IDs, want %d", s.ids, len(ids))
				}
				total += s.ids
				sets = append(sets, s)
			}
			dups, distinct := merge(sets)
			if dups != tt.wantDups || distinct != tt.wantDistinct {
				t.Errorf("merge = %d duplicates, %d distinct; want %d, %d", dups, distinct, tt.wantDups, tt.wantDistinct)
			}
			if dups+distinct != total {
				t.Errorf("duplicates %d + distinct %d != %d IDs added", dups, distinct, total)
			}
		})
	}
}
