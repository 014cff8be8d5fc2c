package resp

import (
	"net"
	"strconv"
	"testing"
	"time"
)

// TestDrain: after the stop signal the listener closes at once, open
// connections are served until the drain ends, then they are closed and
// Serve returns nil.
func TestDrain(t *testing.T) {
	const drain = 600 * time.Millisecond
	in := start(t, options{noFlake: true, drain: drain})
	open := dialRaw(t, in.addr)
	get := func() string {
		t.Helper()
		if head := open.send(t, "GET test_business\r\n"); head[0] != '$' {
			return head
		}
		return open.line(t)
	}
	if id := get(); id != "1" {
		t.Fatalf("GET = %q, want 1", id)
	}
	begun := time.Now()
	in.stop()
	waitFor(t, "the listener to close", func() bool {
		c, err := net.Dial("tcp", in.addr)
		if err != nil {
			return true
		}
		_ = c.Close()
		return false
	})
	for i := 2; time.Since(begun) < drain/2; i++ {
		if id := get(); id != strconv.Itoa(i) {
			t.Fatalf("GET during the drain = %q, want %d", id, i)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !open.closed(t) {
		t.Fatal("connection still open after the drain")
	}
	if took := time.Since(begun); took < drain {
		t.Errorf("connection closed after %v, before the drain of %v ended", took, drain)
	}
	select {
	case err := <-in.served:
		in.served <- err
		if err != nil {
			t.Errorf("Serve = %v, want nil", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
}

// TestCut: Cut, which the stop sequence calls when connections outlive
// their share of shutdown_timeout, closes them during a long drain and
// lets Serve return.
func TestCut(t *testing.T) {
	in := start(t, options{noFlake: true, drain: time.Hour})
	open := dialRaw(t, in.addr)
	if got := open.send(t, "PING\r\n"); got != "+PONG" {
		t.Fatalf("PING = %q", got)
	}
	in.stop()
	time.Sleep(50 * time.Millisecond)
	if got := open.send(t, "PING\r\n"); got != "+PONG" {
		t.Fatalf("PING during the drain = %q", got)
	}
	in.srv.Cut()
	if !open.closed(t) {
		t.Error("connection open after Cut")
	}
	select {
	case err := <-in.served:
		in.served <- err
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after Cut")
	}
}
