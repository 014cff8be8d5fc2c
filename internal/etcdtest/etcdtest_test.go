package etcdtest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestStopRestartKill(t *testing.T) {
	srv := Start(t)
	if got, want := srv.DSN(), strings.Join(srv.Endpoints(), ","); got != want || !strings.HasPrefix(got, "http://127.0.0.1:") {
		t.Fatalf("DSN() = %q, want %q on loopback", got, want)
	}
	hc := &http.Client{Timeout: time.Second}
	url := srv.Endpoints()[0] + "/health"
	if !healthy(t.Context(), hc, url) {
		t.Fatalf("GET %s: not healthy after Start", url)
	}

	srv.Stop()
	if healthy(t.Context(), hc, url) {
		t.Fatalf("GET %s: still healthy after Stop", url)
	}
	srv.Stop() // stopping a stopped server does nothing

	srv.Restart(t)
	if !healthy(t.Context(), hc, url) {
		t.Fatalf("GET %s: not healthy after restart", url)
	}
	srv.Kill()
	if healthy(t.Context(), hc, url) {
		t.Fatalf("GET %s: still healthy after Kill", url)
	}
}

func TestServersArePrivate(t *testing.T) {
	a, b := Start(t), Start(t)
	if a.DSN() == b.DSN() {
		t.Fatalf("two servers share the endpoint %s", a.DSN())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	hc := &http.Client{Timeout: time.Second}
	a.Stop()
	if !healthy(ctx, hc, b.Endpoints()[0]+"/health") {
		t.Fatalf("stopping one server took down the other")
	}
}

// TestWipe: after Wipe the server answers on the same endpoint and holds
// none of the keys written before, to the same client.
func TestWipe(t *testing.T) {
	srv := Start(t)
	c, err := clientv3.New(clientv3.Config{Endpoints: srv.Endpoints(), DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 15*time.Second)
	defer cancel()
	if _, err := c.Put(ctx, "k", "v"); err != nil {
		t.Fatalf("put: %v", err)
	}
	dsn := srv.DSN()
	srv.Wipe(t)
	if srv.DSN() != dsn {
		t.Fatalf("DSN after Wipe %q, want the same %q", srv.DSN(), dsn)
	}
	r, err := c.Get(ctx, "k")
	if err != nil {
		t.Fatalf("get after Wipe: %v", err)
	}
	if len(r.Kvs) != 0 {
		t.Fatalf("key k after Wipe: %q, want none", r.Kvs[0].Value)
	}
}
