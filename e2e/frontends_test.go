package e2e

import (
	"context"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
)

// frontEndsRun is how long TestFrontEndsTwoInstances loads its tag.
const frontEndsRun = 10 * time.Second

// caller is one goroutine of TestFrontEndsTwoInstances: one way of taking
// IDs from one instance, one call after another.
type caller struct {
	inst, name string
	// call takes the next IDs, in the order the instance answered them.
	call func(ctx context.Context) ([]int64, error)

	ids        []int64
	errs       int
	firstErr   error
	violations int // IDs not above the caller's previous one
}

// TestFrontEndsTwoInstances (docs/api.md §5, §14): two instances on one
// MariaDB database, each serving HTTP, the Redis protocol and gRPC, are
// loaded on one tag (step 50, so that their segments interleave) for 10 s
// by every kind of caller at once: HTTP /alloc one ID and ten, RESP GET and
// IDS 10, gRPC Next one and ten, NextRanges of 200 and StreamRanges in
// batches of 200. No ID may be issued twice across them all, and each
// caller's IDs, from one instance, must strictly increase.
func TestFrontEndsTwoInstances(t *testing.T) {
	env := setup(t)
	dsn := env.db.newDatabase(t)
	const tag = "frontends_e2e"
	var insts []*instance
	respAddrs, grpcAddrs := map[string]string{}, map[string]string{}
	for _, name := range []string{"a", "b"} {
		addrs := [2]string{loopbackAddr(t), loopbackAddr(t)}
		respAddrs[name], grpcAddrs[name] = addrs[0], addrs[1]
		insts = append(insts, newInstance(t, env, name, dsn, config(map[string]any{"resp_addr": addrs[0], "grpc_addr": addrs[1]})))
	}
	if err := insts[0].start(true); err != nil {
		t.Fatal(err)
	}
	r, err := insts[0].ctl.post("/tags", fmt.Sprintf(`{"app_tag":%q,"step":50}`, tag))
	if err != nil || r.HTTPStatus != 201 {
		t.Fatalf("POST /tags: %+v, %v", r, err)
	}
	if err := insts[1].start(false); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(t.Context(), frontEndsRun+time.Minute)
	defer cancel()
	var callers []*caller
	for _, in := range insts {
		hc := newClient(in.url, 5*time.Second)
		hc10 := newClient(in.url, 5*time.Second)
		rc := redis.NewClient(&redis.Options{Addr: respAddrs[in.name], MaxRetries: -1})
		conn, err := grpc.NewClient(grpcAddrs[in.name], grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			hc.close()
			hc10.close()
			_ = rc.Close()
			_ = conn.Close()
		})
		g := idallocv1.NewIDAllocatorClient(conn)
		callers = append(callers,
			&caller{inst: in.name, name: "http /alloc", call: httpCall(hc, "/alloc?app_tag="+tag)},
			&caller{inst: in.name, name: "http /alloc count=10", call: httpCall(hc10, "/alloc?app_tag="+tag+"&count=10")},
			&caller{inst: in.name, name: "resp GET", call: func(ctx context.Context) ([]int64, error) {
				id, err := rc.Get(ctx, tag).Int64()
				return []int64{id}, err
			}},
			&caller{inst: in.name, name: "resp IDS 10", call: func(ctx context.Context) ([]int64, error) {
				return rc.Do(ctx, "IDS", tag, 10).Int64Slice()
			}},
			&caller{inst: in.name, name: "grpc Next", call: func(ctx context.Context) ([]int64, error) {
				r, err := g.Next(ctx, &idallocv1.NextRequest{AppTag: tag})
				return r.GetIds(), err
			}},
			&caller{inst: in.name, name: "grpc Next count=10", call: func(ctx context.Context) ([]int64, error) {
				r, err := g.Next(ctx, &idallocv1.NextRequest{AppTag: tag, Count: 10})
				return r.GetIds(), err
			}},
			&caller{inst: in.name, name: "grpc NextRanges 200", call: func(ctx context.Context) ([]int64, error) {
				r, err := g.NextRanges(ctx, &idallocv1.NextRangesRequest{AppTag: tag, Count: 200})
				return expand(r.GetRanges()), err
			}},
			&caller{inst: in.name, name: "grpc StreamRanges 200", call: streamCall(ctx, g, tag, 200)},
		)
	}

	stop := time.Now().Add(frontEndsRun)
	var wg sync.WaitGroup
	for _, c := range callers {
		wg.Go(func() {
			last := int64(0)
			for time.Now().Before(stop) && ctx.Err() == nil {
				cctx, ccancel := context.WithTimeout(ctx, 5*time.Second)
				ids, err := c.call(cctx)
				ccancel()
				if err != nil {
					if c.errs++; c.firstErr == nil {
						c.firstErr = err
					}
					time.Sleep(20 * time.Millisecond)
					continue
				}
				for _, id := range ids {
					if id <= last {
						c.violations++
					}
					last = id
				}
				c.ids = append(c.ids, ids...)
			}
		})
	}
	wg.Wait()

	var all []int64
	for _, c := range callers {
		all = append(all, c.ids...)
		t.Logf("%s %-22s %7d IDs, %d errors (first: %v)", c.inst, c.name, len(c.ids), c.errs, c.firstErr)
		if len(c.ids) == 0 {
			t.Errorf("%s %s: no ID taken (first error: %v)", c.inst, c.name, c.firstErr)
		}
		if c.violations > 0 {
			t.Errorf("%s %s: %d IDs not above the caller's previous one", c.inst, c.name, c.violations)
		}
	}
	dups, examples := checkUnique(all)
	t.Logf("%d IDs from %d callers on 2 instances, %d issued twice", len(all), len(callers), dups)
	if dups > 0 {
		t.Errorf("%d IDs issued twice, among them %v", dups, examples)
	}
}

// httpCall is a caller's call of path on c: /alloc's id, or its ids when
// it has count.
func httpCall(c *client, path string) func(context.Context) ([]int64, error) {
	return func(context.Context) ([]int64, error) {
		r, err := c.get(path)
		if err != nil {
			return nil, err
		}
		if r.HTTPStatus != 200 {
			return nil, fmt.Errorf("HTTP %d, kind %s: %s", r.HTTPStatus, r.Kind, r.Msg)
		}
		if r.IDs != nil {
			return r.IDs, nil
		}
		return []int64{r.ID}, nil
	}
}

// streamCall is a caller's call on one StreamRanges stream, opened at its
// first call and again after an error: each call asks for one batch of
// count IDs and returns them. The stream lives until ctx ends.
func streamCall(ctx context.Context, g idallocv1.IDAllocatorClient, tag string, count int64) func(context.Context) ([]int64, error) {
	var stream grpc.BidiStreamingClient[idallocv1.StreamRangesRequest, idallocv1.NextRangesResponse]
	return func(context.Context) ([]int64, error) {
		if stream == nil {
			s, err := g.StreamRanges(ctx)
			if err != nil {
				return nil, err
			}
			stream = s
		}
		if err := stream.Send(&idallocv1.StreamRangesRequest{AppTag: tag, Count: count}); err != nil {
			stream = nil
			return nil, err
		}
		r, err := stream.Recv()
		if err != nil {
			stream = nil
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
		return expand(r.GetRanges()), nil
	}
}

// expand lists the IDs of ranges, in order.
func expand(ranges []*idallocv1.Range) []int64 {
	var ids []int64
	for _, r := range ranges {
		for id := r.GetFirst(); id <= r.GetLast(); id++ {
			ids = append(ids, id)
		}
	}
	return ids
}
