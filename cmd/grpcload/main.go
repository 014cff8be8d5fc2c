// Command grpcload compares idalloc's gRPC front end (docs/api.md §14) with
// its HTTP API on one instance. For each side the same number of clients,
// each on a connection of its own, call one after another (closed loop)
// for a duration; rounds take the sides in turn, so that a machine's
// drift touches every side alike. It prints each round's calls/s and IDs/s
// and each side's median.
//
//	grpcload -http http://127.0.0.1:8880 -grpc 127.0.0.1:9090 -call next -c 64 -d 5s -rounds 3
//	grpcload -call next -count 1000
//	grpcload -call ranges -count 100000
//
// -call next sets GET /alloc?app_tag=T (&count=N) against Next{T, N};
// -call ranges sets GET /alloc?app_tag=T&count=N&as=ranges against
// NextRanges{T, N} and against StreamRanges, one stream per client and one
// message per batch of N. IDs are counted as the answers hold them (a
// range counts its length); an answer that is not a success is an error.
// Only loopback targets are accepted: it is a measurement, not a load test
// of someone else's server.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	idallocv1 "github.com/idalloc/idalloc/proto/idalloc/v1"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "grpcload:", err)
		os.Exit(1)
	}
}

// worker is one client on one connection: call takes one answer.
type worker interface {
	call(ctx context.Context) (ids int64, err error)
	close()
}

// side is one way of taking IDs, measured against the others.
type side struct {
	name string
	open func() (worker, error)
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("grpcload", flag.ContinueOnError)
	httpURL := fs.String("http", "http://127.0.0.1:8880", "the instance's HTTP base URL")
	grpcAddr := fs.String("grpc", "127.0.0.1:9090", "the same instance's grpc_addr")
	call := fs.String("call", "next", "next (/alloc against Next) or ranges (as=ranges against NextRanges and StreamRanges)")
	tag := fs.String("tag", "test_business", "app_tag")
	count := fs.Int64("count", 0, "IDs per call (count=N); 0: single IDs (next only)")
	clients := fs.Int("c", 64, "clients per side, each on a connection of its own")
	d := fs.Duration("d", 5*time.Second, "measured time of each side in each round")
	rounds := fs.Int("rounds", 3, "rounds; each runs every side once, in turn")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := loopback(*httpURL, *grpcAddr); err != nil {
		return err
	}
	if *clients < 1 || *rounds < 1 || *d <= 0 || *count < 0 {
		return fmt.Errorf("-c, -rounds and -d must be positive, -count not negative")
	}
	sides, err := sidesOf(*call, *httpURL, *grpcAddr, *tag, *count)
	if err != nil {
		return err
	}

	results := map[string][]result{}
	fmt.Fprintf(out, "%-5s %-24s %12s %14s %7s\n", "round", "side", "calls/s", "IDs/s", "errors")
	for r := range *rounds {
		for _, s := range sides {
			res, err := measure(s, *clients, *d)
			if err != nil {
				return fmt.Errorf("%s: %w", s.name, err)
			}
			results[s.name] = append(results[s.name], res)
			fmt.Fprintf(out, "%-5d %-24s %12.0f %14.0f %7d\n", r+1, s.name, res.callsPerS, res.idsPerS, res.errors)
		}
	}
	fmt.Fprintf(out, "median of %d rounds, %d clients, %v each:\n", *rounds, *clients, *d)
	for _, s := range sides {
		calls, ids := median(results[s.name])
		fmt.Fprintf(out, "      %-24s %12.0f %14.0f\n", s.name, calls, ids)
	}
	return nil
}

// loopback refuses targets other than this machine's loopback.
func loopback(httpURL, grpcAddr string) error {
	u, err := url.Parse(httpURL)
	if err != nil {
		return fmt.Errorf("-http: %w", err)
	}
	grpcHost, _, err := net.SplitHostPort(grpcAddr)
	if err != nil {
		return fmt.Errorf("-grpc: %w", err)
	}
	for _, h := range []string{u.Hostname(), grpcHost} {
		if ip := net.ParseIP(h); h != "localhost" && (ip == nil || !ip.IsLoopback()) {
			return fmt.Errorf("%q is not a loopback address", h)
		}
	}
	return nil
}

func sidesOf(call, httpURL, grpcAddr, tag string, count int64) ([]side, error) {
	q := url.Values{"app_tag": {tag}}
	if count > 0 {
		q.Set("count", strconv.FormatInt(count, 10))
	}
	switch call {
	case "next":
		ids := max(count, 1)
		return []side{
			{"http /alloc", func() (worker, error) { return newHTTPWorker(httpURL+"/alloc?"+q.Encode(), ids), nil }},
			{"grpc Next", func() (worker, error) {
				return newGRPCWorker(grpcAddr, func(ctx context.Context, g idallocv1.IDAllocatorClient) (int64, error) {
					r, err := g.Next(ctx, &idallocv1.NextRequest{AppTag: tag, Count: count})
					return int64(len(r.GetIds())), err
				})
			}},
		}, nil
	case "ranges":
		if count < 1 {
			return nil, fmt.Errorf("-call ranges needs -count")
		}
		q.Set("as", "ranges")
		return []side{
			{"http /alloc as=ranges", func() (worker, error) { return newHTTPWorker(httpURL+"/alloc?"+q.Encode(), count), nil }},
			{"grpc NextRanges", func() (worker, error) {
				return newGRPCWorker(grpcAddr, func(ctx context.Context, g idallocv1.IDAllocatorClient) (int64, error) {
					r, err := g.NextRanges(ctx, &idallocv1.NextRangesRequest{AppTag: tag, Count: count})
					return inRanges(r.GetRanges()), err
				})
			}},
			{"grpc StreamRanges", func() (worker, error) { return newStreamWorker(grpcAddr, tag, count) }},
		}, nil
	}
	return nil, fmt.Errorf("-call %q: want next or ranges", call)
}

