package kindtest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/grpcapi"
	"github.com/idalloc/idalloc/internal/frontendtest"
	"github.com/idalloc/idalloc/internal/openapitest"
	"github.com/idalloc/idalloc/internal/storefault"
	"github.com/idalloc/idalloc/internal/testclock"
	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
	"github.com/idalloc/idalloc/resp"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/snowflake/leased"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

const (
	adminToken = "kindtest-admin-token"
	// maxWorkerID makes a cluster of two worker IDs, so that one test can
	// hold them all.
	maxWorkerID = 1
	// leaseOnly is why RESP cannot produce the lease kinds.
	leaseOnly = "RESP serves no worker-lease commands (docs/api.md §6)"
)

// row is one kind of the vocabulary and how a client reaches it: the
// instance's state, the HTTP request and the RESP command that get it, and
// what each front end answers.
type row struct {
	kind errs.Kind
	// skip says why neither front end can produce kind yet; such a row has
	// nothing else.
	skip string
	// seed is SQL run on the database before the instance starts.
	seed string
	// allocAuth starts the instance with alloc_auth on (docs/api.md §12), and
	// a per-tag token of tokenTag made; tagToken sends that token, as the
	// HTTP request's Bearer and by RESP's AUTH.
	allocAuth, tagToken bool
	// setup puts the started instance in the state that produces kind.
	setup func(t *testing.T, in *instance)

	// The HTTP request: method (GET when empty), target and JSON body, in
	// which {worker_id} and {token} stand for those of the lease setup
	// took (instance.lease); admin sends the admin token.
	method, target, body string
	admin                bool
	// The HTTP answer: status, resp_code and the field at fault ("" for
	// none); its kind is the row's, and it carries Retry-After if and only
	// if it is a 503 (docs/api.md §2) or a spent period (§11).
	status, code int
	field        string

	// The RESP command, sent after AUTH with the admin token when auth;
	// respSkip, instead, says why RESP cannot produce kind; httpSkip why
	// HTTP cannot (RESP's words are then checked against respOwn only).
	cmd      []any
	auth     bool
	respSkip string
	httpSkip string
	// class is the RESP error's first word (docs/api.md §6); the rest is HTTP's
	// msg, unless respOwn is set: then RESP's words begin with respOwn,
	// and respWhy says why they cannot be HTTP's.
	class            string
	respOwn, respWhy string

	// The gRPC call (docs/api.md §14), sent with the admin token when
	// admin or auth, with the tag token when tagToken; grpcSkip, instead,
	// says why gRPC cannot produce kind. gcode is the status code; the
	// status's message is HTTP's msg, unless grpcOwn is set: then it
	// begins with grpcOwn, for grpcWhy's reason.
	call             func(context.Context, idallocv1.IDAllocatorClient, *instance) error
	grpcSkip         string
	gcode            codes.Code
	grpcOwn, grpcWhy string
}

// next is the gRPC call of one ID of tag.
func next(tag string) func(context.Context, idallocv1.IDAllocatorClient, *instance) error {
	return func(ctx context.Context, c idallocv1.IDAllocatorClient, _ *instance) error {
		_, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: tag})
		return err
	}
}

// snowflakeCall is the gRPC call of one snowflake ID.
func snowflakeCall(ctx context.Context, c idallocv1.IDAllocatorClient, _ *instance) error {
	_, err := c.Snowflake(ctx, &idallocv1.SnowflakeRequest{})
	return err
}

