package frontend

import (
	"errors"
	"io"
	"net"
	"testing"
	"time"
)

// TestLimiterCloseAll: CloseAll cuts every open connection and frees its
// slot; at the cap with none idle, Accept refuses a connection and waits
// for the next; Close ends that wait.
func TestLimiterCloseAll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := Limit(ln, Cap{Max: 1, Refusal: []byte("-ERR full\r\n")})
	defer lim.Close()
	addr := ln.Addr().String()
	client := dial(t, addr)
	if _, err := lim.Accept(); err != nil {
		t.Fatal(err)
	}
	lim.CloseAll()
	if got := lim.open(); got != 0 {
		t.Fatalf("open connections after CloseAll: got %d, want 0", got)
	}
	if !client.closedByServer() {
		t.Error("client after CloseAll: still open, want closed")
	}
	// The slot is free again: a second connection is accepted.
	dial(t, addr)
	c2, err := lim.Accept()
	if err != nil {
		t.Fatalf("Accept after CloseAll freed the slot: %v", err)
	}
	// At the cap, with no idle connection (nobody marks any): the third
	// is refused, and Accept waits for another; Close ends the wait.
	third := dial(t, addr)
	accepted := make(chan error, 1)
	go func() {
		_, err := lim.Accept()
		accepted <- err
	}()
	if got, err := third.r.ReadString('\n'); got != "-ERR full\r\n" || err != nil {
		t.Errorf("connection over the cap: read %q, %v; want the refusal", got, err)
	}
	if !third.closedByServer() {
		t.Error("connection over the cap after its refusal: still open, want closed")
	}
	select {
	case err := <-accepted:
		t.Fatalf("Accept after refusing: got %v, want it to wait for another connection", err)
	case <-time.After(100 * time.Millisecond):
	}
	lim.Close()
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept waiting, then Close: got %v, want net.ErrClosed", err)
	}
	c2.Close()
	c2.Close() // a second Close must not free a second slot
	if got := lim.open(); got != 0 {
		t.Errorf("open connections after closing twice: got %d, want 0", got)
	}
}

// TestRefusalReachesAClientThatSent: a refused client that has sent its
// request before reading still reads the whole refusal, then EOF, not a
// reset (the limiter reads what it sent until it closes), and the
// connection is let go once the client closes.
func TestRefusalReachesAClientThatSent(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := Limit(ln, Cap{Max: 1, Refusal: []byte(refusal)})
	defer lim.Close()
	accepted := make(chan net.Conn, 2)
	go func() {
		for {
			c, err := lim.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	dial(t, ln.Addr().String()) // takes the one slot and stays busy
	<-accepted
	for i := range 20 {
		c := dial(t, ln.Addr().String())
		c.send(t, "/") // before the refusal is read, as an HTTP client does
		// A reset, were the server to send one for the unread request,
		// would be here before the client reads.
		time.Sleep(time.Millisecond)
		_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
		got, err := io.ReadAll(c.r)
		if err != nil || string(got) != refusal {
			t.Fatalf("refused client %d: read %q, %v; want the refusal, then EOF", i, got, err)
		}
		c.Close()
	}
	waitFor(t, "every refused connection let go", func() bool { return lim.lingering.Load() == 0 })
}
