package frontend

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"sync"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

var discard = slog.New(slog.DiscardHandler)

// handBackProbe is a fake hand-back step: it records when it started and the
// deadline it was given, then takes d, or until its context ends when d is 0
// (a store that does not answer).
type handBackProbe struct {
	begun    time.Time
	d        time.Duration
	mu       sync.Mutex
	started  time.Duration
	deadline time.Duration
}

func (p *handBackProbe) run(ctx context.Context) error {
	p.mu.Lock()
	p.started = time.Since(p.begun)
	if dl, ok := ctx.Deadline(); ok {
		p.deadline = dl.Sub(p.begun)
	}
	p.mu.Unlock()
	if p.d == 0 {
		<-ctx.Done()
		return ctx.Err()
	}
	time.Sleep(p.d)
	return nil
}

// TestStopIsBoundedByShutdownTimeout: with connections that never close and
// a store that never answers, the stop still ends at shutdown_timeout: the
// front ends' connections are cut at drain + half of the rest, and the lease release
// and the give-back, run side by side, share the deadline. Before the
// bound, this stop took drain 5s + HTTP 10s + release 10s + give-back 10s
// and more (the allocator's wait for its fetches had no deadline).
func TestStopIsBoundedByShutdownTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begun := time.Now()
		served := make(chan error, 1)
		var cutAt time.Duration
		release, giveBack := &handBackProbe{begun: begun}, &handBackProbe{begun: begun}
		s := Stop{
			Timeout: 25 * time.Second, Drain: 5 * time.Second, Served: served,
			Cut:      func() { cutAt = time.Since(begun); served <- nil },
			HandBack: []func(context.Context) error{release.run, giveBack.run},
			Log:      discard,
		}
		_, err := s.Run(begun)
		if took, want := time.Since(begun), 25*time.Second; took != want {
			t.Errorf("stop took %v, want %v", took, want)
		}
		if want := 15 * time.Second; cutAt != want {
			t.Errorf("connections cut at %v, want %v (drain 5s + half of the 20s left)", cutAt, want)
		}
		for name, p := range map[string]*handBackProbe{"release": release, "give-back": giveBack} {
			if p.started != 15*time.Second || p.deadline != 25*time.Second {
				t.Errorf("%s started at %v with deadline %v, want 15s and 25s", name, p.started, p.deadline)
			}
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("hand-back error: got %v, want DeadlineExceeded", err)
		}
	})
}

// TestStopHandsBackAsSoonAsServingIsDown: in the usual case the front ends
// are down right after the drain; the hand-back starts then, with all the
// time left, and nothing is cut.
func TestStopHandsBackAsSoonAsServingIsDown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		begun := time.Now()
		served := make(chan error, 1)
		go func() {
			time.Sleep(5 * time.Second) // the drain
			served <- nil
		}()
		p := &handBackProbe{begun: begun, d: 50 * time.Millisecond}
		s := Stop{
			Timeout: 25 * time.Second, Drain: 5 * time.Second, Served: served,
			Cut:      func() { t.Errorf("connections cut at %v, want none cut", time.Since(begun)) },
			HandBack: []func(context.Context) error{p.run},
			Log:      discard,
		}
		if _, err := s.Run(begun); err != nil {
			t.Errorf("stop: %v", err)
		}
		if took, want := time.Since(begun), 5050*time.Millisecond; took != want {
			t.Errorf("stop took %v, want %v", took, want)
		}
		if p.started != 5*time.Second || p.deadline != 25*time.Second {
			t.Errorf("hand-back started at %v with deadline %v, want 5s and 25s", p.started, p.deadline)
		}
	})
}

// watchRig runs watch with a fake exit.
type watchRig struct {
	ctx   context.Context
	sigs  chan os.Signal
	exits chan int
}

func startWatch(t *testing.T, timeout time.Duration) (*watchRig, context.CancelCauseFunc) {
	ctx, cancel := context.WithCancelCause(t.Context())
	r := &watchRig{ctx: ctx, sigs: make(chan os.Signal, 2), exits: make(chan int, 1)}
	go watch(ctx, cancel, r.sigs, timeout, func(code int) { r.exits <- code }, discard)
	return r, cancel
}

func (r *watchRig) exited() (int, bool) {
	select {
	case code := <-r.exits:
		return code, true
	default:
		return 0, false
	}
}

// TestSecondSignalExitsAtOnce: the first SIGTERM starts the stop; a second
// signal during it ends the process at once, with the shell's status for
// that signal.
func TestSecondSignalExitsAtOnce(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, _ := startWatch(t, 25*time.Second)
		r.sigs <- syscall.SIGTERM
		synctest.Wait()
		if cause := context.Cause(r.ctx); !errors.Is(cause, ErrStopSignal) {
			t.Fatalf("after SIGTERM: stop cause %v, want ErrStopSignal", cause)
		}
		time.Sleep(3 * time.Second)
		if code, ok := r.exited(); ok {
			t.Fatalf("exit(%d) after one signal, want the stop to run", code)
		}
		r.sigs <- syscall.SIGINT
		synctest.Wait()
		if code, ok := r.exited(); !ok || code != 130 {
			t.Fatalf("after a second signal: exit(%d) called %v, want exit(130) at once", code, ok)
		}
	})
}

// TestStopWatchdog: a stop that outlasts shutdown_timeout (a store call
// ignoring its deadline) ends the process a second after it, whatever began
// the stop.
func TestStopWatchdog(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		r, cancel := startWatch(t, 25*time.Second)
		cancel(errors.New("layout mismatch")) // a stop without a signal
		time.Sleep(26*time.Second - time.Nanosecond)
		synctest.Wait()
		if code, ok := r.exited(); ok {
			t.Fatalf("exit(%d) before shutdown_timeout + %v", code, stopWatchdogSlack)
		}
		time.Sleep(time.Nanosecond)
		synctest.Wait()
		if code, ok := r.exited(); !ok || code != 1 {
			t.Fatalf("at shutdown_timeout + %v: exit(%d) called %v, want exit(1)", stopWatchdogSlack, code, ok)
		}
	})
}