// rows is the table: one row per kind of errs.Kinds.
func rows() []row {
	return []row{
		{kind: errs.BadRequest, target: "/alloc?app_tag=a%20b", status: 400, code: 1, field: "app_tag",
			cmd: []any{"GET", "a b"}, class: "ERR", call: next("a b"), gcode: codes.InvalidArgument},
		{kind: errs.UnknownTag, target: "/alloc?app_tag=nope", status: 404, code: 2, field: "app_tag",
			cmd: []any{"GET", "nope"}, class: "ERR", call: next("nope"), gcode: codes.NotFound},
		{kind: errs.UnknownRoute, target: "/no/such/route", status: 404, code: 2,
			cmd: []any{"NOSUCHCOMMAND", "x"}, class: "ERR",
			respOwn: "unknown command: idalloc serves GET, ", respWhy: "a command is not a route: RESP's words list the commands it serves",
			grpcSkip: "an unknown method is answered UNIMPLEMENTED by gRPC itself, before the front end sees the call"},
		{kind: errs.Unavailable, setup: stopStore, target: "/alloc?app_tag=test_business", status: 503, code: 3,
			cmd: []any{"GET", "test_business"}, class: "TRYAGAIN", call: next("test_business"), gcode: codes.Unavailable},
		{kind: errs.Draining, setup: closeAllocator, target: "/alloc?app_tag=test_business", status: 503, code: 3,
			cmd: []any{"GET", "test_business"}, class: "TRYAGAIN", call: next("test_business"), gcode: codes.Unavailable},
		{kind: errs.ClockBackwards, setup: clockBack, target: "/snowflake", status: 503, code: 4,
			cmd: []any{"SNOWFLAKE"}, class: "TRYAGAIN", call: snowflakeCall, gcode: codes.Unavailable},
		{kind: errs.NoWorkerID, setup: fillCluster, target: "/snowflake", status: 409, code: 5,
			cmd: []any{"SNOWFLAKE"}, class: "ERR", call: snowflakeCall, gcode: codes.FailedPrecondition},
		{kind: errs.TokenMismatch, setup: holdLease, method: "POST", target: "/workerid/renew", admin: true,
			body:   `{"worker_id":{worker_id},"token":"` + frontendtest.WellFormedToken + `"}`,
			status: 409, code: 6, field: "token", respSkip: leaseOnly, gcode: codes.FailedPrecondition,
			call: func(ctx context.Context, c idallocv1.IDAllocatorClient, in *instance) error {
				_, err := c.RenewWorkerID(ctx, &idallocv1.RenewWorkerIDRequest{WorkerId: in.lease.WorkerID, Token: frontendtest.WellFormedToken})
				return err
			}},
		{kind: errs.LeaseExpired, setup: expireLease, method: "POST", target: "/workerid/renew", admin: true,
			body: `{"worker_id":{worker_id},"token":"{token}"}`, status: 409, code: 6, field: "token", respSkip: leaseOnly,
			gcode: codes.FailedPrecondition, call: func(ctx context.Context, c idallocv1.IDAllocatorClient, in *instance) error {
				_, err := c.RenewWorkerID(ctx, &idallocv1.RenewWorkerIDRequest{WorkerId: in.lease.WorkerID, Token: in.lease.Token})
				return err
			}},
		{kind: errs.NotAssigned, method: "POST", target: "/workerid/release", admin: true,
			body:   `{"worker_id":1,"token":"` + frontendtest.WellFormedToken + `"}`,
			status: 409, code: 6, field: "worker_id", respSkip: leaseOnly, gcode: codes.FailedPrecondition,
			call: func(ctx context.Context, c idallocv1.IDAllocatorClient, _ *instance) error {
				_, err := c.ReleaseWorkerID(ctx, &idallocv1.ReleaseWorkerIDRequest{WorkerId: 1, Token: frontendtest.WellFormedToken})
				return err
			}},
		{kind: errs.Unauthorized, method: "POST", target: "/tags", body: `{"app_tag":"new_tag","step":10}`, status: 401, code: 7,
			cmd: []any{"HSET", "new_tag", "step", "10"}, class: "NOAUTH",
			respOwn: "missing admin token: send AUTH <admin_token>", respWhy: "each wire says how to send the token: HTTP a Bearer header, RESP the AUTH command",
			gcode: codes.Unauthenticated, grpcOwn: "missing or wrong admin token: send the metadata authorization: Bearer <admin_token>",
			grpcWhy: "each wire says how to send the token: gRPC in its metadata",
			call: func(ctx context.Context, c idallocv1.IDAllocatorClient, _ *instance) error {
				_, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "new_tag", Step: proto.Int64(10)})
				return err
			}},
		// A token allowed another tag than the one asked for: no ID taken.
		{kind: errs.Forbidden, allocAuth: true, tagToken: true, target: "/alloc?app_tag=test_business",
			status: 403, code: 7, field: "token", cmd: []any{"GET", "test_business"}, class: "NOAUTH",
			call: next("test_business"), gcode: codes.PermissionDenied},
		// A row this build cannot serve (format dated without the settings
		// it needs, as a hand-edited row or another version's may be): a
		// fault, never served in another format.
		{kind: errs.Internal, seed: `INSERT INTO segments (app_tag, step, format) VALUES ('from_newer', 10, 'dated')`,
			target: "/alloc?app_tag=from_newer", status: 500, code: 8, cmd: []any{"GET", "from_newer"}, class: "ERR",
			call: next("from_newer"), gcode: codes.Internal},
		{kind: errs.MethodNotAllowed, method: "DELETE", target: "/alloc?app_tag=test_business", status: 405, code: 9,
			respSkip: "RESP has no methods: a command is served or unknown (unknown_route)",
			grpcSkip: "gRPC has no methods of a route: a call is served or unimplemented"},
		{kind: errs.Exists, method: "POST", target: "/tags", body: `{"app_tag":"test_business","step":10}`, admin: true,
			status: 409, code: 10, field: "app_tag", cmd: []any{"HSET", "test_business", "step", "10"}, auth: true, class: "ERR",
			gcode: codes.AlreadyExists, call: func(ctx context.Context, c idallocv1.IDAllocatorClient, _ *instance) error {
				_, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "test_business", Step: proto.Int64(10)})
				return err
			}},
		{kind: errs.Exhausted, setup: spendTag, target: "/alloc?app_tag=spent", status: 409, code: 10, field: "app_tag",
			cmd: []any{"GET", "spent"}, class: "ERR", call: next("spent"), gcode: codes.ResourceExhausted},
		// resp_code 10 (docs/api.md §11), which §2's table answers 409, with
		// Retry-After until the next period; RESP answers ERR (§6: TRYAGAIN
		// is for resp_codes 3 and 4, and go-redis retries it at once).
		{kind: errs.PeriodExhausted, setup: spendPeriod, target: "/alloc?app_tag=spent_period", status: 409, code: 10, field: "app_tag",
			cmd: []any{"GET", "spent_period"}, class: "ERR",
			respOwn: dated.ErrPeriodExhausted.Error() + " (the next period begins in ",
			respWhy: "RESP has no Retry-After: its words end with when the next period begins",
			call:    next("spent_period"), gcode: codes.ResourceExhausted,
			grpcOwn: dated.ErrPeriodExhausted.Error() + " (the next period begins in ",
			grpcWhy: "its words end with when the next period begins, as RESP's, beside the RetryInfo"},
	}
}

