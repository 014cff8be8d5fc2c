package main

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"testing"
	"time"
)

// get sends a keep-alive GET on c and returns the response's status, reading
// for at most wait.
func get(tb testing.TB, c net.Conn, r *bufio.Reader, wait time.Duration) (int, error) {
	tb.Helper()
	if _, err := io.WriteString(c, "GET / HTTP/1.1\r\nHost: localhost\r\n\r\n"); err != nil {
		tb.Fatal(err)
	}
	return readStatus(c, r, wait)
}

func readStatus(c net.Conn, r *bufio.Reader, wait time.Duration) (int, error) {
	if err := c.SetReadDeadline(time.Now().Add(wait)); err != nil {
		return 0, err
	}
	resp, err := http.ReadResponse(r, nil)
	if err != nil {
		return 0, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// TestMaxConnsHoldsTheExtraConnection: with max_conns 2, a third keep-alive
// connection is not served while the first two stay open, and is served as
// soon as one of them closes.
func TestMaxConnsHoldsTheExtraConnection(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := limitConns(ln, 2)
	hs := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(lim) }()
	defer func() {
		hs.Close()
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: got %v, want ErrServerClosed", err)
		}
	}()

	var conns [3]net.Conn
	var readers [3]*bufio.Reader
	for i := range conns {
		c, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns[i], readers[i] = c, bufio.NewReader(c)
	}
	for i := range 2 {
		if code, err := get(t, conns[i], readers[i], 10*time.Second); err != nil || code != 200 {
			t.Fatalf("connection %d within the cap: got %d, %v; want 200", i+1, code, err)
		}
	}
	// Served, it would answer in microseconds; the wait only bounds how long
	// the test looks for a bug, so a slow machine cannot fail it.
	code, err := get(t, conns[2], readers[2], 300*time.Millisecond)
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("third connection with two open and max_conns 2: got %d, %v; want no answer", code, err)
	}
	if got := lim.open(); got != 2 {
		t.Errorf("open connections: got %d, want 2", got)
	}

	conns[0].Close()
	if code, err := readStatus(conns[2], readers[2], 10*time.Second); err != nil || code != 200 {
		t.Fatalf("third connection after the first closed: got %d, %v; want 200", code, err)
	}
}

// TestConnLimiterCloseAll: closeAll cuts every open connection and frees
// its slot; Close releases an Accept waiting for a slot.
func TestConnLimiterCloseAll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lim := limitConns(ln, 1)
	defer lim.Close()
	client, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := lim.Accept(); err != nil {
		t.Fatal(err)
	}
	lim.closeAll()
	if got := lim.open(); got != 0 {
		t.Fatalf("open connections after closeAll: got %d, want 0", got)
	}
	_ = client.SetReadDeadline(time.Now().Add(10 * time.Second))
	if _, err := client.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
		t.Errorf("client read after closeAll: got %v, want EOF", err)
	}
	// The slot is free again: a second connection is accepted.
	client2, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client2.Close()
	c2, err := lim.Accept()
	if err != nil {
		t.Fatalf("Accept after closeAll freed the slot: %v", err)
	}
	// At the cap again: an Accept waits, and Close releases it.
	accepted := make(chan error, 1)
	go func() {
		_, err := lim.Accept()
		accepted <- err
	}()
	lim.Close()
	if err := <-accepted; !errors.Is(err, net.ErrClosed) {
		t.Errorf("Accept blocked at the cap, then Close: got %v, want net.ErrClosed", err)
	}
	c2.Close()
	c2.Close() // a second Close must not free a second slot
	if got, want := len(lim.sem), 0; got != want {
		t.Errorf("slots taken after closing twice: got %d, want %d", got, want)
	}
}
