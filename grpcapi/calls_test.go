package grpcapi

import (
	"io"
	"slices"
	"strconv"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/proto"

	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
)

// TestSegmentCalls takes segment IDs by every call, over a real listener:
// Next, NextRanges and a StreamRanges of three batches, each continuing
// where the last ended, as one instance's IDs do.
func TestSegmentCalls(t *testing.T) {
	in := start(t, options{})
	c, ctx := in.client(t), testCtx(t)
	if _, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "order", Step: proto.Int64(1000)}); err != nil {
		t.Fatal(err)
	}
	one, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: "order"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(one.GetIds(), []int64{1}) || len(one.GetIdsStr()) != 0 || one.GetPeriodEndsInMs() != 0 {
		t.Errorf("Next: got %v, want ids [1] alone", one)
	}
	three, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: "order", Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(three.GetIds(), []int64{2, 3, 4}) {
		t.Errorf("Next count 3: got %v, want [2 3 4]", three.GetIds())
	}
	rs, err := c.NextRanges(ctx, &idallocv1.NextRangesRequest{AppTag: "order", Count: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := rangesOf(rs); !slices.Equal(got, [][2]int64{{5, 14}}) {
		t.Errorf("NextRanges: got %v, want [[5 14]]", got)
	}

	stream, err := c.StreamRanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := [][2]int64{{15, 114}, {115, 214}, {215, 219}}
	for i, req := range []*idallocv1.StreamRangesRequest{
		{AppTag: "order", Count: 100}, {}, {AppTag: "order", Count: 5}, // a later message may leave out the tag and count
	} {
		if err := stream.Send(req); err != nil {
			t.Fatal(err)
		}
		got, err := stream.Recv()
		if err != nil {
			t.Fatalf("batch %d: %v", i, err)
		}
		if !slices.Equal(rangesOf(got), want[i:i+1]) {
			t.Errorf("batch %d: got %v, want %v", i, rangesOf(got), want[i])
		}
	}
	if err := stream.Send(&idallocv1.StreamRangesRequest{AppTag: "other"}); err != nil {
		t.Fatal(err)
	}
	_, err = stream.Recv()
	if r := wantRefusal(t, "another tag on the stream", err, codes.InvalidArgument, "bad_request"); r.field != "app_tag" {
		t.Errorf("field %q, want app_tag", r.field)
	}

	// The client's half-close ends a stream without error.
	stream, err = c.StreamRanges(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.Send(&idallocv1.StreamRangesRequest{AppTag: "order"}); err != nil {
		t.Fatal(err)
	}
	if got, err := stream.Recv(); err != nil || !slices.Equal(rangesOf(got), [][2]int64{{220, 220}}) {
		t.Errorf("one ID: got %v, %v; want [[220 220]]", got, err)
	}
	if err := stream.CloseSend(); err != nil {
		t.Fatal(err)
	}
	if _, err := stream.Recv(); err != io.EOF {
		t.Errorf("after the half-close: %v, want io.EOF", err)
	}
}

func rangesOf(r *idallocv1.NextRangesResponse) [][2]int64 {
	var out [][2]int64
	for _, rg := range r.GetRanges() {
		out = append(out, [2]int64{rg.GetFirst(), rg.GetLast()})
	}
	return out
}

// TestDatedNext holds Next to /alloc's shapes for dated tags (docs/api.md
// §11): a numeric dated tag's IDs in ids and ids_str, a text one's in
// ids_str only, each with period_ends_in_ms.
func TestDatedNext(t *testing.T) {
	in := start(t, options{})
	c, ctx := in.client(t), testCtx(t)
	for _, tag := range []*idallocv1.CreateTagRequest{
		{AppTag: "num", Format: "dated", Period: "year"},
		{AppTag: "ord", Format: "dated", Period: "year", Prefix: "ORD", Separator: "-", Length: 4},
	} {
		if _, err := c.CreateTag(ctx, tag); err != nil {
			t.Fatal(err)
		}
	}
	num, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: "num", Count: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(num.GetIds()) != 2 || len(num.GetIdsStr()) != 2 || num.GetIdsStr()[1] != strconv.FormatInt(num.GetIds()[1], 10) ||
		num.GetPeriodEndsInMs() <= 0 {
		t.Errorf("numeric dated: got %v, want 2 ids, the same as ids_str, and period_ends_in_ms", num)
	}
	for _, count := range []int64{0, 2} {
		ord, err := c.Next(ctx, &idallocv1.NextRequest{AppTag: "ord", Count: count})
		if err != nil {
			t.Fatal(err)
		}
		if len(ord.GetIds()) != 0 || len(ord.GetIdsStr()) != max(int(count), 1) || ord.GetPeriodEndsInMs() <= 0 {
			t.Errorf("text dated, count %d: got %v, want ids_str alone", count, ord)
		}
		for _, s := range ord.GetIdsStr() {
			if len(s) != len("ORD-2026-0001") || s[:4] != "ORD-" {
				t.Errorf("text dated ID %q, want ORD-yyyy-nnnn", s)
			}
		}
	}
	_, err = c.NextRanges(ctx, &idallocv1.NextRangesRequest{AppTag: "ord", Count: 2})
	if r := wantRefusal(t, "ranges of a dated tag", err, codes.InvalidArgument, "bad_request"); r.field != "as" {
		t.Errorf("field %q, want as (the words /alloc's)", r.field)
	}
}

// TestSnowflakeCalls takes snowflake IDs and decodes one.
func TestSnowflakeCalls(t *testing.T) {
	in := start(t, options{})
	c, ctx := in.client(t), testCtx(t)
	got, err := c.Snowflake(ctx, &idallocv1.SnowflakeRequest{Count: 3})
	if err != nil {
		t.Fatal(err)
	}
	ids := got.GetIds()
	if len(ids) != 3 || len(got.GetIdsStr()) != 3 || !slices.IsSorted(ids) || ids[0] == ids[1] {
		t.Fatalf("Snowflake count 3: got %v, want 3 increasing IDs with their text", got)
	}
	for i, id := range ids {
		if got.GetIdsStr()[i] != strconv.FormatInt(id, 10) {
			t.Errorf("ids_str[%d] = %q, want %d", i, got.GetIdsStr()[i], id)
		}
	}
	d, err := c.DecodeSnowflake(ctx, &idallocv1.DecodeSnowflakeRequest{Id: ids[0]})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := in.srv.flake.Layout().Decompose(ids[0])
	if d.GetId() != ids[0] || d.GetIdStr() != got.GetIdsStr()[0] || d.GetTimestampMs() != p.TimestampMS ||
		d.GetWorkerId() != p.WorkerID || d.GetSequence() != p.Sequence || d.GetTime() != formatTime(p.Time) {
		t.Errorf("DecodeSnowflake: got %v, want %+v", d, p)
	}
	_, err = c.DecodeSnowflake(ctx, &idallocv1.DecodeSnowflakeRequest{Id: -1})
	wantRefusal(t, "a negative ID", err, codes.InvalidArgument, "bad_request")
}

// TestTagCalls creates, reads, lists by pages and updates tags.
func TestTagCalls(t *testing.T) {
	in := start(t, options{})
	c, ctx := in.client(t), testCtx(t)
	created, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "tenant-1", Step: proto.Int64(500), Start: proto.Int64(100), Description: "one"})
	if err != nil {
		t.Fatal(err)
	}
	if created.GetAppTag() != "tenant-1" || created.GetStep() != 500 || created.GetStart() != 100 || created.GetFormat() != "sequential" ||
		created.GetDescription() != "one" {
		t.Errorf("CreateTag: got %v", created)
	}
	for _, tag := range []string{"tenant-2", "tenant-3", "zeta"} {
		if _, err := c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: tag, Step: proto.Int64(10)}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "zeta", Step: proto.Int64(10)})
	wantRefusal(t, "a tag that exists", err, codes.AlreadyExists, "exists")
	_, err = c.CreateTag(ctx, &idallocv1.CreateTagRequest{AppTag: "nostep"})
	if r := wantRefusal(t, "no step", err, codes.InvalidArgument, "bad_request"); r.field != "step" {
		t.Errorf("field %q, want step", r.field)
	}

	got, err := c.GetTag(ctx, &idallocv1.GetTagRequest{AppTag: "tenant-1"})
	if err != nil {
		t.Fatal(err)
	}
	if got.GetAppTag() != "tenant-1" || got.GetStep() != 500 || got.GetStart() != 100 || got.GetUpdateTime() == "" {
		t.Errorf("GetTag: got %v", got)
	}
	_, err = c.GetTag(ctx, &idallocv1.GetTagRequest{AppTag: "tenant-"})
	wantRefusal(t, "GetTag of a prefix", err, codes.NotFound, "unknown_tag")

	var pages [][]string
	for after := ""; ; {
		page, err := c.ListTags(ctx, &idallocv1.ListTagsRequest{Prefix: "tenant-", After: after, Limit: 2})
		if err != nil {
			t.Fatal(err)
		}
		if page.GetTotal() != 3 {
			t.Errorf("total %d, want 3", page.GetTotal())
		}
		var names []string
		for _, tg := range page.GetTags() {
			names = append(names, tg.GetAppTag())
		}
		pages = append(pages, names)
		if after = page.GetNext(); after == "" {
			break
		}
	}
	if want := [][]string{{"tenant-1", "tenant-2"}, {"tenant-3"}}; !slices.EqualFunc(pages, want, slices.Equal) {
		t.Errorf("pages %v, want %v", pages, want)
	}
	_, err = c.ListTags(ctx, &idallocv1.ListTagsRequest{Limit: 10_001})
	if r := wantRefusal(t, "limit above 10,000", err, codes.InvalidArgument, "bad_request"); r.field != "limit" {
		t.Errorf("field %q, want limit", r.field)
	}

	upd, err := c.UpdateTag(ctx, &idallocv1.UpdateTagRequest{AppTag: "tenant-1", Step: proto.Int64(2000), Description: proto.String("two")})
	if err != nil {
		t.Fatal(err)
	}
	if upd.GetStep() != 2000 || upd.GetDescription() != "two" {
		t.Errorf("UpdateTag: got %v", upd)
	}
	_, err = c.UpdateTag(ctx, &idallocv1.UpdateTagRequest{AppTag: "tenant-1"})
	wantRefusal(t, "an update of nothing", err, codes.InvalidArgument, "bad_request")
	_, err = c.UpdateTag(ctx, &idallocv1.UpdateTagRequest{AppTag: "nope", Step: proto.Int64(5)})
	wantRefusal(t, "an unknown tag", err, codes.NotFound, "unknown_tag")

	entries, err := in.admin.Log(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 5 || entries[0].Action != "tag.update" || entries[0].Subject != "tenant-1" ||
		entries[0].Caller[:len("loopback 127.0.0.1:")] != "loopback 127.0.0.1:" {
		t.Errorf("audit log: got %+v, want 4 tag.create and a tag.update by a loopback caller", entries)
	}
}