// TestEveryKindOnEveryFrontEnd reaches each kind of the vocabulary by real
// requests to a real instance (the allocator, lease service and snowflake
// source on a SQLite store, served by every front end): HTTP answers the
// contract's status, resp_code, kind and field, with Retry-After on a 503;
// RESP answers the class of docs/api.md §6 and HTTP's msg as its words;
// gRPC the code of §14 with the kind and field in an ErrorInfo and HTTP's
// msg as the status's message. A kind of errs.Kinds with no row fails the
// test.
func TestEveryKindOnEveryFrontEnd(t *testing.T) {
	byKind := map[errs.Kind]row{}
	for _, r := range rows() {
		if _, dup := byKind[r.kind]; dup {
			t.Errorf("kind %q has two rows", r.kind)
		}
		byKind[r.kind] = r
	}
	for _, kind := range errs.Kinds() {
		r, ok := byKind[kind]
		if !ok {
			t.Errorf("kind %q has no row: say how HTTP and RESP reach it, or in skip why they cannot", kind)
			continue
		}
		delete(byKind, kind)
		t.Run(string(kind), func(t *testing.T) {
			if r.skip != "" {
				t.Skip(r.skip)
			}
			t.Parallel()
			in := start(t, r.seed, r.allocAuth)
			if r.setup != nil {
				r.setup(t, in)
			}
			var msg string
			t.Run("HTTP", func(t *testing.T) {
				if r.httpSkip != "" {
					t.Skip(r.httpSkip)
				}
				msg = checkHTTP(t, in, r)
			})
			t.Run("RESP", func(t *testing.T) {
				if r.respSkip != "" {
					t.Skip(r.respSkip)
				}
				checkRESP(t, in, r, msg)
			})
			t.Run("gRPC", func(t *testing.T) {
				if r.grpcSkip != "" {
					t.Skip(r.grpcSkip)
				}
				checkGRPC(t, in, r, msg)
			})
		})
	}
	for kind := range byKind {
		t.Errorf("a row for kind %q, which errs.Kinds does not list", kind)
	}
}

