package resp

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/internal/frontendtest"
	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/segment/dated"
	"github.com/idalloc/idalloc/store/storetest"
)

// datedServer serves a fresh store of d through an allocator on clock,
// with an admin token; it returns the allocator and a client that has
// authenticated. Retries are off: each command is sent once.
func datedServer(t *testing.T, d storetest.Driver, cfg segment.Config) (*segment.Allocator, *redis.Client) {
	t.Helper()
	ctx := context.Background()
	alloc, err := segment.New(ctx, d.Open(t), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = alloc.Close(ctx) })
	srv, err := New(Config{AdminToken: token}, Deps{Segments: alloc})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: frontendtest.Serve(t, srv), Password: token, MaxRetries: -1})
	t.Cleanup(func() { _ = rdb.Close() })
	return alloc, rdb
}

// reply is one command's answer as go-redis reads it: a string, an
// integer, an array of strings, or an error's text.
func reply(ctx context.Context, rdb *redis.Client, args ...any) any {
	v, err := rdb.Do(ctx, args...).Result()
	if err != nil {
		return "error: " + err.Error()
	}
	if a, ok := v.([]any); ok {
		out := make([]string, len(a))
		for i, x := range a {
			out[i], _ = x.(string)
		}
		return out
	}
	return v
}

// infoLines reads INFO tag's "key:value" lines.
func infoLines(t *testing.T, ctx context.Context, rdb *redis.Client, tag string) map[string]string {
	t.Helper()
	text, err := rdb.Do(ctx, "INFO", tag).Text()
	if err != nil {
		t.Fatalf("INFO %s: %v", tag, err)
	}
	m := map[string]string{}
	for line := range strings.SplitSeq(text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m
}

// TestDatedOverRESP: HSET creates dated tags with §11's fields; GET, MGET
// and IDS answer their IDs as text (digits alone for a numeric one),
// INCR integers of a numeric one and an error for a text one; INFO shows
// the settings and the current period; a spent period answers ERR with
// the domain's words and when the next period begins; and at the
// boundary (midnight in Asia/Shanghai, 16:00 UTC, at a month's end) every
// tag starts again at its start. The instance's clock is a test clock,
// far enough from the store's that the skew bound is set out of the way.
func TestDatedOverRESP(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			clk := testclock.New(time.Date(2027, 2, 28, 15, 59, 57, 0, time.UTC)) // 23:59:57 in Shanghai
			alloc, rdb := datedServer(t, d, segment.Config{Now: clk.Now, MaxClockSkew: 100_000 * time.Hour})
			for _, c := range []struct {
				args []any
				want int64
			}{
				{[]any{"HSET", "ord", "format", "dated", "period", "day", "time_zone", "Asia/Shanghai", "prefix", "ORD",
					"separator", "-", "length", "6", "start", "1", "step", "1000"}, 8},
				{[]any{"HSET", "num", "FORMAT", "dated", "Period", "hour", "time_zone", "Asia/Shanghai", "length", "4"}, 4},
				{[]any{"HSET", "one", "format", "dated", "time_zone", "Asia/Shanghai", "prefix", "X", "length", "1", "start", "9", "step", "1"}, 6},
			} {
				if n, err := rdb.Do(ctx, c.args...).Int64(); err != nil || n != c.want {
					t.Fatalf("%q = %d, %v; want :%d", c.args, n, err, c.want)
				}
			}
			checkDatedRows(t, alloc)

			const exhausted = "error: ERR this period's numbers are all issued: retry when the next period begins, " +
				"or create a tag with a longer length (the next period begins in "
			steps := []struct {
				name string
				args []any
				want any
			}{
				{"GET text", []any{"GET", "ord"}, "ORD-20270228-000001"},
				{"IDS text", []any{"IDS", "ord", 3}, []string{"ORD-20270228-000002", "ORD-20270228-000003", "ORD-20270228-000004"}},
				{"GET numeric", []any{"GET", "num"}, "2027022823" + "0001"},
				{"INCR numeric", []any{"INCR", "num"}, int64(20270228230002)},
				{"IDS numeric", []any{"IDS", "num", 2}, []string{"20270228230003", "20270228230004"}},
				{"MGET of each kind", []any{"MGET", "ord", "num", "one"}, []string{"ORD-20270228-000005", "20270228230005", "X202702289"}},
				{"INCR text", []any{"INCR", "ord"}, "error: " + errIncrText.line},
				{"GET spent", []any{"GET", "one"}, exhausted + "3s)"},
				{"IDS spent", []any{"IDS", "one", 1}, exhausted + "3s)"},
				{"MGET spent", []any{"MGET", "ord", "one"}, exhausted + "3s)"},
			}
			for _, s := range steps {
				if got := reply(ctx, rdb, s.args...); !equal(got, s.want) {
					t.Errorf("%s: %q = %#v, want %#v", s.name, s.args, got, s.want)
				}
			}
			checkInfo(t, infoLines(t, ctx, rdb, "ord"), map[string]string{
				"format": "dated", "length": "6", "start": "1", "step": "1000",
				"period": "day", "time_zone": "Asia/Shanghai", "prefix": "ORD", "separator": "-",
				"current_period": "20270228", "period_start": "2027-02-28T00:00:00+08:00", "period_end": "2027-03-01T00:00:00+08:00",
				// 6 issued (the MGET that failed took one), of 999,999.
				"period_issued": "6", "period_left": "999993", "issued": "6",
			})

			clk.Add(4 * time.Second) // 00:00:01 on 1 March in Shanghai
			for _, s := range []struct {
				args []any
				want any
			}{
				{[]any{"GET", "ord"}, "ORD-20270301-000001"},
				{[]any{"IDS", "ord", 2}, []string{"ORD-20270301-000002", "ORD-20270301-000003"}},
				{[]any{"GET", "num"}, "2027030100" + "0001"},
				{[]any{"GET", "one"}, "X202703019"},
			} {
				if got := reply(ctx, rdb, s.args...); !equal(got, s.want) {
					t.Errorf("after midnight: %q = %#v, want %#v", s.args, got, s.want)
				}
			}
			checkInfo(t, infoLines(t, ctx, rdb, "ord"), map[string]string{
				"current_period": "20270301", "period_start": "2027-03-01T00:00:00+08:00", "period_end": "2027-03-02T00:00:00+08:00",
				"period_issued": "3", "period_left": "999996", "issued": "9",
			})
			// A tag without an ID yet shows its settings and an empty period.
			if _, err := rdb.Do(ctx, "HSET", "idle", "format", "dated", "period", "month").Result(); err != nil {
				t.Fatal(err)
			}
			checkInfo(t, infoLines(t, ctx, rdb, "idle"), map[string]string{
				"period": "month", "time_zone": "UTC", "prefix": "", "separator": "", "length": "6", "step": "1000",
				"current_period": "", "period_issued": "", "period_left": "",
			})
		})
	}
}

