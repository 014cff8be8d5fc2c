package frontend

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestListen: every address set is listened on, by name, one left empty
// is off; a taken one fails naming its key, and closes those opened
// before it.
func TestListen(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()

	ls, err := Listen(Addr{Name: "http", Key: `key "http_addr"`, Addr: "127.0.0.1:0"}, Addr{Name: "resp", Key: `key "resp_addr"`})
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 1 || ls["http"] == nil {
		t.Errorf("Listen with resp_addr empty: got %v, want http only", ls)
	}
	ls.Close()

	first, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	free := first.Addr().String()
	first.Close()
	_, err = Listen(Addr{Name: "http", Key: `key "http_addr"`, Addr: free},
		Addr{Name: "resp", Key: `config config.json: key "resp_addr"`, Addr: taken.Addr().String()})
	want := `config config.json: key "resp_addr": listen tcp ` + taken.Addr().String() + ": bind: address already in use"
	if err == nil || err.Error() != want {
		t.Errorf("Listen on a taken port: got %v, want %s", err, want)
	}
	again, err := net.Listen("tcp", free)
	if err != nil {
		t.Errorf("the address listened on before the failure is still taken: %v", err)
	} else {
		again.Close()
	}
}

// fakeServer serves until ctx is done, or fails at once with err.
type fakeServer struct {
	err  error
	cuts atomic.Int32
}

func (f *fakeServer) Serve(ctx context.Context, ln net.Listener, _ time.Duration) error {
	defer ln.Close()
	if f.err != nil {
		return f.err
	}
	<-ctx.Done()
	return nil
}

func (f *fakeServer) Cut() { f.cuts.Add(1) }

// TestServe: the front ends serve side by side; one that fails stops the
// process, its error named after it; Done joins their results once all
// have returned; Cut reaches each.
func TestServe(t *testing.T) {
	ls, err := Listen(Addr{Name: "a", Addr: "127.0.0.1:0"}, Addr{Name: "b", Addr: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	a, b := &fakeServer{}, &fakeServer{err: errors.New("accept: too many open files")}
	s := Serve(ctx, time.Second, cancel, Front{"a", a, ls["a"]}, Front{"b", b, ls["b"]})
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a front end failed and the stop did not begin")
	}
	if cause := context.Cause(ctx); cause == nil || cause.Error() != "serve b: accept: too many open files" {
		t.Errorf("stop cause: got %v, want serve b's error", cause)
	}
	s.Cut()
	if a.cuts.Load() != 1 || b.cuts.Load() != 1 {
		t.Errorf("Cut: a cut %d times, b %d, want each once", a.cuts.Load(), b.cuts.Load())
	}
	select {
	case err := <-s.Done():
		if err == nil || !strings.Contains(err.Error(), "serve b: accept") || strings.Contains(err.Error(), "serve a") {
			t.Errorf("Done: got %v, want b's error only", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Done: nothing after both returned")
	}
}