type result struct {
	callsPerS, idsPerS float64
	errors             int64
}

// measure opens n workers of s, has each take one answer (the connection
// warmed), then lets them call for d and counts what they took.
func measure(s side, n int, d time.Duration) (result, error) {
	ws := make([]worker, 0, n)
	defer func() {
		for _, w := range ws {
			w.close()
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), d+30*time.Second)
	defer cancel()
	for range n {
		w, err := s.open()
		if err != nil {
			return result{}, err
		}
		ws = append(ws, w)
		if _, err := w.call(ctx); err != nil {
			return result{}, fmt.Errorf("first call: %w", err)
		}
	}
	var calls, ids, errs atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	start := time.Now()
	for _, w := range ws {
		wg.Go(func() {
			var c, k, e int64
			for !stop.Load() {
				got, err := w.call(ctx)
				if err != nil {
					e++
					time.Sleep(10 * time.Millisecond) // a refused call must not spin
					continue
				}
				c++
				k += got
			}
			calls.Add(c)
			ids.Add(k)
			errs.Add(e)
		})
	}
	time.Sleep(d)
	stop.Store(true)
	wg.Wait()
	secs := time.Since(start).Seconds()
	return result{float64(calls.Load()) / secs, float64(ids.Load()) / secs, errs.Load()}, nil
}

func median(rs []result) (calls, ids float64) {
	c := make([]float64, len(rs))
	k := make([]float64, len(rs))
	for i, r := range rs {
		c[i], k[i] = r.callsPerS, r.idsPerS
	}
	slices.Sort(c)
	slices.Sort(k)
	return c[len(c)/2], k[len(k)/2]
}

// httpWorker calls one URL on a keep-alive connection of its own.
type httpWorker struct {
	tr  *http.Transport
	hc  *http.Client
	req *http.Request
	ids int64
	buf bytes.Buffer
}

// success is how every successful /alloc answer begins.
var success = []byte(`{"resp_code":0,`)

func newHTTPWorker(u string, ids int64) *httpWorker {
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: 1, MaxConnsPerHost: 1, DisableCompression: true}
	req, _ := http.NewRequest(http.MethodGet, u, nil) // u is built from a parsed URL
	return &httpWorker{tr: tr, hc: &http.Client{Transport: tr, Timeout: 10 * time.Second}, req: req, ids: ids}
}

func (w *httpWorker) call(ctx context.Context) (int64, error) {
	resp, err := w.hc.Do(w.req.WithContext(ctx))
	if err != nil {
		return 0, err
	}
	w.buf.Reset()
	_, err = w.buf.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != http.StatusOK || !bytes.HasPrefix(w.buf.Bytes(), success) {
		return 0, fmt.Errorf("HTTP %d: %.200s", resp.StatusCode, w.buf.Bytes())
	}
	return w.ids, nil
}

func (w *httpWorker) close() { w.tr.CloseIdleConnections() }

// grpcWorker makes unary calls on a connection of its own.
type grpcWorker struct {
	conn *grpc.ClientConn
	g    idallocv1.IDAllocatorClient
	do   func(context.Context, idallocv1.IDAllocatorClient) (int64, error)
}

func newGRPCWorker(addr string, do func(context.Context, idallocv1.IDAllocatorClient) (int64, error)) (*grpcWorker, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	return &grpcWorker{conn: conn, g: idallocv1.NewIDAllocatorClient(conn), do: do}, nil
}

func (w *grpcWorker) call(ctx context.Context) (int64, error) { return w.do(ctx, w.g) }
func (w *grpcWorker) close()                                  { _ = w.conn.Close() }

// streamWorker asks one StreamRanges stream for a batch at each call.
type streamWorker struct {
	conn   *grpc.ClientConn
	stream grpc.BidiStreamingClient[idallocv1.StreamRangesRequest, idallocv1.NextRangesResponse]
	cancel context.CancelFunc
	req    *idallocv1.StreamRangesRequest
}

func newStreamWorker(addr, tag string, count int64) (*streamWorker, error) {
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, err
	}
	// The stream outlives any one call: its own context, ended by close.
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := idallocv1.NewIDAllocatorClient(conn).StreamRanges(ctx)
	if err != nil {
		cancel()
		_ = conn.Close()
		return nil, err
	}
	return &streamWorker{conn: conn, stream: stream, cancel: cancel, req: &idallocv1.StreamRangesRequest{AppTag: tag, Count: count}}, nil
}

func (w *streamWorker) call(context.Context) (int64, error) {
	if err := w.stream.Send(w.req); err != nil {
		return 0, err
	}
	r, err := w.stream.Recv()
	if err != nil {
		return 0, err
	}
	return inRanges(r.GetRanges()), nil
}

func (w *streamWorker) close() {
	_ = w.stream.CloseSend()
	w.cancel()
	_ = w.conn.Close()
}

// inRanges counts the IDs of ranges.
func inRanges(rs []*idallocv1.Range) int64 {
	var n int64
	for _, r := range rs {
		n += r.GetLast() - r.GetFirst() + 1
	}
	return n
}
