package resp

import (
	"context"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"
)

// TestSnowflakeIsReported: every SNOWFLAKE answer reaches Config.OnSnowflake,
// which main wires to the issued and clock-drift counters the HTTP front end
// keeps, so /metrics counts snowflake IDs of both protocols.
func TestSnowflakeIsReported(t *testing.T) {
	var mu sync.Mutex
	issued, calls := 0, 0
	in := start(t, options{cfg: Config{OnSnowflake: func(n int, err error) {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if err == nil {
			issued += n
		}
	}}})
	rdb := redis.NewClient(&redis.Options{Addr: in.addr})
	defer rdb.Close()
	ctx := context.Background()
	if err := rdb.Do(ctx, "SNOWFLAKE").Err(); err != nil {
		t.Fatalf("SNOWFLAKE: %v", err)
	}
	if err := rdb.Do(ctx, "SNOWFLAKE", 5).Err(); err != nil {
		t.Fatalf("SNOWFLAKE 5: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls != 2 || issued != 6 {
		t.Errorf("OnSnowflake told of %d answers and %d IDs, want 2 and 6", calls, issued)
	}
}