// checkDatedRows: the tags HSET made, as the allocator lists them.
func checkDatedRows(t *testing.T, alloc *segment.Allocator) {
	t.Helper()
	one, start := int64(1), int64(9)
	want := map[string]segment.Tag{
		"ord": {Step: 1000, Length: 6, Start: 1, FormatSpec: dated.Settings{Period: dated.Day, TimeZone: "Asia/Shanghai",
			Prefix: "ORD", Separator: "-", Start: &one}.Spec()},
		"num": {Step: segment.DefaultDatedStep, Length: 4, Start: 1, FormatSpec: dated.Settings{Period: dated.Hour, TimeZone: "Asia/Shanghai"}.Spec()},
		"one": {Step: 1, Length: 1, Start: 9, FormatSpec: dated.Settings{TimeZone: "Asia/Shanghai", Prefix: "X", Start: &start}.Spec()},
	}
	for _, row := range alloc.Tags() {
		w, ok := want[row.AppTag]
		if !ok {
			continue
		}
		delete(want, row.AppTag)
		if row.Format != segment.FormatDated || row.Step != w.Step || row.Length != w.Length || row.Start != w.Start || row.FormatSpec != w.FormatSpec {
			t.Errorf("%s: format %s, step %d, length %d, start %d, spec %q; want dated, %d, %d, %d, %q", row.AppTag,
				row.Format, row.Step, row.Length, row.Start, row.FormatSpec, w.Step, w.Length, w.Start, w.FormatSpec)
		}
	}
	for tag := range want {
		t.Errorf("no row for %s", tag)
	}
}

