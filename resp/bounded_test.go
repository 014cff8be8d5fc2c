package resp

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/segment"
)

// TestIDSLargerThanWhatIsLeft: IDS of a bounded tag larger than what it
// has left is refused (ERR, in the words /alloc sends) with nothing
// taken: GET and a batch that fits then get every ID left (docs/api.md
// §15).
func TestIDSLargerThanWhatIsLeft(t *testing.T) {
	ctx := context.Background()
	in := start(t, options{noFlake: true})
	n := segment.NewTag{AppTag: "f", Step: 10, Format: segment.FormatFixedLength, Length: 2} // 10..99
	if _, err := in.alloc.CreateTag(ctx, n); err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(&redis.Options{Addr: in.addr, Protocol: 2, MaxRetries: -1})
	defer rdb.Close()
	if id, err := rdb.Do(ctx, "GET", "f").Text(); err != nil || id != "10" {
		t.Fatalf("GET f = %q, %v; want 10", id, err)
	}
	err := rdb.Do(ctx, "IDS", "f", "100").Err()
	if err == nil || !strings.HasPrefix(err.Error(), "ERR invalid count: must be at most 89:") {
		t.Fatalf("IDS f 100 = %v, want ERR invalid count: must be at most 89: …", err)
	}
	ids, err := rdb.Do(ctx, "IDS", "f", "88").Int64Slice()
	if err != nil || len(ids) != 88 || ids[0] != 11 || ids[87] != 98 {
		t.Fatalf("IDS f 88 = %v, %v; want 11..98", ids, err)
	}
	if id, err := rdb.Do(ctx, "GET", "f").Text(); err != nil || id != "99" {
		t.Fatalf("GET f = %q, %v; want 99", id, err)
	}
	if err := rdb.Do(ctx, "GET", "f").Err(); err == nil || !strings.Contains(err.Error(), "exhausted") {
		t.Errorf("GET f after 99 = %v, want ERR … exhausted", err)
	}
}
