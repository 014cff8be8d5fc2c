package grpcapi

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/internal/frontendtest"
	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// instance is the front end as main wires it: a real SQLite store in a
// temporary directory, the real segment allocator, worker-lease service
// and a snowflake source under a lease the real keeper holds, the real
// guard and audit log; served on a TCP port of 127.0.0.1.
type instance struct {
	addr  string
	store *store.SQLite
	alloc *segment.Allocator
	admin *access.Admin
	srv   *Server
	reg   *prometheus.Registry
	// stop starts the drain (as SIGTERM does); served then reports Serve's
	// return.
	stop   context.CancelFunc
	served chan error
}

// options tune start; the zero value serves with defaults, no admin
// token, and no drain.
type options struct {
	cfg   Config
	drain time.Duration
	// ping replaces the store's Ping for the health service.
	ping func(context.Context) error
}

// pinger is a Pinger of a function.
type pinger func(context.Context) error

func (p pinger) Ping(ctx context.Context) error { return p(ctx) }

// start serves a fresh instance until tb's cleanup, which drains it and
// closes everything in main's order.
func start(tb testing.TB, o options) *instance {
	tb.Helper()
	ctx := context.Background()
	st, alloc := frontendtest.SQLiteDomain(tb)
	in := &instance{store: st, alloc: alloc, reg: prometheus.NewRegistry()}
	cfg := o.cfg
	var err error
	if cfg.Metrics, err = NewMetrics(in.reg); err != nil {
		tb.Fatal(err)
	}
	svc, err := workerlease.NewService(st, workerlease.Config{Holder: "grpc-test"})
	if err != nil {
		tb.Fatal(err)
	}
	_, source := frontendtest.StartLease(tb, svc)
	guard, err := access.NewGuard(ctx, st, access.Config{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = guard.Close() })
	if in.admin, err = access.NewAdmin(st, segment.ValidTag, guard, cfg.AdminToken); err != nil {
		tb.Fatal(err)
	}
	deps := Deps{Segments: alloc, Store: st, Snowflake: source, Leases: svc, Guard: guard, Audit: in.admin}
	if o.ping != nil {
		deps.Store = pinger(o.ping)
	}
	if in.srv, err = New(cfg, deps); err != nil {
		tb.Fatal(err)
	}
	s := frontendtest.ServeDraining(tb, in.srv, o.drain, nil)
	in.addr, in.stop, in.served = s.Addr, s.Stop, s.Served
	return in
}

// dial is a client connection to in, closed at tb's cleanup.
func (in *instance) dial(tb testing.TB) *grpc.ClientConn {
	tb.Helper()
	cc, err := grpc.NewClient(in.addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = cc.Close() })
	return cc
}

// client is an IDAllocator client of a new connection to in.
func (in *instance) client(tb testing.TB) idallocv1.IDAllocatorClient {
	tb.Helper()
	return idallocv1.NewIDAllocatorClient(in.dial(tb))
}

// bearer is ctx with token in its metadata, as clients send it.
func bearer(ctx context.Context, token string) context.Context {
	return metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+token)
}

// testCtx is a context that ends with the test, or in 30 s.
func testCtx(tb testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	tb.Cleanup(cancel)
	return ctx
}

// answer is what a status says to a program: its code, its ErrorInfo's
// reason (the kind) and metadata, and its RetryInfo's delay.
type answer struct {
	code  codes.Code
	kind  string
	field string
	retry time.Duration
	msg   string
}

// answerOf reads err's status.
func answerOf(tb testing.TB, err error) answer {
	tb.Helper()
	st, ok := status.FromError(err)
	if !ok {
		tb.Fatalf("not a status: %v", err)
	}
	r := answer{code: st.Code(), msg: st.Message()}
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			if d.GetDomain() != Domain {
				tb.Errorf("ErrorInfo domain %q, want %q", d.GetDomain(), Domain)
			}
			r.kind, r.field = d.GetReason(), d.GetMetadata()["field"]
		case *errdetails.RetryInfo:
			r.retry = d.GetRetryDelay().AsDuration()
		case error:
			tb.Errorf("detail not read: %v", d)
		}
	}
	return r
}

// wantRefusal fails tb unless err is a status of code and kind.
func wantRefusal(tb testing.TB, what string, err error, code codes.Code, kind string) answer {
	tb.Helper()
	if err == nil {
		tb.Fatalf("%s: no error, want %v %s", what, code, kind)
	}
	r := answerOf(tb, err)
	if r.code != code || r.kind != kind {
		tb.Errorf("%s: got %v %q (%s), want %v %q", what, r.code, r.kind, r.msg, code, kind)
	}
	return r
}
