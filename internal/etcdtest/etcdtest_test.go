package etcdtest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"
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