// checkHTTP sends r's request and checks the answer; it returns the msg.
func checkHTTP(t *testing.T, in *instance, r row) string {
	req, err := http.NewRequest(cmp.Or(r.method, http.MethodGet), in.httpURL+r.target, strings.NewReader(in.expand(r.body)))
	if err != nil {
		t.Fatal(err)
	}
	if r.admin {
		req.Header.Set("Authorization", "Bearer "+adminToken)
	}
	if r.tagToken {
		req.Header.Set("Authorization", "Bearer "+in.tagToken)
	}
	res, err := in.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(res.Body)
	_ = res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	switch spec, err := openapitest.Default(); {
	case errors.Is(err, openapitest.ErrOff): // the fast tier: not built in
	case err != nil:
		t.Fatal(err)
	default:
		x := openapitest.Exchange{Request: req, RequestBody: []byte(in.expand(r.body)), Status: res.StatusCode, Header: res.Header, Body: raw}
		if err := spec.Check(x); err != nil {
			t.Errorf("docs/openapi.yaml does not allow the answer: %v", err)
		}
	}
	var body struct {
		RespCode  *int   `json:"resp_code"`
		Msg       string `json:"msg"`
		Kind      string `json:"kind"`
		Field     string `json:"field"`
		RequestID string `json:"request_id"`
	}
	if err := json.Unmarshal(raw, &body); err != nil || body.RespCode == nil {
		t.Fatalf("%s %s: %d %s: want a JSON envelope (%v)", req.Method, r.target, res.StatusCode, raw, err)
	}
	if res.StatusCode != r.status || *body.RespCode != r.code || body.Kind != string(r.kind) || body.Field != r.field {
		t.Errorf("%s %s: %d %s; want status %d, resp_code %d, kind %q, field %q",
			req.Method, r.target, res.StatusCode, raw, r.status, r.code, r.kind, r.field)
	}
	if body.Msg == "" {
		t.Errorf("%s %s: %s: no msg", req.Method, r.target, raw)
	}
	if got, want := res.Header.Get("Retry-After") != "", res.StatusCode == http.StatusServiceUnavailable || r.kind == errs.PeriodExhausted; got != want {
		t.Errorf("%s %s: status %d with Retry-After %q: want it on every 503 and a spent period, and only there",
			req.Method, r.target, res.StatusCode, res.Header.Get("Retry-After"))
	}
	if r.kind == errs.Internal && body.RequestID == "" {
		t.Errorf("%s %s: %s: an internal error without its request_id", req.Method, r.target, raw)
	}
	return body.Msg
}

// checkRESP sends r's command on a new connection and checks the error:
// its class, and its words against msg, HTTP's.
func checkRESP(t *testing.T, in *instance, r row, msg string) {
	// No retries: go-redis retries a TRYAGAIN error by default.
	opts := &redis.Options{Addr: in.respAddr, Protocol: 2, MaxRetries: -1}
	if r.auth {
		opts.Password = adminToken
	}
	if r.tagToken {
		opts.Password = in.tagToken
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	err := rdb.Do(context.Background(), r.cmd...).Err()
	var rerr redis.Error
	if !errors.As(err, &rerr) {
		t.Fatalf("%q: got %v, want a RESP error", r.cmd, err)
	}
	class, words, _ := strings.Cut(rerr.Error(), " ")
	if class != r.class {
		t.Errorf("%q: class %q (%q), want %q", r.cmd, class, rerr.Error(), r.class)
	}
	switch {
	case r.respOwn != "":
		if !strings.HasPrefix(words, r.respOwn) {
			t.Errorf("%q: words %q, want RESP's own, beginning %q (%s)", r.cmd, words, r.respOwn, r.respWhy)
		}
	case words != msg:
		t.Errorf("%q: words %q, want HTTP's msg %q", r.cmd, words, msg)
	}
}

// checkGRPC makes r's call on a new connection and checks the status:
// its code, its ErrorInfo (the kind, the field), a RetryInfo on every
// UNAVAILABLE and a spent period and only there, and its words against
// msg, HTTP's.
func checkGRPC(t *testing.T, in *instance, r row, msg string) {
	cc, err := grpc.NewClient(in.grpcAddr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer cc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	switch {
	case r.admin || r.auth:
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+adminToken)
	case r.tagToken:
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+in.tagToken)
	}
	st, ok := status.FromError(r.call(ctx, idallocv1.NewIDAllocatorClient(cc), in))
	if !ok || st.Code() == codes.OK {
		t.Fatalf("got %v, want a status", st.Err())
	}
	var kind, field string
	var retry bool
	for _, d := range st.Details() {
		switch d := d.(type) {
		case *errdetails.ErrorInfo:
			kind, field = d.GetReason(), d.GetMetadata()["field"]
		case *errdetails.RetryInfo:
			retry = d.GetRetryDelay().AsDuration() > 0
		}
	}
	if st.Code() != r.gcode || kind != string(r.kind) || field != r.field {
		t.Errorf("got %v, kind %q, field %q (%s); want %v, kind %q, field %q", st.Code(), kind, field, st.Message(), r.gcode, r.kind, r.field)
	}
	if want := st.Code() == codes.Unavailable || r.kind == errs.PeriodExhausted; retry != want {
		t.Errorf("%v with a RetryInfo: %v; want one on every UNAVAILABLE and a spent period, and only there", st.Code(), retry)
	}
	switch {
	case r.grpcOwn != "":
		if !strings.HasPrefix(st.Message(), r.grpcOwn) {
			t.Errorf("words %q, want gRPC's own, beginning %q (%s)", st.Message(), r.grpcOwn, r.grpcWhy)
		}
	case st.Message() != msg:
		t.Errorf("words %q, want HTTP's msg %q", st.Message(), msg)
	}
}

