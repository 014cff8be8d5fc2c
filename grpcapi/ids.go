package grpcapi

import (
	"context"
	"errors"
	"io"
	"strconv"
	"time"

	"google.golang.org/grpc"

	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/snowflake"
)

// countOf checks a request's count by limit; 0 means one.
func countOf(n int64, limit segment.CountLimit) (int, error) {
	if n == 0 {
		return 1, nil
	}
	if n < 0 || n > int64(limit.Max()) {
		return 0, limit.Err()
	}
	return int(n), nil
}

// Next serves one ID of a tag or count of them, as GET /alloc
// (docs/api.md §2): every format's IDs as numbers in ids, a dated tag's
// as text in ids_str too, or only, when they are text (§11).
func (s *Server) Next(ctx context.Context, req *idallocv1.NextRequest) (*idallocv1.NextResponse, error) {
	tag := req.GetAppTag()
	if err := s.allowTag(ctx, tag); err != nil {
		return nil, s.statusOf("Next", err)
	}
	n, err := countOf(req.GetCount(), s.count)
	if err != nil {
		return nil, s.statusOf("Next", err)
	}
	ids := make([]int64, n)
	if n == 1 {
		ids[0], err = s.seg.Next(ctx, tag)
	} else {
		err = s.seg.NextN(ctx, tag, ids)
	}
	if errors.Is(err, segment.ErrTextOnly) {
		return s.nextText(ctx, tag, ids)
	}
	if err != nil {
		return nil, s.statusOf("Next", err)
	}
	out := &idallocv1.NextResponse{Ids: ids}
	if f := s.seg.DatedFormat(tag); f != nil {
		out.IdsStr = make([]string, n)
		for i, id := range ids {
			out.IdsStr[i] = strconv.FormatInt(id, 10)
		}
		stamp, _, _ := f.ParseID(ids[0])
		out.PeriodEndsInMs = periodEndsIn(f, stamp, s.seg.Now())
	}
	return out, nil
}

// nextText serves Next for a tag whose IDs are text, with ids as the
// batch's room: ids_str only, one period's.
func (s *Server) nextText(ctx context.Context, tag string, ids []int64) (*idallocv1.NextResponse, error) {
	batch, err := s.seg.NextTextN(ctx, tag, ids)
	if err != nil {
		return nil, s.statusOf("Next", err)
	}
	out := &idallocv1.NextResponse{IdsStr: make([]string, batch.Len())}
	var b []byte
	for i := range batch.Len() {
		b = batch.AppendID(b[:0], i)
		out.IdsStr[i] = string(b)
	}
	if f := s.seg.DatedFormat(tag); f != nil {
		out.PeriodEndsInMs = periodEndsIn(f, textStamp(f, out.IdsStr[0]), s.seg.Now())
	}
	return out, nil
}

// periodEndsIn is how long, in milliseconds by this instance's clock,
// until the period of stamp ends; 0 for a stamp that names none. From the
// IDs' stamp, not from now: a boundary may have passed since they were
// issued.
func periodEndsIn(f *dated.Format, stamp int64, now time.Time) int64 {
	k, err := f.KeyOfStamp(stamp)
	if err != nil {
		return 0
	}
	return max(k.End.Sub(now).Milliseconds(), 0)
}

// textStamp reads the stamp of a dated text ID: its digits after the
// prefix and separator.
func textStamp(f *dated.Format, id string) int64 {
	from := 0
	if f.Prefix() != "" { // "prefix sep stamp sep seq"; without a prefix, "stamp sep seq"
		from = len(f.Prefix()) + len(f.Separator())
	}
	var stamp int64
	for _, c := range []byte(id[from:min(from+f.Period().Digits(), len(id))]) {
		stamp = stamp*10 + int64(c-'0')
	}
	return stamp
}

// NextRanges serves count IDs as runs of consecutive numbers, as GET
// /alloc?as=ranges (docs/api.md §2): sequential and fixed_length tags only.
func (s *Server) NextRanges(ctx context.Context, req *idallocv1.NextRangesRequest) (*idallocv1.NextRangesResponse, error) {
	tag := req.GetAppTag()
	if err := s.allowTag(ctx, tag); err != nil {
		return nil, s.statusOf("NextRanges", err)
	}
	n, err := countOf(req.GetCount(), s.ranges)
	if err != nil {
		return nil, s.statusOf("NextRanges", err)
	}
	out, err := s.nextRanges(ctx, tag, n)
	if err != nil {
		return nil, s.statusOf("NextRanges", err)
	}
	return out, nil
}

