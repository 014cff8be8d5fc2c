//go:build unix

package client

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// leaseServer runs idalloc with 2 worker bits (worker IDs 0..3) and
// snowflake mode off, so that every worker ID is free for clients.
func leaseServer(t *testing.T, ttl time.Duration, over map[string]any) *server {
	t.Helper()
	cfg := map[string]any{"snowflake": map[string]any{"enabled": false, "worker_bits": 2, "lease_ttl": ttl.String()}}
	for k, v := range over {
		cfg[k] = v
	}
	return startServer(t, "leases", serverConfig(t.TempDir(), cfg))
}

func TestGeneratorAgainstLiveServer(t *testing.T) {
	srv := leaseServer(t, 30*time.Second, nil)
	g := newTestClient(t, Config{URLs: []string{srv.URL}}).Generator()

	// Acquire until none is left.
	type held struct {
		id    int64
		token string
	}
	var hs []held
	for {
		id, token, err := g.GetID()
		if errors.Is(err, ErrNoAvailableID) {
			var e *Error
			if !errors.As(err, &e) || e.RespCode != 5 || e.HTTPStatus != http.StatusConflict {
				t.Errorf("no worker ID left: got %#v, want resp_code 5, HTTP 409", err)
			}
			break
		}
		if err != nil {
			t.Fatalf("GetID #%d: %v", len(hs)+1, err)
		}
		if len(token) != 22 {
			t.Errorf("token %q: want 22 characters", token)
		}
		hs = append(hs, held{id, token})
		if len(hs) > 4 {
			t.Fatalf("got %d worker IDs with 2 worker bits", len(hs))
		}
	}
	ids := make([]int64, 0, len(hs))
	for _, h := range hs {
		ids = append(ids, h.id)
	}
	slices.Sort(ids)
	if !slices.Equal(ids, []int64{0, 1, 2, 3}) {
		t.Fatalf("acquired worker IDs %v, want 0..3", ids)
	}

	h := hs[0]
	if err := g.Renew(h.id, h.token); err != nil {
		t.Errorf("Renew: %v", err)
	}
	if err := g.Renew(h.id, hs[1].token); !errors.Is(err, ErrTokenMismatch) {
		t.Errorf("Renew with another holder's token: got %v, want ErrTokenMismatch", err)
	}
	if err := g.Release(h.id, h.token); err != nil {
		t.Fatalf("Release: %v", err)
	}
	err := g.Renew(h.id, h.token)
	if !errors.Is(err, ErrTokenMismatch) && !errors.Is(err, ErrNotAssigned) {
		t.Errorf("Renew after Release: got %v, want ErrTokenMismatch or ErrNotAssigned", err)
	}
	t.Logf("renew after release: %v", err)
	if err := g.Release(h.id, h.token); !errors.Is(err, ErrNotAssigned) && !errors.Is(err, ErrTokenMismatch) {
		t.Errorf("second Release: got %v, want ErrNotAssigned or ErrTokenMismatch", err)
	}

	for _, bad := range []string{"short", h.token + "x", ""} {
		if err := g.Renew(hs[1].id, bad); !errors.Is(err, ErrInvalidToken) {
			t.Errorf("Renew with token %q: got %v, want ErrInvalidToken", bad, err)
		}
	}
	for _, bad := range []int64{-1, 4, 1 << 40} {
		if err := g.Renew(bad, hs[1].token); !errors.Is(err, ErrInvalidWorkerID) {
			t.Errorf("Renew of worker ID %d: got %v, want ErrInvalidWorkerID", bad, err)
		}
	}

	// The freed worker ID is granted again, with the context variant.
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
	defer cancel()
	id, token, err := g.GetIDContext(ctx)
	if err != nil || id != h.id {
		t.Fatalf("GetIDContext after a release: got %d %v, want worker ID %d", id, err, h.id)
	}
	if err := g.ReleaseContext(ctx, id, token); err != nil {
		t.Errorf("ReleaseContext: %v", err)
	}
	if err := g.RenewContext(ctx, hs[2].id, hs[2].token); err != nil {
		t.Errorf("RenewContext: %v", err)
	}
}

func TestGeneratorExpiredToken(t *testing.T) {
	const ttl = time.Second
	srv := leaseServer(t, ttl, nil)
	g := newTestClient(t, Config{URLs: []string{srv.URL}}).Generator()
	l, err := g.Acquire(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if until := time.Until(l.ExpiresAt); until <= 0 || until > ttl+time.Second {
		t.Errorf("ExpiresAt %v is %v away, want about the TTL %v", l.ExpiresAt, until, ttl)
	}
	time.Sleep(ttl + 300*time.Millisecond)
	if err := g.Renew(l.WorkerID, l.Token); !errors.Is(err, ErrTokenExpired) {
		t.Errorf("Renew after the TTL: got %v, want ErrTokenExpired", err)
	}
}

func TestAdminToken(t *testing.T) {
	srv := leaseServer(t, 30*time.Second, map[string]any{"admin_token": "s3cret-admin"})
	srv.createTagAs(t, "order", "s3cret-admin")

	anon := newTestClient(t, Config{URLs: []string{srv.URL}})
	if _, _, err := anon.Generator().GetID(); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("GetID without the token: got %v, want ErrUnauthorized", err)
	}
	// Segment calls need no token.
	if _, err := anon.Next(t.Context(), "order"); err != nil {
		t.Errorf("Next without the token: %v", err)
	}

	admin := newTestClient(t, Config{URLs: []string{srv.URL}, AdminToken: "s3cret-admin"})
	id, token, err := admin.Generator().GetID()
	if err != nil {
		t.Fatalf("GetID with the token: %v", err)
	}
	if err := admin.Generator().Release(id, token); err != nil {
		t.Errorf("Release with the token: %v", err)
	}
}

