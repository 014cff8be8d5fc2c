package server

import (
	"context"
	"net/http"
	"time"

	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/workerlease"
)

// Leases is what the server needs of workerlease.Service. Errors are the
// workerlease sentinels; cluster "" means the service's default cluster.
type Leases interface {
	Acquire(ctx context.Context, cluster, holder string) (workerlease.Lease, error)
	Renew(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) (workerlease.Lease, error)
	Release(ctx context.Context, cluster string, workerID int64, token string, lastTimestampMS int64) error
	TTL() time.Duration
	MaxWorkerID() int64
}

// OwnLease is what the server needs of workerlease.Keeper: this instance's
// own lease, for GET /workerid, /health, /status and the lease metrics.
type OwnLease interface {
	Lease() (workerlease.Lease, bool)
	SecondsLeft(now time.Time) float64
	// Wait says why, and about how long, the instance holds no lease
	// whose fence is open: starting, a grant the store had no record of
	// waiting out any holder it may have forgotten, a loss, a full
	// cluster. The zero Wait while it holds one.
	Wait(now time.Time) workerlease.Wait
}

// handleOwnLease serves GET /workerid: the lease once its fence is open;
// before, resp_code 3 with Retry-After, saying why (docs/api.md §2), or 5 when
// the instance found every worker ID held.
func (s *Server) handleOwnLease(w http.ResponseWriter, r *http.Request) int {
	if s.own == nil {
		return s.fail(w, r, snowflake.ErrDisabled)
	}
	if err := s.own.Wait(time.Now()).Err(); err != nil {
		return s.fail(w, r, err)
	}
	l, ok := s.own.Lease()
	if !ok { // lapsed since: the keeper is about to say why
		return s.fail(w, r, workerlease.ErrWaiting)
	}
	return s.sendJSON(w, r, http.StatusOK, struct {
		envelope
		WorkerID    int64  `json:"worker_id"`
		Cluster     string `json:"cluster"`
		ExpiresAt   string `json:"expires_at"`
		MaxWorkerID int64  `json:"max_worker_id"`
	}{success, l.WorkerID, l.Cluster, formatTime(l.ExpiresAt), s.leases.MaxWorkerID()})
}

// leaseJSON answers POST /workerid and /workerid/renew.
type leaseJSON struct {
	envelope
	WorkerID        int64  `json:"worker_id"`
	Cluster         string `json:"cluster"`
	Token           string `json:"token,omitempty"`
	LeaseMS         int64  `json:"lease_ms"`
	ExpiresAt       string `json:"expires_at"`
	LastTimestampMS int64  `json:"last_timestamp_ms"`
	// NoHistory: the store had no record of the worker ID (never leased,
	// or forgotten). The holder must issue no ID under it before lease_ms
	// plus its clock-skew bound has passed (docs/api.md §3).
	NoHistory bool `json:"no_history,omitempty"`
}

func (s *Server) leaseJSON(l workerlease.Lease, withToken bool) leaseJSON {
	out := leaseJSON{
		envelope:        success,
		WorkerID:        l.WorkerID,
		Cluster:         l.Cluster,
		LeaseMS:         s.leases.TTL().Milliseconds(),
		ExpiresAt:       formatTime(l.ExpiresAt),
		LastTimestampMS: l.LastTimestampMS,
		NoHistory:       l.NoHistory,
	}
	if withToken {
		out.Token = l.Token
	}
	return out
}

// handleAcquire serves POST /workerid (admin): a lease for a process that
// runs its own generator.
func (s *Server) handleAcquire(w http.ResponseWriter, r *http.Request) int {
	if s.leases == nil {
		return s.fail(w, r, errNoLeases)
	}
	o, err := readObject(w, r, "cluster")
	if err != nil {
		return s.fail(w, r, err)
	}
	cluster, err := clusterField(o)
	if err != nil {
		return s.fail(w, r, err)
	}
	// RemoteAddr comes from the socket, not the client's words, so it is a
	// safe note for operators reading the table.
	l, err := s.leases.Acquire(r.Context(), cluster, "http "+r.RemoteAddr)
	if err != nil {
		return s.fail(w, r, err)
	}
	return s.sendJSON(w, r, http.StatusCreated, s.leaseJSON(l, true))
}

// handleRenew serves POST /workerid/renew (admin).
func (s *Server) handleRenew(w http.ResponseWriter, r *http.Request) int {
	if s.leases == nil {
		return s.fail(w, r, errNoLeases)
	}
	h, err := s.readHolding(w, r)
	if err != nil {
		return s.fail(w, r, err)
	}
	l, err := s.leases.Renew(r.Context(), h.cluster, h.workerID, h.token, h.lastTimestampMS)
	if err != nil {
		return s.fail(w, r, err)
	}
	return s.sendJSON(w, r, http.StatusOK, s.leaseJSON(l, false))
}

// handleRelease serves POST /workerid/release (admin).
func (s *Server) handleRelease(w http.ResponseWriter, r *http.Request) int {
	if s.leases == nil {
		return s.fail(w, r, errNoLeases)
	}
	h, err := s.readHolding(w, r)
	if err != nil {
		return s.fail(w, r, err)
	}
	if err := s.leases.Release(r.Context(), h.cluster, h.workerID, h.token, h.lastTimestampMS); err != nil {
		return s.fail(w, r, err)
	}
	return send(w, http.StatusOK, []byte(okPrefix+"}"))
}

// holding names a lease held by a client: the body of renew and release.
type holding struct {
	cluster         string
	workerID        int64
	token           string
	lastTimestampMS int64
}

// readHolding reads a renew or release body. Only the JSON is checked
// here, which tells a missing worker_id from worker 0; the Service checks
// the values and says what is wrong with them.
func (s *Server) readHolding(w http.ResponseWriter, r *http.Request) (holding, error) {
	var h holding
	o, err := readObject(w, r, "worker_id", "token", "last_timestamp_ms", "cluster")
	if err != nil {
		return h, err
	}
	if h.cluster, err = clusterField(o); err != nil {
		return h, err
	}
	id, ok, err := o.int64("worker_id")
	switch {
	case err != nil:
		return h, err
	case !ok:
		return h, missingParam("worker_id")
	}
	h.workerID = id
	tok, ok, err := o.string("token")
	switch {
	case err != nil:
		return h, err
	case !ok:
		return h, missingParam("token")
	}
	h.token = tok
	if h.lastTimestampMS, _, err = o.int64("last_timestamp_ms"); err != nil {
		return h, err
	}
	return h, nil
}

// clusterField reads the optional cluster; absent leaves the Service's
// default. The Service reads "" as the default too, so a cluster given as
// "" is refused here, in the Service's words: the client named a cluster,
// and no cluster has that name.
func clusterField(o object) (string, error) {
	c, ok, err := o.string("cluster")
	switch {
	case err != nil:
		return "", err
	case ok && c == "":
		return "", workerlease.ErrInvalidCluster
	}
	return c, nil
}
