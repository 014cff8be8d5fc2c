package leased

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/idalloc/idalloc/snowflake"
)

var errStoreDown = errors.New("dial tcp 10.0.0.9:3306: connection refused")

// fakeLayouts is a LayoutRecorder that fails with errStoreDown failures
// times, then answers final; it records when each attempt came and what it
// asked.
type fakeLayouts struct {
	begun    time.Time
	failures int
	final    error
	mu       sync.Mutex
	at       []time.Duration
	asked    []string
}

func (f *fakeLayouts) CheckLayout(_ context.Context, cluster string, epochMS int64, workerBits int) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.at = append(f.at, time.Since(f.begun))
	f.asked = append(f.asked, fmt.Sprintf("%s %d %d", cluster, epochMS, workerBits))
	if len(f.at) <= f.failures {
		return errStoreDown
	}
	return f.final
}

func (f *fakeLayouts) attempts() []time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.at)
}

func testLayout(tb testing.TB) snowflake.Layout {
	tb.Helper()
	l, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		tb.Fatalf("NewLayout: %v", err)
	}
	return l
}

var discard = slog.New(slog.DiscardHandler)

// TestLayoutGateRetriesUntilDefinite: start is called only once a check
// has confirmed the layout; failures before are retried in the background
// (1s doubling, equal jitter, the highest draw here), and a mismatch found
// then calls fatal.
func TestLayoutGateRetriesUntilDefinite(t *testing.T) {
	mismatch := fmt.Errorf("cluster %q uses epoch 0 ms: %w", "default", snowflake.ErrLayoutMismatch)
	secs := func(v ...int) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x) * time.Second
		}
		return out
	}
	tests := []struct {
		name        string
		failures    int
		final       error
		wantOpenErr bool
		wantStart   bool
		wantFatal   bool
		wantAt      []time.Duration
	}{
		{"confirmed at once", 0, nil, false, true, false, secs(0)},
		{"mismatch at once", 0, mismatch, true, false, false, secs(0)},
		{"store down 3 times, then confirmed", 3, nil, false, true, false, secs(0, 1, 3, 7)},
		{"store down 3 times, then a mismatch", 3, mismatch, false, false, true, secs(0, 1, 3, 7)},
		{"store down 6 times, then confirmed", 6, nil, false, true, false, secs(0, 1, 3, 7, 15, 25, 35)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				f := &fakeLayouts{begun: time.Now(), failures: tt.failures, final: tt.final}
				g := LayoutGate{Layouts: f, Cluster: "default", Layout: testLayout(t), Logger: discard,
					randN: func(n time.Duration) time.Duration { return n - 1 }}
				var started atomic.Bool
				var fatal atomic.Pointer[error]
				stop, err := g.Open(t.Context(), func() { started.Store(true) }, func(err error) { fatal.Store(&err) })
				if (err != nil) != tt.wantOpenErr || err != nil && !errors.Is(err, snowflake.ErrLayoutMismatch) {
					t.Fatalf("Open: got error %v, want one wrapping ErrLayoutMismatch: %v", err, tt.wantOpenErr)
				}
				if err != nil {
					return
				}
				defer stop()
				last := tt.wantAt[len(tt.wantAt)-1]
				if last > 0 {
					time.Sleep(last - time.Nanosecond)
					synctest.Wait()
					if started.Load() {
						t.Fatalf("started at %v, before the check confirmed the layout", time.Since(f.begun))
					}
					time.Sleep(time.Nanosecond)
				}
				synctest.Wait()
				if got := f.attempts(); !slices.Equal(got, tt.wantAt) {
					t.Errorf("attempts at %v, want %v", got, tt.wantAt)
				}
				if started.Load() != tt.wantStart {
					t.Errorf("started: got %v, want %v", started.Load(), tt.wantStart)
				}
				if got := fatal.Load(); (got != nil) != tt.wantFatal || got != nil && !errors.Is(*got, snowflake.ErrLayoutMismatch) {
					t.Errorf("fatal called with %v, want a mismatch: %v", got, tt.wantFatal)
				}
				time.Sleep(time.Minute)
				synctest.Wait()
				if got := len(f.attempts()); got != len(tt.wantAt) {
					t.Errorf("%d attempts after a definite answer, want none", got-len(tt.wantAt))
				}
			})
		})
	}
}

// TestLayoutGateStopsWithTheInstance: stop ends the retrying at once.
func TestLayoutGateStopsWithTheInstance(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		f := &fakeLayouts{begun: time.Now(), failures: 1 << 30}
		g := LayoutGate{Layouts: f, Layout: testLayout(t)}
		stop, err := g.Open(t.Context(), func() { t.Error("started with the store down") }, func(error) {})
		if err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Second)
		stop()
		n := len(f.attempts())
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := len(f.attempts()); got != n {
			t.Errorf("%d attempts after stop, want none", got-n)
		}
	})
}

