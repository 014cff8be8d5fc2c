package grpcapi

import (
	"context"
	"errors"
	"net"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	reflectionpb "google.golang.org/grpc/reflection/grpc_reflection_v1"
	"google.golang.org/protobuf/proto"

	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
)

// healthOf asks the health service about each of its services.
func healthOf(t *testing.T, hc healthpb.HealthClient) [2]healthpb.HealthCheckResponse_ServingStatus {
	t.Helper()
	var out [2]healthpb.HealthCheckResponse_ServingStatus
	for i, svc := range services {
		r, err := hc.Check(testCtx(t), &healthpb.HealthCheckRequest{Service: svc})
		if err != nil {
			t.Fatalf("Check(%q): %v", svc, err)
		}
		out[i] = r.GetStatus()
	}
	return out
}

var (
	serving    = [2]healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_SERVING, healthpb.HealthCheckResponse_SERVING}
	notServing = [2]healthpb.HealthCheckResponse_ServingStatus{healthpb.HealthCheckResponse_NOT_SERVING, healthpb.HealthCheckResponse_NOT_SERVING}
)

// TestHealthWhileDraining: the health service answers SERVING for "" and
// the service, NOT_SERVING as soon as the drain begins, while calls are
// still served; when the drain ends, a stream still open ends
// UNAVAILABLE, kind draining, and Serve returns.
func TestHealthWhileDraining(t *testing.T) {
	in := start(t, options{drain: time.Second})
	cc := in.dial(t)
	hc, c, ctx := healthpb.NewHealthClient(cc), idallocv1.NewIDAllocatorClient(cc), testCtx(t)
	if got := healthOf(t, hc); got != serving {
		t.Errorf("serving: got %v, want %v", got, serving)
	}
	if _, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "order", Step: proto.Int64(10)}); err != nil {
		t.Fatal(err)
	}
	stream, err := c.StreamRanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&idallocv1.StreamRangesRequest{AppTag: "order"}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}

	in.stop()
	deadline := time.Now().Add(900 * time.Millisecond)
	for healthOf(t, hc) != notServing {
		if time.Now().After(deadline) {
			t.Fatalf("draining: got %v, want %v", healthOf(t, hc), notServing)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: "order"}); err != nil {
		t.Errorf("Next while draining: %v", err)
	}
	_, err = stream.Recv() // ends when the drain does
	r := wantRefusal(t, "the stream at the drain's end", err, codes.Unavailable, "draining")
	if r.retry <= 0 {
		t.Errorf("no retry delay: %+v", r)
	}
	select {
	case err := <-in.served:
		if err != nil {
			t.Errorf("Serve: %v", err)
		}
		in.served <- err
	case <-time.After(15 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
}

// TestHealthStoreDown: the store unreachable and nothing buffered is
// NOT_SERVING; IDs buffered keep it SERVING (/health's "degraded").
func TestHealthStoreDown(t *testing.T) {
	down := errors.New("store down")
	var storeDown atomic.Bool
	in := start(t, options{ping: func(context.Context) error {
		if storeDown.Load() {
			return down
		}
		return nil
	}, cfg: Config{HealthInterval: 20 * time.Millisecond}})
	hc := healthpb.NewHealthClient(in.dial(t))
	wait := func(want [2]healthpb.HealthCheckResponse_ServingStatus) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for healthOf(t, hc) != want {
			if time.Now().After(deadline) {
				t.Fatalf("got %v, want %v", healthOf(t, hc), want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	storeDown.Store(true)
	wait(notServing)
	storeDown.Store(false)
	wait(serving)
	c, ctx := in.client(t), testCtx(t)
	if _, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "order", Step: proto.Int64(100)}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: "order"}); err != nil {
		t.Fatal(err)
	}
	storeDown.Store(true)
	time.Sleep(100 * time.Millisecond) // several checks
	if got := healthOf(t, hc); got != serving {
		t.Errorf("store down, IDs buffered: got %v, want %v", got, serving)
	}
}

// TestReflection: server reflection lists the service, so grpcurl needs
// no .proto.
func TestReflection(t *testing.T) {
	in := start(t, options{})
	rc, err := reflectionpb.NewServerReflectionClient(in.dial(t)).ServerReflectionInfo(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.Send(&reflectionpb.ServerReflectionRequest{MessageRequest: &reflectionpb.ServerReflectionRequest_ListServices{}}); err != nil {
		t.Fatal(err)
	}
	r, err := rc.Recv()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range r.GetListServicesResponse().GetService() {
		names = append(names, s.GetName())
	}
	for _, want := range []string{ServiceName, "grpc.health.v1.Health"} {
		if !strings.Contains(strings.Join(names, " "), want) {
			t.Errorf("services %v, want %s among them", names, want)
		}
	}
}

// TestMessageSizeLimit: a request above 64 KiB is refused before it is
// read, RESOURCE_EXHAUSTED, and the connection goes on serving.
func TestMessageSizeLimit(t *testing.T) {
	in := start(t, options{})
	c, ctx := in.client(t), testCtx(t)
	_, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "big", Step: proto.Int64(10), Description: strings.Repeat("x", maxRecvMsgSize)})
	if got := answerOf(t, err); got.code != codes.ResourceExhausted {
		t.Errorf("an oversize message: got %+v, want ResourceExhausted", got)
	}
	if _, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "small", Step: proto.Int64(10)}); err != nil {
		t.Errorf("the next call: %v", err)
	}
}