func (s *Server) nextRanges(ctx context.Context, tag string, n int) (*idallocv1.NextRangesResponse, error) {
	var buf [8]segment.Range
	rs, err := s.seg.NextRanges(ctx, tag, int64(n), buf[:0])
	if err != nil {
		return nil, err
	}
	out := &idallocv1.NextRangesResponse{Ranges: make([]*idallocv1.Range, len(rs))}
	for i, r := range rs {
		out.Ranges[i] = &idallocv1.Range{First: r.First, Last: r.Last}
	}
	return out, nil
}

// StreamRanges keeps a caller supplied with ranges: one batch of ranges
// for each message it sends (docs/api.md §14). The server claims IDs only
// when asked, so a client that stops asking leaves nothing claimed
// unused but the batch it was sent last, and the stream's flow control
// bounds what waits for a client that does not read. The token is
// checked at every batch, so that a revocation holds on a stream already
// open. When the drain ends, the stream ends UNAVAILABLE (draining), so
// that the client moves to another instance.
func (s *Server) StreamRanges(stream grpc.BidiStreamingServer[idallocv1.StreamRangesRequest, idallocv1.NextRangesResponse]) error {
	ctx := stream.Context()
	reqs := make(chan *idallocv1.StreamRangesRequest)
	recvErr := make(chan error, 1)
	go func() { // ends with the stream: its Recv fails once the handler returns
		for {
			req, err := stream.Recv()
			if err != nil {
				recvErr <- err
				return
			}
			select {
			case reqs <- req:
			case <-ctx.Done():
				return
			}
		}
	}()
	var tag string
	n := 1
	for first := true; ; first = false {
		var req *idallocv1.StreamRangesRequest
		select {
		case req = <-reqs:
		case err := <-recvErr:
			if err == io.EOF {
				return nil // the client is done
			}
			return err
		case <-s.drained:
			return s.statusOf("StreamRanges", segment.ErrClosed)
		case <-ctx.Done():
			return s.statusOf("StreamRanges", ctx.Err())
		}
		switch t := req.GetAppTag(); {
		case first:
			tag = t
		case t != "" && t != tag:
			return s.statusOf("StreamRanges", errStreamTag)
		}
		if c := req.GetCount(); c != 0 || first {
			var err error
			if n, err = countOf(c, s.ranges); err != nil {
				return s.statusOf("StreamRanges", err)
			}
		}
		if err := s.allowTag(ctx, tag); err != nil {
			return s.statusOf("StreamRanges", err)
		}
		out, err := s.nextRanges(ctx, tag, n)
		if err != nil {
			return s.statusOf("StreamRanges", err)
		}
		if err := stream.Send(out); err != nil {
			return err
		}
	}
}

// Snowflake serves one snowflake ID or count of them, as GET /snowflake.
func (s *Server) Snowflake(ctx context.Context, req *idallocv1.SnowflakeRequest) (*idallocv1.SnowflakeResponse, error) {
	if err := s.allowTag(ctx, ""); err != nil { // snowflake IDs name no tag
		return nil, s.statusOf("Snowflake", err)
	}
	if s.flake == nil {
		return nil, s.statusOf("Snowflake", snowflake.ErrDisabled)
	}
	n, err := countOf(req.GetCount(), s.count)
	if err != nil {
		return nil, s.statusOf("Snowflake", err)
	}
	ids := make([]int64, n)
	if n == 1 {
		ids[0], err = s.flake.Next()
	} else {
		err = s.flake.NextN(ids)
	}
	if err != nil {
		return nil, s.statusOf("Snowflake", err)
	}
	out := &idallocv1.SnowflakeResponse{Ids: ids, IdsStr: make([]string, n)}
	for i, id := range ids {
		out.IdsStr[i] = strconv.FormatInt(id, 10)
	}
	return out, nil
}

// DecodeSnowflake reads a snowflake ID's parts with this instance's epoch
// and layout, as GET /snowflake/{id}.
func (s *Server) DecodeSnowflake(_ context.Context, req *idallocv1.DecodeSnowflakeRequest) (*idallocv1.DecodeSnowflakeResponse, error) {
	if s.flake == nil {
		return nil, s.statusOf("DecodeSnowflake", snowflake.ErrDisabled)
	}
	p, err := s.flake.Layout().Decompose(req.GetId())
	if err != nil {
		return nil, s.statusOf("DecodeSnowflake", err)
	}
	return &idallocv1.DecodeSnowflakeResponse{
		Id: p.ID, IdStr: strconv.FormatInt(p.ID, 10), Time: formatTime(p.Time),
		TimestampMs: p.TimestampMS, WorkerId: p.WorkerID, Sequence: p.Sequence,
	}, nil
}

// timeLayout is RFC 3339 in UTC with exactly three fractional digits, as
// the contract writes every instant.
const timeLayout = "2006-01-02T15:04:05.000Z07:00"

func formatTime(t time.Time) string { return t.UTC().Format(timeLayout) }
