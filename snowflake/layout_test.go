package snowflake

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

func TestNewLayout(t *testing.T) {
	epoch := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		epoch      time.Time
		workerBits int
		want       Layout
		wantErr    error
	}{
		{"zero means defaults", time.Time{}, 0, Layout{time.UnixMilli(defaultEpochMS).UTC(), 41, 10, 12}, nil},
		{"one worker bit", epoch, 1, Layout{epoch, 41, 1, 21}, nil},
		{"sixteen worker bits", epoch, 16, Layout{epoch, 41, 16, 6}, nil},
		{"twenty-one worker bits", epoch, 21, Layout{epoch, 41, 21, 1}, nil},
		{"epoch truncated to the millisecond", epoch.Add(1_999_999 * time.Nanosecond), 10, Layout{epoch.Add(time.Millisecond), 41, 10, 12}, nil},
		{"epoch in another zone", epoch.In(time.FixedZone("X", 3600)), 10, Layout{epoch, 41, 10, 12}, nil},
		{"twenty-two worker bits", epoch, 22, Layout{}, ErrInvalidLayout},
		{"negative worker bits", epoch, -1, Layout{}, ErrInvalidLayout},
		{"epoch after year 9999", time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC), 10, Layout{}, ErrInvalidLayout},
		{"epoch before year 1", time.Date(0, 12, 31, 0, 0, 0, 0, time.UTC), 10, Layout{}, ErrInvalidLayout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := NewLayout(tt.epoch, tt.workerBits)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("NewLayout(%v, %d) error = %v, want %v", tt.epoch, tt.workerBits, err, tt.wantErr)
			}
			if !got.Epoch.Equal(tt.want.Epoch) || got.Epoch.Location() != time.UTC ||
				got.TimeBits != tt.want.TimeBits || got.WorkerBits != tt.want.WorkerBits || got.SequenceBits != tt.want.SequenceBits {
				t.Errorf("NewLayout(%v, %d) = %+v, want %+v", tt.epoch, tt.workerBits, got, tt.want)
			}
		})
	}
}

// elapsed is a distinctive offset from the epoch: 0x123456789 << 22 is
// 0x48D159E2400000, so the worker and sequence fields show in the low 22 bits.
const elapsed = 0x123456789

func TestComposeExactBits(t *testing.T) {
	tests := []struct {
		workerBits  int
		elapsedMS   int64
		worker, seq int64
		want        int64
		maxWorker   int64
		maxSequence int64
	}{
		{1, elapsed, 1, 0x0ABCDE, 0x48D159E26ABCDE, 1, 0x1FFFFF},
		{1, elapsed, 0, 0x1FFFFF, 0x48D159E25FFFFF, 1, 0x1FFFFF},
		{5, elapsed, 0x15, 0x1ABCD, 0x48D159E26BABCD, 31, 0x1FFFF},
		{10, elapsed, 5, 7, 0x48D159E2405007, 1023, 4095},
		{10, elapsed, 0x3FF, 0xFFF, 0x48D159E27FFFFF, 1023, 4095},
		{10, 1, 0, 0, 0x400000, 1023, 4095},
		{10, 0, 0, 1, 1, 1023, 4095},
		{10, 0, 1, 0, 0x1000, 1023, 4095},
		{16, elapsed, 0xBEEF, 0x2A, 0x48D159E26FBBEA, 0xFFFF, 63},
		{16, 0, 0, 0, 0, 0xFFFF, 63},
		{16, 1<<41 - 1, 0xFFFF, 63, 0x7FFFFFFFFFFFFFFF, 0xFFFF, 63},
	}
	for _, tt := range tests {
		l, err := NewLayout(time.Time{}, tt.workerBits)
		if err != nil {
			t.Fatal(err)
		}
		if l.MaxWorkerID() != tt.maxWorker || l.MaxSequence() != tt.maxSequence {
			t.Errorf("bits %d: MaxWorkerID, MaxSequence = %d, %d, want %d, %d",
				tt.workerBits, l.MaxWorkerID(), l.MaxSequence(), tt.maxWorker, tt.maxSequence)
		}
		checkComposeRoundTrip(t, l, tt.workerBits, defaultEpochMS+tt.elapsedMS, tt.worker, tt.seq, tt.want)
	}
}