// TestWorkerIDCalls acquires, renews and releases a worker lease.
func TestWorkerIDCalls(t *testing.T) {
	in := start(t, options{})
	c, ctx := in.client(t), testCtx(t)
	l, err := c.AcquireWorkerID(ctx, &idallocv1.AcquireWorkerIDRequest{Cluster: proto.String("billing")})
	if err != nil {
		t.Fatal(err)
	}
	if l.GetCluster() != "billing" || len(l.GetToken()) != 22 || l.GetLeaseMs() <= 0 || l.GetExpiresAt() == "" {
		t.Fatalf("AcquireWorkerID: got %v", l)
	}
	r, err := c.RenewWorkerID(ctx, &idallocv1.RenewWorkerIDRequest{Cluster: proto.String("billing"), WorkerId: l.GetWorkerId(),
		Token: l.GetToken(), LastTimestampMs: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.GetWorkerId() != l.GetWorkerId() || r.GetToken() != "" {
		t.Errorf("RenewWorkerID: got %v, want worker %d without a token", r, l.GetWorkerId())
	}
	if _, err := c.ReleaseWorkerID(ctx, &idallocv1.ReleaseWorkerIDRequest{Cluster: proto.String("billing"), WorkerId: l.GetWorkerId(),
		Token: l.GetToken()}); err != nil {
		t.Fatal(err)
	}
	_, err = c.RenewWorkerID(ctx, &idallocv1.RenewWorkerIDRequest{Cluster: proto.String("billing"), WorkerId: l.GetWorkerId(), Token: l.GetToken()})
	wantRefusal(t, "a renew after the release", err, codes.FailedPrecondition, "not_assigned")
	_, err = c.AcquireWorkerID(ctx, &idallocv1.AcquireWorkerIDRequest{Cluster: proto.String("")})
	if r := wantRefusal(t, `cluster ""`, err, codes.InvalidArgument, "bad_request"); r.field != "cluster" {
		t.Errorf("field %q, want cluster", r.field)
	}
}
