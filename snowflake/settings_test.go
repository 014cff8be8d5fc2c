package snowflake

import (
	"errors"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	now := t0
	end := time.UnixMilli(defaultEpochMS + 1<<41).UTC()
	tests := []struct {
		name    string
		now     time.Time
		s       Settings
		wantErr error
	}{
		{"zero settings", now, Settings{}, nil},
		{"worker bits 0 means 10, so worker 1023 fits", now, Settings{WorkerID: 1023}, nil},
		{"worker 1024 with default bits", now, Settings{WorkerID: 1024}, ErrInvalidWorkerID},
		{"negative worker", now, Settings{WorkerID: -1}, ErrInvalidWorkerID},
		{"worker bits 1, worker 1", now, Settings{WorkerBits: 1, WorkerID: 1}, nil},
		{"worker bits 1, worker 2", now, Settings{WorkerBits: 1, WorkerID: 2}, ErrInvalidWorkerID},
		{"worker bits 21, max worker", now, Settings{WorkerBits: 21, WorkerID: 1<<21 - 1}, nil},
		{"worker bits 22", now, Settings{WorkerBits: 22}, ErrInvalidLayout},
		{"worker bits -1", now, Settings{WorkerBits: -1}, ErrInvalidLayout},
		{"epoch after now", now, Settings{Epoch: now.Add(time.Millisecond)}, ErrInvalidLayout},
		{"epoch now", now, Settings{Epoch: now}, nil},
		// 1950 + 69.7 years is 2019: already run out.
		{"epoch so old the time has run out", now, Settings{Epoch: time.Date(1950, 1, 1, 0, 0, 0, 0, time.UTC)}, ErrLayoutTooShort},
		// 1960 + 69.7 years is 2029: runs out within 10 years.
		{"epoch so old the time runs out within 10 years", now, Settings{Epoch: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}, ErrLayoutTooShort},
		{"time runs out exactly 10 years from now", end.AddDate(-10, 0, 0), Settings{}, nil},
		{"time runs out 1ms short of 10 years", end.AddDate(-10, 0, 0).Add(time.Millisecond), Settings{}, ErrLayoutTooShort},
		{"a given layout that runs out within 10 years", now, Settings{Layout: mustLayout(time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC), 10)}, nil},
		{"a given layout whose epoch is after now", now, Settings{Layout: mustLayout(now.Add(time.Millisecond), 10)}, ErrInvalidLayout},
		{"a given layout and worker bits", now, Settings{Layout: mustLayout(time.Time{}, 10), WorkerBits: 10}, ErrInvalidSettings},
		{"a given layout and an epoch", now, Settings{Layout: mustLayout(time.Time{}, 10), Epoch: now}, ErrInvalidSettings},
		{"a hand-made layout", now, Settings{Layout: Layout{Epoch: now.Add(-time.Hour), TimeBits: 41, WorkerBits: 10, SequenceBits: 13}}, ErrInvalidLayout},
		{"a given layout's worker bits bound the worker ID", now, Settings{Layout: mustLayout(time.Time{}, 4), WorkerID: 16}, ErrInvalidWorkerID},
		{"negative drift block", now, Settings{MaxDriftBlock: -1}, ErrInvalidSettings},
		{"negative drift error", now, Settings{MaxDriftError: -1}, ErrInvalidSettings},
		{"drift error below block", now, Settings{MaxDriftBlock: 20 * time.Millisecond, MaxDriftError: 19 * time.Millisecond}, ErrInvalidSettings},
		{"drift error equal to block", now, Settings{MaxDriftBlock: 20 * time.Millisecond, MaxDriftError: 20 * time.Millisecond}, nil},
		{"drift block above the default error", now, Settings{MaxDriftBlock: 2 * time.Second}, ErrInvalidSettings},
		{"negative start-after", now, Settings{StartAfterMS: -1}, ErrInvalidSettings},
		{"start-after in the future", now, Settings{StartAfterMS: now.Add(time.Hour).UnixMilli()}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.s.Now = func() time.Time { return tt.now }
			g, err := New(tt.s)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("New(%+v) error = %v, want %v", tt.s, err, tt.wantErr)
			}
			if (g == nil) != (tt.wantErr != nil) {
				t.Errorf("New(%+v) = %v, want a generator exactly when err is nil", tt.s, g)
			}
		})
	}
}

func TestNewDefaults(t *testing.T) {
	g, err := New(Settings{WorkerID: 3})
	if err != nil {
		t.Fatal(err)
	}
	l := g.Layout()
	if !l.Epoch.Equal(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)) || l.WorkerBits != 10 || l.SequenceBits != 12 {
		t.Errorf("Layout() = %+v, want epoch 2026-01-01, 10 worker bits, 12 sequence bits", l)
	}
	if g.block != DefaultMaxDriftBlock || g.errMax != DefaultMaxDriftError {
		t.Errorf("drift limits = %v, %v, want %v, %v", g.block, g.errMax, DefaultMaxDriftBlock, DefaultMaxDriftError)
	}
	if g.WorkerID() != 3 {
		t.Errorf("WorkerID() = %d, want 3", g.WorkerID())
	}
	if g.startBound != 100 {
		t.Errorf("random start bound = %d, want 100", g.startBound)
	}
}
