package resp

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/internal/frontendtest"
	"github.com/idalloc/idalloc/segment"
)

// TestKeysAndHgetall: number-dispenser's users list tags with KEYS (admin)
// and read one with HGETALL, whose answer HSET takes back to make the same
// tag; an unknown tag is an empty hash, as a missing key in Redis; no key
// is ever shown.
func TestKeysAndHgetall(t *testing.T) {
	in := start(t, options{cfg: Config{AdminToken: token}, noFlake: true})
	ctx := context.Background()
	admin := redis.NewClient(&redis.Options{Addr: in.addr, Password: token})
	anon := redis.NewClient(&redis.Options{Addr: in.addr})
	t.Cleanup(func() { _ = admin.Close(); _ = anon.Close() })
	for _, h := range [][]any{
		{"order", "step", 100, "start", 1000, "description", "orders, ✓"},
		{"order:eu", "step", 10},
		{"coupon", "type", 1, "length", 10},
		{"invoice", "format", "dated", "period", "month", "time_zone", "Asia/Shanghai", "prefix", "INV", "separator", "-", "length", 5},
	} {
		if err := admin.HSet(ctx, h[0].(string), h[1:]...).Err(); err != nil {
			t.Fatalf("HSET %v: %v", h, err)
		}
	}

	t.Run("KEYS", func(t *testing.T) {
		for pattern, want := range map[string][]string{
			"*":          {"coupon", "invoice", "order", "order:eu", "test_business"},
			"order*":     {"order", "order:eu"},
			"order:?u":   {"order:eu"},
			"[ci]*":      {"coupon", "invoice"},
			"[^ci]*":     {"order", "order:eu", "test_business"},
			"order\\:eu": {"order:eu"},
			"nothing*":   {},
		} {
			got, err := admin.Keys(ctx, pattern).Result()
			if err != nil || !slices.Equal(got, want) {
				t.Errorf("KEYS %q = %q, %v; want %q", pattern, got, err, want)
			}
		}
		if err := anon.Keys(ctx, "*").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOAUTH") {
			t.Errorf("KEYS without AUTH: %v, want NOAUTH", err)
		}
		if err := admin.Do(ctx, "KEYS").Err(); err == nil || err.Error() != "ERR wrong number of arguments for 'keys' command" {
			t.Errorf("KEYS without a pattern: %v, want Redis's wrong number of arguments", err)
		}
	})

	t.Run("HGETALL", func(t *testing.T) {
		for tag, want := range map[string]map[string]string{
			"order":  {"step": "100", "start": "1000", "description": "orders, ✓", "format": "sequential", "length": "0"},
			"coupon": {"step": "1000", "start": "1", "description": "", "format": "scrambled", "length": "10"},
			"invoice": {"step": "1000", "start": "1", "description": "", "format": "dated", "length": "5",
				"period": "month", "time_zone": "Asia/Shanghai", "prefix": "INV", "separator": "-"},
			"nope": {},
		} {
			got, err := anon.HGetAll(ctx, tag).Result()
			if err != nil || !maps.Equal(got, want) {
				t.Errorf("HGETALL %s = %v, %v; want %v", tag, got, err, want)
			}
		}
		// What HGETALL answers, HSET takes: the same tag under another name.
		for _, tag := range []string{"order", "coupon", "invoice"} {
			fields := admin.HGetAll(ctx, tag).Val()
			var args []any
			for _, k := range slices.Sorted(maps.Keys(fields)) {
				args = append(args, k, fields[k])
			}
			if err := admin.HSet(ctx, tag+"_copy", args...).Err(); err != nil {
				t.Errorf("HSET %s_copy with HGETALL %s's fields %v: %v", tag, tag, args, err)
				continue
			}
			if copied := admin.HGetAll(ctx, tag+"_copy").Val(); !maps.Equal(copied, fields) {
				t.Errorf("HGETALL %s_copy = %v, want %s's %v", tag, copied, tag, fields)
			}
		}
		if err := anon.HGetAll(ctx, "bad tag").Err(); err == nil || !strings.HasPrefix(err.Error(), "ERR invalid app_tag") {
			t.Errorf("HGETALL of a name no tag can have: %v, want ERR invalid app_tag", err)
		}
		if err := anon.Do(ctx, "HGETALL", "order", "x").Err(); err == nil || !strings.Contains(err.Error(), "wrong number of arguments for 'hgetall'") {
			t.Errorf("HGETALL with two arguments: %v, want Redis's wrong number of arguments", err)
		}
	})
}

// TestHgetallFindsNewTags: a tag another instance created since the last
// tag-list reload is found as GET finds it, by the reload a miss starts
// (at most one a second), not only at the next periodic one.
func TestHgetallFindsNewTags(t *testing.T) {
	in := start(t, options{noFlake: true}) // tag_refresh 10s: its next reload is far off
	if err := in.store.CreateTag(context.Background(), segment.Tag{AppTag: "elsewhere", Step: 7, Start: 3}); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: in.addr})
	t.Cleanup(func() { _ = rdb.Close() })
	deadline := time.Now().Add(5 * time.Second)
	for {
		got, err := rdb.HGetAll(context.Background(), "elsewhere").Result()
		if err == nil && got["step"] == "7" && got["start"] == "3" {
			return
		}
		if err != nil || len(got) != 0 || time.Now().After(deadline) {
			t.Fatalf("HGETALL elsewhere = %v, %v; want step 7 and start 3 (an empty hash until a miss may reload)", got, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// manyTags lists n tags, as an allocator would after a reload.
type manyTags struct {
	nopSegments
	tags []segment.Tag
}

func (m manyTags) TagPage(q segment.PageQuery) segment.Page { return segment.PageOf(m.tags, q) }

// TestKeysAnswersAtMostMaxKeys: KEYS answers the first MaxKeys names that
// match, in byte order.
func TestKeysAnswersAtMostMaxKeys(t *testing.T) {
	var m manyTags
	for i := range MaxKeys + 50 {
		m.tags = append(m.tags, segment.Tag{AppTag: fmt.Sprintf("t%06d", i)})
	}
	srv, err := New(Config{}, Deps{Segments: m})
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: frontendtest.Serve(t, srv)}) // a loopback client: admin without a token
	t.Cleanup(func() { _ = rdb.Close() })
	got, err := rdb.Keys(context.Background(), "t*").Result()
	if err != nil || len(got) != MaxKeys || got[0] != "t000000" || got[MaxKeys-1] != fmt.Sprintf("t%06d", MaxKeys-1) {
		t.Fatalf("KEYS t* answered %d names (%v), want the first %d", len(got), err, MaxKeys)
	}
	if got, _ := rdb.Keys(context.Background(), "t01004?").Result(); len(got) != 10 {
		t.Errorf("KEYS t01004? answered %q, want the 10 past the cap", got)
	}
}
