//go:build unix

package client

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestCloseStopsEverything(t *testing.T) {
	srv := startServer(t, "solo", serverConfig(t.TempDir(), map[string]any{"snowflake": map[string]any{"enabled": true}}))
	srv.createTag(t, "order", 1000)
	srv.createTag(t, "user", 1000)
	srv.waitSnowflake(t)
	c, err := New(Config{URLs: []string{srv.URL}, RequestTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, tag := range []string{"order", "user"} {
		if _, err := c.Next(ctx, tag); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Snowflake(ctx); err != nil {
		t.Fatal(err)
	}
	// A caller waits on a fetch that the frozen server never answers.
	srv.signal(syscall.SIGSTOP)
	defer srv.signal(syscall.SIGCONT)
	waiting := make(chan error, 1)
	go func() {
		for {
			if _, err := c.Next(context.Background(), "order"); err != nil {
				waiting <- err
				return
			}
		}
	}()
	time.Sleep(200 * time.Millisecond)
	closed := make(chan struct{})
	go func() {
		c.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return within 5s with a fetch hanging on a frozen server")
	}
	select {
	case err := <-waiting:
		if !errors.Is(err, ErrClosed) {
			t.Errorf("the waiting caller got %v, want ErrClosed", err)
		}
	case <-time.After(time.Second):
		t.Fatal("the waiting caller was not released by Close")
	}
	if g := clientGoroutines(); len(g) > 0 {
		t.Errorf("goroutines of the client outlive Close:\n%s", strings.Join(g, "\n\n"))
	}
	if _, err := c.Next(ctx, "order"); !errors.Is(err, ErrClosed) {
		t.Errorf("Next after Close: got %v, want ErrClosed", err)
	}
	if _, err := c.Snowflake(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("Snowflake after Close: got %v, want ErrClosed", err)
	}
	if _, _, err := c.Generator().GetID(); !errors.Is(err, ErrClosed) {
		t.Errorf("GetID after Close: got %v, want ErrClosed", err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}
