package client

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/idalloc/idalloc/workerlease"
)

// Generator leases worker IDs over HTTP with the API of the workerid library
// (libx.net/workerid): GetID, Renew and Release, each with a context
// variant, returning that library's sentinel errors (ErrNoAvailableID,
// ErrInvalidWorkerID, ErrTokenMismatch, ErrTokenExpired, ErrNotAssigned,
// ErrInvalidToken), which errors.Is matches. The calls are POST /workerid,
// /workerid/renew and /workerid/release, admin calls that carry
// Config.AdminToken; they go to the Client's instances in turn like every
// call, so one instance down does not fail them.
//
// GetID gives the worker ID and token only. A process that runs a snowflake
// generator on the worker ID needs more: the floor its IDs must start after
// (Acquire's Lease.LastTimestampMS), renewals that reserve timestamps, and
// a fence. Keeper does all three.
type Generator struct {
	c *Client
}

// Generator returns the lease API over c. It shares c's instances and
// connections; after c.Close its calls return ErrClosed.
func (c *Client) Generator() *Generator { return &Generator{c: c} }

// GetID acquires a free worker ID and returns it with its lease token.
// Errors: ErrNoAvailableID, ErrUnauthorized, ErrUnavailable, ErrClosed.
func (g *Generator) GetID() (int64, string, error) {
	return g.GetIDContext(context.Background())
}

// GetIDContext is GetID within ctx.
func (g *Generator) GetIDContext(ctx context.Context) (int64, string, error) {
	l, err := g.Acquire(ctx)
	return l.WorkerID, l.Token, err
}

// Acquire acquires a free worker ID and returns its lease: WorkerID, Token,
// Cluster, ExpiresAt (by the server's database clock) and LastTimestampMS,
// the highest timestamp any earlier holder reserved, which a generator on
// this worker ID must start after (snowflake.Settings.StartAfterMS). Errors
// as GetID.
func (g *Generator) Acquire(ctx context.Context) (workerlease.Lease, error) {
	l, _, err := g.acquire(ctx)
	return l, err
}

// Renew extends the lease that token holds on workerID by the server's TTL.
// Errors: ErrInvalidWorkerID, ErrInvalidToken; ErrTokenMismatch,
// ErrTokenExpired or ErrNotAssigned when token does not hold workerID
// (acquire another); ErrUnauthorized, ErrUnavailable, ErrClosed.
func (g *Generator) Renew(workerID int64, token string) error {
	return g.RenewContext(context.Background(), workerID, token)
}

// RenewContext is Renew within ctx.
func (g *Generator) RenewContext(ctx context.Context, workerID int64, token string) error {
	_, _, err := g.renew(ctx, "", workerID, token, 0)
	return err
}

// Release frees workerID if token still holds it. Errors as Renew. A
// release whose answer was lost and that was sent again to another instance
// answers ErrNotAssigned: the first one freed it.
func (g *Generator) Release(workerID int64, token string) error {
	return g.ReleaseContext(context.Background(), workerID, token)
}

// ReleaseContext is Release within ctx.
func (g *Generator) ReleaseContext(ctx context.Context, workerID int64, token string) error {
	return g.release(ctx, "", workerID, token, 0)
}

// leaseAnswer is the body of POST /workerid and /workerid/renew.
type leaseAnswer struct {
	WorkerID        int64  `json:"worker_id"`
	Cluster         string `json:"cluster"`
	Token           string `json:"token"`
	LeaseMS         int64  `json:"lease_ms"`
	ExpiresAt       string `json:"expires_at"`
	LastTimestampMS int64  `json:"last_timestamp_ms"`
	NoHistory       bool   `json:"no_history"`
}

// holding is the body of renew and release.
type holding struct {
	Cluster         string `json:"cluster,omitempty"`
	WorkerID        int64  `json:"worker_id"`
	Token           string `json:"token"`
	LastTimestampMS int64  `json:"last_timestamp_ms,omitempty"`
}

// acquire returns the lease and the server's TTL for it.
func (g *Generator) acquire(ctx context.Context) (workerlease.Lease, time.Duration, error) {
	body := []byte(`{}`)
	if g.c.cluster != "" {
		var err error
		if body, err = json.Marshal(struct {
			Cluster string `json:"cluster"`
		}{g.c.cluster}); err != nil {
			return workerlease.Lease{}, 0, err
		}
	}
	return g.leaseCall(ctx, "/workerid", body, "")
}

// renew renews and reserves lastTimestampMS (0: nothing). cluster ""
// means Config.Cluster.
func (g *Generator) renew(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) (workerlease.Lease, time.Duration, error) {
	body, err := g.holding(cluster, workerID, token, lastTimestampMS)
	if err != nil {
		return workerlease.Lease{}, 0, err
	}
	return g.leaseCall(ctx, "/workerid/renew", body, token)
}

func (g *Generator) release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error {
	body, err := g.holding(cluster, workerID, token, lastTimestampMS)
	if err != nil {
		return err
	}
	return g.c.do(ctx, request{method: http.MethodPost, path: "/workerid/release", body: body, admin: true},
		func(answer) error { return nil })
}

func (g *Generator) holding(cluster string, workerID int64, token string, lastTimestampMS int64) ([]byte, error) {
	if cluster == "" {
		cluster = g.c.cluster
	}
	return json.Marshal(holding{Cluster: cluster, WorkerID: workerID, Token: token, LastTimestampMS: lastTimestampMS})
}

// leaseCall posts body and reads a lease answer; token fills in the token a
// renewal's answer leaves out.
func (g *Generator) leaseCall(ctx context.Context, path string, body []byte, token string) (workerlease.Lease, time.Duration, error) {
	var l workerlease.Lease
	var ttl time.Duration
	err := g.c.do(ctx, request{method: http.MethodPost, path: path, body: body, admin: true}, func(a answer) error {
		var v leaseAnswer
		if err := json.Unmarshal(a.body, &v); err != nil {
			return fmt.Errorf("idalloc at %s: %s answer: %w", a.inst.base, path, err)
		}
		exp, err := time.Parse(time.RFC3339Nano, v.ExpiresAt)
		if err != nil || v.LeaseMS <= 0 {
			return fmt.Errorf("idalloc at %s: %s answer without a valid expires_at and lease_ms", a.inst.base, path)
		}
		if v.Token == "" {
			v.Token = token
		}
		l = workerlease.Lease{Cluster: v.Cluster, WorkerID: v.WorkerID, Token: v.Token,
			ExpiresAt: exp.UTC(), LastTimestampMS: v.LastTimestampMS, NoHistory: v.NoHistory}
		ttl = time.Duration(v.LeaseMS) * time.Millisecond
		return nil
	})
	return l, ttl, err
}