func TestComposeKnownDecimal(t *testing.T) {
	// 2026-11-21T10:00:00.123Z is 28029600123 ms (324 days, 10h, 123ms)
	// after the default epoch: 28029600123<<22 + 7<<12 + 42 = 117564663914328106.
	l, _ := NewLayout(time.Time{}, 0)
	ms := time.Date(2026, 11, 21, 10, 0, 0, 123_000_000, time.UTC).UnixMilli()
	got, err := l.Compose(ms, 7, 42)
	if err != nil || got != 117564663914328106 {
		t.Errorf("Compose(%d, 7, 42) = %d, %v, want 117564663914328106", ms, got, err)
	}
}

func TestComposeRejectsOutOfRangeParts(t *testing.T) {
	l, _ := NewLayout(time.Time{}, 10)
	epochMS := l.Epoch.UnixMilli()
	tests := []struct {
		name                string
		unixMS, worker, seq int64
		wantErr             error
	}{
		{"before the epoch", epochMS - 1, 0, 0, ErrInvalidID},
		{"far before the epoch", -1 << 63, 0, 0, ErrInvalidID},
		{"at End", l.End().UnixMilli(), 0, 0, ErrTimeExhausted},
		{"far after End", 1<<63 - 1, 0, 0, ErrTimeExhausted},
		{"negative worker", epochMS, -1, 0, ErrInvalidWorkerID},
		{"worker above max", epochMS, 1024, 0, ErrInvalidWorkerID},
		{"negative sequence", epochMS, 0, -1, ErrInvalidID},
		{"sequence above max", epochMS, 0, 4096, ErrInvalidID},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if id, err := l.Compose(tt.unixMS, tt.worker, tt.seq); !errors.Is(err, tt.wantErr) {
				t.Errorf("Compose(%d, %d, %d) = %d, %v, want %v", tt.unixMS, tt.worker, tt.seq, id, err, tt.wantErr)
			}
		})
	}
	if _, err := l.Compose(l.End().UnixMilli()-1, 1023, 4095); err != nil {
		t.Errorf("Compose at the last millisecond: %v, want nil", err)
	}
}

func TestDecompose(t *testing.T) {
	l, _ := NewLayout(time.Time{}, 10)
	for _, id := range []int64{-1, -1 << 63} {
		if _, err := l.Decompose(id); !errors.Is(err, ErrInvalidID) {
			t.Errorf("Decompose(%d) error = %v, want %v", id, err, ErrInvalidID)
		}
	}
	for _, bad := range []Layout{{}, {Epoch: l.Epoch, TimeBits: 41, WorkerBits: 10, SequenceBits: 13}, {Epoch: l.Epoch, TimeBits: 41, WorkerBits: 12, SequenceBits: 0}} {
		if _, err := bad.Decompose(1); !errors.Is(err, ErrInvalidLayout) {
			t.Errorf("%+v.Decompose(1) error = %v, want %v", bad, err, ErrInvalidLayout)
		}
		if _, err := bad.Compose(defaultEpochMS, 0, 0); !errors.Is(err, ErrInvalidLayout) {
			t.Errorf("%+v.Compose error = %v, want %v", bad, err, ErrInvalidLayout)
		}
	}
}

func TestComposeDecomposeRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, bits := range []int{1, 5, 10, 16, 21} {
		l, _ := NewLayout(time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC), bits)
		epochMS := l.Epoch.UnixMilli()
		for range 10000 {
			want := Parts{
				TimestampMS: epochMS + r.Int64N(1<<41),
				WorkerID:    r.Int64N(l.MaxWorkerID() + 1),
				Sequence:    r.Int64N(l.MaxSequence() + 1),
			}
			id, err := l.Compose(want.TimestampMS, want.WorkerID, want.Sequence)
			if err != nil {
				t.Fatalf("bits %d: Compose(%+v): %v", bits, want, err)
			}
			want.ID, want.Time = id, time.UnixMilli(want.TimestampMS).UTC()
			if got, err := l.Decompose(id); err != nil || got != want {
				t.Fatalf("bits %d: Decompose(Compose(%+v)) = %+v, %v", bits, want, got, err)
			}
			// And the other way: every non-negative int64 is some ID.
			raw := r.Int64()
			p, err := l.Decompose(raw)
			if err != nil {
				t.Fatalf("bits %d: Decompose(%d): %v", bits, raw, err)
			}
			if back, err := l.Compose(p.TimestampMS, p.WorkerID, p.Sequence); err != nil || back != raw {
				t.Fatalf("bits %d: Compose(Decompose(%d)) = %d, %v", bits, raw, back, err)
			}
		}
	}
}

func TestLayoutEnd(t *testing.T) {
	l, _ := NewLayout(time.Time{}, 0)
	if got, want := l.End().Sub(l.Epoch), time.Duration(1<<41)*time.Millisecond; got != want {
		t.Errorf("End - Epoch = %v, want %v", got, want)
	}
	if got, want := l.End(), time.Date(2095, 9, 7, 15, 47, 35, 552_000_000, time.UTC); !got.Equal(want) {
		t.Errorf("End() = %v, want %v", got, want)
	}
}

// TestRegionWorkerIDs: regions split the worker IDs into disjoint ranges
// of ⌊2^bits / count⌋, and more regions than worker IDs are refused.
func TestRegionWorkerIDs(t *testing.T) {
	cases := []struct {
		bits      int
		count, id int64
		first, n  int64
		wantErr   error
	}{
		{10, 0, 0, 0, 1024, nil},
		{10, 1, 0, 0, 1024, nil},
		{10, 2, 1, 512, 512, nil},
		{10, 3, 2, 682, 341, nil},
		{2, 2, 0, 0, 2, nil},
		{2, 2, 1, 2, 2, nil},
		{2, 4, 3, 3, 1, nil},
		{2, 5, 0, 0, 0, ErrTooManyRegions},
		{10, 2, 2, 0, 0, ErrInvalidWorkerID},
		{10, 2, -1, 0, 0, ErrInvalidWorkerID},
	}
	for _, c := range cases {
		l, err := NewLayout(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), c.bits)
		if err != nil {
			t.Fatal(err)
		}
		first, n, err := l.RegionWorkerIDs(c.count, c.id)
		if !errors.Is(err, c.wantErr) || first != c.first || n != c.n {
			t.Errorf("%d bits, region %d of %d: %d, %d, %v; want %d, %d, %v", c.bits, c.id, c.count, first, n, err, c.first, c.n, c.wantErr)
		}
	}
}