func checkInfo(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("INFO %s:%q (present %v), want %q", k, g, ok, v)
		}
	}
}

func equal(got, want any) bool {
	if w, ok := want.([]string); ok {
		g, ok := got.([]string)
		return ok && slices.Equal(g, w)
	}
	return got == want
}

// TestDatedRefusedOverRESP: HSET's dated fields refused in the domain's
// words (CheckNewTag's, which HTTP sends as msg), class ERR, naming the
// field; an unknown field and one given twice in RESP's own; and nothing
// is stored.
func TestDatedRefusedOverRESP(t *testing.T) {
	asDated := func(n segment.NewTag) segment.NewTag {
		n.AppTag, n.Format = "bad", segment.FormatDated
		return n
	}
	cases := []struct {
		name  string
		args  []string
		tag   segment.NewTag // the same fields, for the domain's words
		field string
	}{
		{"unknown period", []string{"period", "fortnight"}, asDated(segment.NewTag{Period: "fortnight"}), "period"},
		{"period in upper case", []string{"period", "DAY"}, asDated(segment.NewTag{Period: "DAY"}), "period"},
		{"unknown zone", []string{"time_zone", "Mars/Olympus_Mons"}, asDated(segment.NewTag{TimeZone: "Mars/Olympus_Mons"}), "time_zone"},
		{"Local zone", []string{"time_zone", "Local"}, asDated(segment.NewTag{TimeZone: "Local"}), "time_zone"},
		{"prefix with a space", []string{"prefix", "OR D"}, asDated(segment.NewTag{Prefix: "OR D"}), "prefix"},
		{"prefix too long", []string{"prefix", "ABCDEFGHIJKLM"}, asDated(segment.NewTag{Prefix: "ABCDEFGHIJKLM"}), "prefix"},
		{"separator", []string{"separator", "+"}, asDated(segment.NewTag{Separator: "+"}), "separator"},
		{"stamp + length over 18", []string{"length", "11"}, asDated(segment.NewTag{Length: 11}), "length"},
		{"start above the length", []string{"length", "2", "start", "100"}, asDated(segment.NewTag{Length: 2, Start: ptr(100)}), "start"},
		{"scrambled with a period", nil, segment.NewTag{AppTag: "bad", Format: segment.FormatScrambled, Length: 10, Period: dated.Day}, "period"},
		{"sequential with a prefix", nil, segment.NewTag{AppTag: "bad", Prefix: "ORD"}, "prefix"},
	}
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			st, dom, rdb := adminClient(t, d)
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					args := []any{"HSET", "bad"}
					if c.args == nil { // the fields of another format
						args = append(args, "format", string(c.tag.Format))
						if c.tag.Length != 0 {
							args = append(args, "length", c.tag.Length)
						}
						if c.tag.Period != "" {
							args = append(args, "period", string(c.tag.Period))
						}
						if c.tag.Prefix != "" {
							args = append(args, "prefix", c.tag.Prefix)
						}
					} else {
						args = append(args, "format", "dated")
						for _, a := range c.args {
							args = append(args, a)
						}
					}
					c.tag.Step = DefaultStep
					_, want := segment.CheckNewTag(c.tag, frontendtest.MaxStep)
					e, ok := errs.Describe(want)
					if !ok || e.Kind != errs.BadRequest || e.Field != c.field {
						t.Fatalf("the domain refuses %+v with %v, want bad_request naming %s", c.tag, want, c.field)
					}
					if got := rdb.Do(ctx, args...).Err(); got == nil || got.Error() != "ERR "+want.Error() {
						t.Errorf("%q: got %v, want ERR %s", args, got, want)
					}
				})
			}
			for _, c := range []struct {
				args []any
				want string
			}{
				{[]any{"HSET", "bad", "format", "dated", "period", "day", "PERIOD", "day"}, `ERR field "period" given twice: send each field once`},
				{[]any{"HSET", "bad", "format", "dated", "timezone", "UTC"}, `ERR unknown field "timezone": ` + hsetFields},
			} {
				if got := rdb.Do(ctx, c.args...).Err(); got == nil || got.Error() != c.want {
					t.Errorf("%q: got %v, want %s", c.args, got, c.want)
				}
			}
			if slices.ContainsFunc(dom.Segments.Tags(), func(tag segment.Tag) bool { return tag.AppTag == "bad" }) {
				t.Error("a refused HSET created the tag")
			}
			frontendtest.CheckUnchanged(t, st)
		})
	}
}