// createTagAs creates tag on a server that has an admin token.
func (s *server) createTagAs(t *testing.T, tag, token string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, s.URL+"/tags", strings.NewReader(`{"app_tag":"`+tag+`","step":100}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Fatalf("create tag %s: HTTP %d", tag, resp.StatusCode)
	}
}

func TestKeeperRenewsAndReleases(t *testing.T) {
	const ttl = time.Second
	srv := leaseServer(t, ttl, nil)
	c := newTestClient(t, Config{URLs: []string{srv.URL}})
	g := c.Generator()
	k, err := NewKeeper(t.Context(), KeeperConfig{Generator: g})
	if err != nil {
		t.Fatal(err)
	}
	first := k.Lease()
	if first.WorkerID != k.WorkerID() || first.Token == "" {
		t.Fatalf("Lease after NewKeeper: %+v", first)
	}
	now := time.Now()
	if !k.Fence()(now, now.UnixMilli()) {
		t.Fatal("the fence refuses right after NewKeeper")
	}
	if k.Fence()(now, now.UnixMilli()+2*ttl.Milliseconds()) {
		t.Error("the fence passes a timestamp beyond the reservation")
	}

	time.Sleep(3 * ttl) // renewals every ttl/3 keep it
	select {
	case <-k.Done():
		t.Fatalf("lease lost while the server answers: %v", k.Err())
	default:
	}
	l := k.Lease()
	if !l.ExpiresAt.After(first.ExpiresAt) || l.LastTimestampMS <= first.LastTimestampMS {
		t.Errorf("after 3 TTLs: lease %+v, first %+v: want later ExpiresAt and a higher reservation", l, first)
	}
	if err := k.Err(); err != nil {
		t.Errorf("Err while held: %v", err)
	}

	last := time.Now().UnixMilli()
	if err := k.Close(t.Context(), last); err != nil {
		t.Fatalf("Close: %v", err)
	}
	<-k.Done()
	if !errors.Is(k.Err(), ErrClosed) {
		t.Errorf("Err after Close: got %v, want ErrClosed", k.Err())
	}
	if now := time.Now(); k.Fence()(now, now.UnixMilli()) {
		t.Error("the fence passes after Close")
	}
	if g := clientGoroutines(); len(g) > 0 {
		t.Errorf("goroutines outlive Keeper.Close:\n%v", g)
	}
	// Released: all four worker IDs can be acquired again, and the one
	// given back carries the holder's reservation.
	var got []workerlease.Lease
	for range 4 {
		l, err := g.Acquire(t.Context())
		if err != nil {
			t.Fatalf("acquire after Close: %v (the Keeper's worker ID was not released)", err)
		}
		got = append(got, l)
	}
	for _, l := range got {
		if l.WorkerID == k.WorkerID() && l.LastTimestampMS < last {
			t.Errorf("worker ID %d came back with last_timestamp_ms %d, want at least the %d reported at Close",
				l.WorkerID, l.LastTimestampMS, last)
		}
	}
}

func TestKeeperConfigErrors(t *testing.T) {
	srv := leaseServer(t, 10*time.Second, nil)
	g := newTestClient(t, Config{URLs: []string{srv.URL}}).Generator()
	for _, cfg := range []KeeperConfig{
		{},
		{Generator: g, Margin: -1},
		{Generator: g, RetryInterval: -1},
		{Generator: g, Margin: 5 * time.Second}, // not below TTL/2, known once acquired
	} {
		if _, err := NewKeeper(t.Context(), cfg); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("NewKeeper(%+v): got %v, want ErrInvalidConfig", cfg, err)
		}
	}
	// The refused Keeper gave its worker ID back: all four are free.
	for range 4 {
		if _, _, err := g.GetID(); err != nil {
			t.Fatalf("GetID: %v (a refused Keeper kept its worker ID)", err)
		}
	}
}

// TestClientCloseClosesKeepers: closing a Client closes the Keepers made
// over it, releasing their worker IDs, and leaves no goroutine behind.
func TestClientCloseClosesKeepers(t *testing.T) {
	srv := leaseServer(t, 10*time.Second, nil)
	c, err := New(Config{URLs: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	var ks []*Keeper
	for range 2 {
		k, err := NewKeeper(t.Context(), KeeperConfig{Generator: c.Generator()})
		if err != nil {
			t.Fatal(err)
		}
		ks = append(ks, k)
	}
	if err := ks[1].Close(t.Context(), 0); err != nil { // closed first by hand
		t.Fatal(err)
	}
	c.Close()
	for i, k := range ks {
		select {
		case <-k.Done():
		default:
			t.Errorf("Keeper %d not done after Client.Close", i)
		}
	}
	if g := clientGoroutines(); len(g) > 0 {
		t.Errorf("goroutines outlive Client.Close:\n%v", g)
	}
	if _, err := NewKeeper(t.Context(), KeeperConfig{Generator: c.Generator()}); !errors.Is(err, ErrClosed) {
		t.Errorf("NewKeeper on a closed Client: got %v, want ErrClosed", err)
	}
	g := newTestClient(t, Config{URLs: []string{srv.URL}}).Generator()
	for i := range 4 {
		if _, _, err := g.GetID(); err != nil {
			t.Fatalf("GetID #%d: %v (a Keeper's worker ID was not released)", i+1, err)
		}
	}
}