// instance is one idalloc instance as main wires it, on a fresh SQLite
// database whose segment calls can be stopped: the allocator, the lease
// service with a keeper and its snowflake source on a settable clock, and
// both front ends sharing them, with an admin token, served on ports of
// 127.0.0.1. The keeper is not started: the rows that need a lease start
// it.
type instance struct {
	db     storetest.DB
	store  *storefault.Stoppable
	seg    *segment.Allocator
	leases *workerlease.Service
	keeper *workerlease.Keeper
	flake  *leased.Source
	clock  *testclock.Clock
	// lease is the one a setup took, for the request's {worker_id} and
	// {token}.
	lease workerlease.Lease
	// tagToken is a per-tag token of tokenTag, made at start.
	tagToken string

	client   *http.Client
	httpURL  string
	respAddr string
	grpcAddr string
}

// tokenTag is the one tag the instance's per-tag token is allowed.
const tokenTag = "token_tag"

// start builds an instance, after running seed on its database, with
// alloc_auth as given, and stops it at t's cleanup in main's order: front
// ends, guard, keeper, allocator, store.
func start(t *testing.T, seed string, allocAuth bool) *instance {
	t.Helper()
	ctx := context.Background()
	in := &instance{db: storetest.SQLite().NewDB(t), clock: testclock.New(time.Now())}
	if seed != "" {
		in.db.Exec(t, seed)
	}
	in.store = &storefault.Stoppable{Store: in.db.Open(t)}
	var err error
	if in.seg, err = segment.New(ctx, in.store, segment.Config{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.seg.Close(ctx) })
	if in.leases, err = workerlease.NewService(in.store, workerlease.Config{MaxWorkerID: maxWorkerID, Holder: "kindtest"}); err != nil {
		t.Fatal(err)
	}
	if in.keeper, err = workerlease.NewKeeper(workerlease.KeeperConfig{Service: in.leases, Now: in.clock.Now}); err != nil {
		t.Fatal(err)
	}
	layout, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	if in.flake, err = leased.New(in.keeper, layout, snowflake.Settings{Now: in.clock.Now, Sleep: in.clock.Sleep}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = in.keeper.Close(ctx, in.flake.LastTimestampMS()) })

	guard, err := access.NewGuard(ctx, in.store, access.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = guard.Close() })
	admin, err := access.NewAdmin(in.store, segment.ValidTag, guard, adminToken)
	if err != nil {
		t.Fatal(err)
	}
	if in.tagToken, _, err = admin.Create(ctx, "kindtest", access.NewToken{Name: "kindtest", AppTags: []string{tokenTag}}); err != nil {
		t.Fatal(err)
	}

	hs, err := server.New(server.Config{AdminToken: adminToken, AllocAuth: allocAuth},
		server.Deps{Segments: in.seg, Store: in.store, Snowflake: in.flake, Leases: in.leases, Guard: guard, Tokens: admin})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hs.Close() })
	in.httpURL = "http://" + frontendtest.Serve(t, hs)
	in.client = &http.Client{Transport: &http.Transport{}}
	t.Cleanup(in.client.CloseIdleConnections)
	rs, err := resp.New(resp.Config{AdminToken: adminToken, AllocAuth: allocAuth},
		resp.Deps{Segments: in.seg, Snowflake: in.flake, Guard: guard, Audit: admin})
	if err != nil {
		t.Fatal(err)
	}
	in.respAddr = frontendtest.Serve(t, rs)
	gs, err := grpcapi.New(grpcapi.Config{AdminToken: adminToken, AllocAuth: allocAuth},
		grpcapi.Deps{Segments: in.seg, Store: in.store, Snowflake: in.flake, Leases: in.leases, Guard: guard, Audit: admin})
	if err != nil {
		t.Fatal(err)
	}
	in.grpcAddr = frontendtest.Serve(t, gs)
	return in
}

// expand puts the setup's lease into a request body.
func (in *instance) expand(body string) string {
	return strings.NewReplacer("{worker_id}", strconv.FormatInt(in.lease.WorkerID, 10), "{token}", in.lease.Token).Replace(body)
}

// acquire takes a worker ID as another instance would.
func (in *instance) acquire(t *testing.T) workerlease.Lease {
	t.Helper()
	l, err := in.leases.Acquire(context.Background(), "", "another instance")
	if err != nil {
		t.Fatal(err)
	}
	return l
}