func ptr(v int64) *int64 { return &v }

// TestDatedClockSkewOverRESP: an instance whose clock is 5s off the
// store's refuses dated tags with TRYAGAIN (kind unavailable, the
// domain's words naming the skew and the bound) and serves the others.
func TestDatedClockSkewOverRESP(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			ctx := context.Background()
			clk := testclock.New(time.Now().Add(5 * time.Second))
			alloc, rdb := datedServer(t, d, segment.Config{Now: clk.Now})
			if err := rdb.Do(ctx, "HSET", "ord", "format", "dated", "prefix", "ORD").Err(); err != nil {
				t.Fatal(err)
			}
			_, direct := alloc.NextText(ctx, "ord")
			if !errors.Is(direct, segment.ErrClockSkew) || errs.KindOf(direct) != errs.Unavailable {
				t.Fatalf("the allocator's NextText = %v, want ErrClockSkew", direct)
			}
			for _, args := range [][]any{{"GET", "ord"}, {"IDS", "ord", 2}, {"MGET", "test_business", "ord"}} {
				err := rdb.Do(ctx, args...).Err()
				if err == nil || !strings.HasPrefix(err.Error(), "TRYAGAIN unavailable: this instance's clock is ") ||
					!strings.Contains(err.Error(), "ahead of the store's, more than dated.max_clock_skew (1s)") {
					t.Errorf("%q: got %v, want TRYAGAIN naming the skew and the bound", args, err)
				}
			}
			if id, err := rdb.Do(ctx, "GET", "test_business").Text(); err != nil {
				t.Errorf("GET test_business = %q, %v; want an ID: other tags are served", id, err)
			} else if _, err := strconv.ParseInt(id, 10, 64); err != nil {
				t.Errorf("GET test_business = %q, want digits", id)
			}
		})
	}
}

// BenchmarkGetDated is BenchmarkGet on a dated tag with text IDs
// ("ORD-20261126-000123"), on the real clock.
func BenchmarkGetDated(b *testing.B) {
	in := start(b, options{noFlake: true})
	conn := dialRaw(b, in.addr)
	if got := conn.send(b, bulk("HSET", "ord", "format", "dated", "prefix", "ORD", "separator", "-", "step", "100000")); got != ":4" {
		b.Fatalf("HSET = %q", got)
	}
	batch := []byte(strings.Repeat(bulk("GET", "ord"), 16))
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i += 16 {
		if _, err := conn.Write(batch); err != nil {
			b.Fatal(err)
		}
		for range 16 {
			if head := conn.line(b); head[0] != '$' {
				b.Fatalf("GET ord = %q", head)
			}
			conn.line(b)
		}
	}
}
