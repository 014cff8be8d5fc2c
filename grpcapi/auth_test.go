package grpcapi

import (
	"context"
	"net"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/peer"
	"google.golang.org/protobuf/proto"

	"github.com/idalloc/idalloc/access"
	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
)

const adminToken = "s3cret-admin-token"

// TestAdminToken: with admin_token set, the admin calls and the listings
// need it in the metadata, from loopback too; the ID calls do not.
func TestAdminToken(t *testing.T) {
	in := start(t, options{cfg: Config{AdminToken: adminToken}})
	c, ctx := in.client(t), testCtx(t)
	create := func(ctx context.Context, tag string) error {
		_, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: tag, Step: proto.Int64(10)})
		return err
	}
	wantRefusal(t, "no token", create(ctx, "a"), codes.Unauthenticated, "unauthorized")
	wantRefusal(t, "a wrong token", create(bearer(ctx, "nope"), "a"), codes.Unauthenticated, "unauthorized")
	wantRefusal(t, "another scheme", create(metadata.AppendToOutgoingContext(ctx, "authorization", "Basic "+adminToken), "a"),
		codes.Unauthenticated, "unauthorized")
	if err := create(metadata.AppendToOutgoingContext(ctx, "authorization", "bearer "+adminToken), "a"); err != nil {
		t.Errorf("the admin token, scheme in lower case: %v", err)
	}
	_, err := c.ListTags(ctx, &idallocv1.ListTagsRequest{})
	wantRefusal(t, "ListTags without the token", err, codes.Unauthenticated, "unauthorized")
	_, err = c.AcquireWorkerID(ctx, &idallocv1.AcquireWorkerIDRequest{})
	wantRefusal(t, "AcquireWorkerID without the token", err, codes.Unauthenticated, "unauthorized")
	if _, err := c.GetTag(bearer(ctx, adminToken), &idallocv1.GetTagRequest{AppTag: "a"}); err != nil {
		t.Errorf("GetTag with the token: %v", err)
	}
	if _, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: "a"}); err != nil {
		t.Errorf("Next needs no token with alloc_auth off: %v", err)
	}
}

// TestLoopbackOnly: without admin_token, an admin call from another host
// is refused.
func TestLoopbackOnly(t *testing.T) {
	s := &Server{}
	for _, tt := range []struct {
		addr string
		want error
	}{
		{"127.0.0.1:5000", nil},
		{"[::1]:5000", nil},
		{"[::ffff:127.0.0.1]:5000", nil},
		{"10.0.0.7:5000", errLoopbackOnly},
	} {
		addr, _ := net.ResolveTCPAddr("tcp", tt.addr)
		ctx := peer.NewContext(context.Background(), &peer.Peer{Addr: addr})
		if got := s.authorizeAdmin(ctx); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.addr, got, tt.want)
		}
	}
	if got := s.authorizeAdmin(context.Background()); got != errLoopbackOnly {
		t.Errorf("no peer: got %v, want errLoopbackOnly", got)
	}
}

// TestAllocAuth: with alloc_auth on, every ID call needs a token allowed
// its tag (snowflake IDs, any valid token), checked before anything is
// taken; a stream checks it at every batch.
func TestAllocAuth(t *testing.T) {
	in := start(t, options{cfg: Config{AllocAuth: true}})
	c, ctx := in.client(t), testCtx(t)
	for _, tag := range []string{"order", "invoice"} {
		if _, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: tag, Step: proto.Int64(10)}); err != nil {
			t.Fatal(err)
		}
	}
	tok, _, err := in.admin.Create(ctx, "test", access.NewToken{Name: "orders-svc", AppTags: []string{"order"}})
	if err != nil {
		t.Fatal(err)
	}
	next := func(ctx context.Context, tag string) error {
		_, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: tag})
		return err
	}
	if r := wantRefusal(t, "no token", next(ctx, "order"), codes.Unauthenticated, "unauthorized"); r.field != "token" {
		t.Errorf("field %q, want token", r.field)
	}
	wantRefusal(t, "an unknown token", next(bearer(ctx, "x"+tok), "order"), codes.Unauthenticated, "unauthorized")
	wantRefusal(t, "another tag", next(bearer(ctx, tok), "invoice"), codes.PermissionDenied, "forbidden")
	wantRefusal(t, "an unknown tag", next(bearer(ctx, tok), "nope"), codes.PermissionDenied, "forbidden")
	_, err = c.NextRanges(ctx, &idallocv1.NextRangesRequest{AppTag: "order"})
	wantRefusal(t, "NextRanges without a token", err, codes.Unauthenticated, "unauthorized")
	_, err = c.Snowflake(ctx, &idallocv1.SnowflakeRequest{})
	wantRefusal(t, "Snowflake without a token", err, codes.Unauthenticated, "unauthorized")

	got, err := c.Next(bearer(ctx, tok), &idallocv1.NextRequest{AppTag: "order"})
	if err != nil || got.GetIds()[0] != 1 {
		t.Errorf("Next with the token: %v, %v; want ID 1, none taken by the refusals", got, err)
	}
	if _, err := c.Snowflake(bearer(ctx, tok), &idallocv1.SnowflakeRequest{}); err != nil {
		t.Errorf("Snowflake with a token: %v", err)
	}

	stream, err := c.StreamRanges(bearer(ctx, tok))
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&idallocv1.StreamRangesRequest{AppTag: "order", Count: 5}); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != nil {
		t.Fatal(err)
	}
	if err := in.admin.Revoke(ctx, "test", "orders-svc"); err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&idallocv1.StreamRangesRequest{}); err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	wantRefusal(t, "a batch after the revocation", err, codes.Unauthenticated, "unauthorized")
}