// TestConnectionCap: at grpc_max_conns an idle connection is closed for
// a newcomer; with every connection in a call (a stream open), a newcomer
// is sent a GOAWAY, which the client reports as UNAVAILABLE.
func TestConnectionCap(t *testing.T) {
	in := start(t, options{cfg: Config{MaxConns: 1}})
	ctx := testCtx(t)
	if _, err := in.client(t).CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "order", Step: proto.Int64(10)}); err != nil {
		t.Fatal(err) // that connection is idle now
	}
	busy := in.client(t)
	if _, err := busy.Next(ctx, &idallocv1.NextRequest{AppTag: "order"}); err != nil {
		t.Fatalf("a newcomer at the cap, with one idle connection: %v", err)
	}
	stream, err := busy.StreamRanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&idallocv1.StreamRangesRequest{AppTag: "order"}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	// gRPC retries an unprocessed call on a new connection by itself,
	// refused again, until it gives up.
	_, err = in.client(t).Next(ctx, &idallocv1.NextRequest{AppTag: "order"})
	if got := answerOf(t, err); got.code != codes.Unavailable {
		t.Errorf("a newcomer with every connection busy: got %+v, want Unavailable", got)
	}
	if err := stream.Send(&idallocv1.StreamRangesRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Errorf("the busy connection after the refusal: %v", err)
	}
}

// TestGeneratedCodeIsCurrent: the committed Go code of the schema is what
// scripts/gen-proto.sh generates from it.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not installed (apt-get install protobuf-compiler): the generated code is not checked")
	}
	if testing.Short() {
		t.Skip("-short: the generators are not built")
	}
	out, err := exec.Command("../scripts/gen-proto.sh", "-check").CombinedOutput()
	var ee *exec.ExitError
	if errors.As(err, &ee) && ee.ExitCode() == 2 {
		t.Skipf("%s", out) // another protoc than the pinned one
	}
	if err != nil {
		t.Errorf("scripts/gen-proto.sh -check: %v\n%s", err, out)
	}
}

// TestHandshakeStuckIsClosedFirst: at the cap a connection that never
// sends its HTTP/2 preface is the one closed for a newcomer.
func TestHandshakeStuckIsClosedFirst(t *testing.T) {
	in := start(t, options{cfg: Config{MaxConns: 1}})
	raw, err := net.Dial("tcp", in.addr)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	time.Sleep(300 * time.Millisecond) // past the Limiter's 250 ms
	if _, err := in.client(t).Snowflake(testCtx(t), &idallocv1.SnowflakeRequest{}); err != nil {
		t.Errorf("a newcomer at the cap, with one connection stuck in its handshake: %v", err)
	}
	_ = raw.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64)
	for {
		if _, err := raw.Read(buf); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				t.Error("the stuck connection is still open")
			}
			return
		}
	}
}