// TestLayoutGateAsksForItsLayout: every attempt asks the store for the
// gate's cluster and layout; a gate without either refuses to open.
func TestLayoutGateAsksForItsLayout(t *testing.T) {
	f := &fakeLayouts{begun: time.Now()}
	if _, err := (LayoutGate{Layouts: f, Cluster: "orders", Layout: testLayout(t)}).Open(t.Context(), func() {}, nil); err != nil {
		t.Fatalf("Open: %v", err)
	}
	if want := []string{"orders 1767225600000 10"}; !slices.Equal(f.asked, want) {
		t.Errorf("asked %q, want %q", f.asked, want)
	}
	for _, g := range []LayoutGate{
		{Layout: testLayout(t)},
		{Layouts: f},
		{Layouts: f, Layout: testLayout(t), Timeout: -time.Second},
	} {
		if _, err := g.Open(t.Context(), func() { t.Error("started") }, nil); err == nil {
			t.Errorf("Open(%+v): no error", g)
		}
	}
}

// TestCheckEachLease: the check after each grant asks for the lease's
// cluster and the holder's layout, and a mismatch is logged at Error (a
// store that forgot the old layout now records another).
func TestCheckEachLease(t *testing.T) {
	var logged strings.Builder
	log := slog.New(slog.NewTextHandler(&logged, nil))
	mismatch := fmt.Errorf("cluster %q uses epoch 0 ms: %w", "orders", snowflake.ErrLayoutMismatch)
	for _, final := range []error{nil, errStoreDown, mismatch} {
		logged.Reset()
		f := &fakeLayouts{begun: time.Now(), final: final}
		err := CheckEachLease(f, testLayout(t), log)(t.Context(), "orders")
		if err != final {
			t.Errorf("check with the store answering %v: got %v", final, err)
		}
		if want := []string{"orders 1767225600000 10"}; !slices.Equal(f.asked, want) {
			t.Errorf("asked %q, want %q", f.asked, want)
		}
		if got, want := strings.Contains(logged.String(), "level=ERROR"), final == mismatch; got != want {
			t.Errorf("store answering %v: logged an error: %v, want %v (%q)", final, got, want, logged.String())
		}
	}
}

// recordOnce is a LayoutRecorder as the stores are: the first layout of a
// cluster is recorded, another refused.
type recordOnce map[string][2]int64

func (r recordOnce) CheckLayout(_ context.Context, cluster string, epochMS int64, workerBits int) error {
	want := [2]int64{epochMS, int64(workerBits)}
	have, ok := r[cluster]
	if !ok {
		r[cluster] = want
		return nil
	}
	if have != want {
		return fmt.Errorf("cluster %q records %v, not %v: %w", cluster, have, want, snowflake.ErrLayoutMismatch)
	}
	return nil
}

// TestJS53LayoutRecord: a JS53 layout is recorded apart from every default
// layout, so one cluster never mixes the two, whichever came first; a
// record of before JS53 (epoch, worker bits 1..21) is a default layout's.
func TestJS53LayoutRecord(t *testing.T) {
	def6, _ := snowflake.NewLayout(time.Time{}, 6)
	def10, _ := snowflake.NewLayout(time.Time{}, 10)
	js6, _ := snowflake.NewJS53Layout(time.Time{}, 6)
	js8, _ := snowflake.NewJS53Layout(time.Time{}, 8)
	epochMS := def6.Epoch.UnixMilli()
	cases := []struct {
		name     string
		recorded []snowflake.Layout
		old      int // worker bits of a record an older version wrote; 0: none
		then     snowflake.Layout
		mismatch bool
	}{
		{"js53 after js53", []snowflake.Layout{js6}, 0, js6, false},
		{"js53 after default, same worker bits", []snowflake.Layout{def6}, 0, js6, true},
		{"default after js53, same worker bits", []snowflake.Layout{js6}, 0, def6, true},
		{"js53 after js53 of other worker bits", []snowflake.Layout{js6}, 0, js8, true},
		{"default after an old record", nil, 10, def10, false},
		{"js53 after an old record", nil, 6, js6, true},
	}
	for _, c := range cases {
		rec := recordOnce{}
		if c.old != 0 {
			rec["c"] = [2]int64{epochMS, int64(c.old)}
		}
		for _, l := range c.recorded {
			if err := checkLayout(context.Background(), rec, "c", l); err != nil {
				t.Fatalf("%s: recording %+v: %v", c.name, l, err)
			}
		}
		err := checkLayout(context.Background(), rec, "c", c.then)
		if got := errors.Is(err, snowflake.ErrLayoutMismatch); got != c.mismatch || (err != nil && !got) {
			t.Errorf("%s: %v, want mismatch %v", c.name, err, c.mismatch)
		}
	}
}