// TestJS53Layout: a JS53 layout's figures (workers, IDs per millisecond,
// its end) and that its highest ID is JavaScript's Number.MAX_SAFE_INTEGER.
func TestJS53Layout(t *testing.T) {
	const maxSafe = 1<<53 - 1
	tests := []struct {
		workerBits        int
		wantWorkerBits    int
		maxWorker, maxSeq int64
		wantErr           error
	}{
		{0, 6, 63, 63, nil},
		{1, 1, 1, 2047, nil},
		{6, 6, 63, 63, nil},
		{8, 8, 255, 15, nil},
		{11, 11, 2047, 1, nil},
		{12, 0, 0, 0, ErrInvalidLayout},
		{-1, 0, 0, 0, ErrInvalidLayout},
	}
	for _, tt := range tests {
		l, err := NewJS53Layout(time.Time{}, tt.workerBits)
		if !errors.Is(err, tt.wantErr) {
			t.Fatalf("NewJS53Layout(0, %d) error = %v, want %v", tt.workerBits, err, tt.wantErr)
		}
		if err != nil {
			continue
		}
		if l.WorkerBits != tt.wantWorkerBits || l.MaxWorkerID() != tt.maxWorker || l.MaxSequence() != tt.maxSeq ||
			l.IDBits() != 53 || !l.JS53() || l.TimeBits != 41 {
			t.Errorf("NewJS53Layout(0, %d) = %+v, MaxWorkerID %d, MaxSequence %d, IDBits %d",
				tt.workerBits, l, l.MaxWorkerID(), l.MaxSequence(), l.IDBits())
		}
		last := l.End().UnixMilli() - 1
		id, err := l.Compose(last, l.MaxWorkerID(), l.MaxSequence())
		if err != nil || id != maxSafe {
			t.Errorf("%d worker bits: the last ID = %d, %v, want 2^53-1", tt.workerBits, id, err)
		}
		if _, err := l.Decompose(maxSafe + 1); !errors.Is(err, ErrInvalidID) {
			t.Errorf("%d worker bits: Decompose(2^53) error = %v, want %v", tt.workerBits, err, ErrInvalidID)
		}
		if p, err := l.Decompose(maxSafe); err != nil || p.TimestampMS != last || p.WorkerID != l.MaxWorkerID() || p.Sequence != l.MaxSequence() {
			t.Errorf("%d worker bits: Decompose(2^53-1) = %+v, %v", tt.workerBits, p, err)
		}
	}
	def, _ := NewLayout(time.Time{}, 0)
	js, _ := NewJS53Layout(time.Time{}, 0)
	if def.JS53() || def.IDBits() != 63 {
		t.Errorf("the default layout: JS53 %v, IDBits %d, want false, 63", def.JS53(), def.IDBits())
	}
	if !js.End().Equal(def.End()) {
		t.Errorf("JS53 End %v, default End %v: want the same", js.End(), def.End())
	}
	if err := js.CheckLifetime(time.Date(2026, 6, 1, 0, 0, 0, 0, time.UTC)); err != nil {
		t.Errorf("JS53 CheckLifetime: %v", err)
	}
}

// TestJS53ComposeExactBits: the fields of a JS53 ID, bit by bit.
func TestJS53ComposeExactBits(t *testing.T) {
	tests := []struct {
		workerBits  int
		elapsedMS   int64
		worker, seq int64
		want        int64
	}{
		{6, elapsed, 5, 7, elapsed<<12 | 5<<6 | 7},
		{6, 1, 0, 0, 0x1000},
		{6, 0, 1, 0, 0x40},
		{6, 0, 0, 63, 63},
		{8, elapsed, 0xAB, 0xC, 0x123456789ABC},
		{1, 1<<41 - 1, 1, 2047, 1<<53 - 1},
	}
	for _, tt := range tests {
		l, err := NewJS53Layout(time.Time{}, tt.workerBits)
		if err != nil {
			t.Fatal(err)
		}
		checkComposeRoundTrip(t, l, tt.workerBits, defaultEpochMS+tt.elapsedMS, tt.worker, tt.seq, tt.want)
	}
}

// checkComposeRoundTrip checks that l composes want from its parts and
// decomposes want back into them.
func checkComposeRoundTrip(t *testing.T, l Layout, workerBits int, unixMS, worker, seq, want int64) {
	t.Helper()
	got, err := l.Compose(unixMS, worker, seq)
	if err != nil || got != want {
		t.Errorf("bits %d: Compose(%d, %#x, %#x) = %#x, %v, want %#x", workerBits, unixMS, worker, seq, got, err, want)
		return
	}
	parts := Parts{ID: want, Time: time.UnixMilli(unixMS).UTC(), TimestampMS: unixMS, WorkerID: worker, Sequence: seq}
	if p, err := l.Decompose(got); err != nil || p != parts {
		t.Errorf("bits %d: Decompose(%#x) = %+v, %v, want %+v", workerBits, got, p, err, parts)
	}
}
