package resp

import (
	"context"
	"math/rand/v2"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/idalloc/idalloc/internal/redistest"
)

// globCases are KEYS patterns with a name each, and whether Redis's
// stringmatchlen matches them, worked out from its rules (and checked on a
// redis-server by TestGlobAgainstRedis).
var globCases = []struct {
	pattern, name string
	want          bool
	// pathMatch is how path.Match differs from Redis, if it does:
	// "error" (ErrBadPattern) or "other" (the other answer).
	pathMatch string
}{
	{"*", "order", true, ""},
	{"order", "order", true, ""},
	{"order", "Order", false, ""}, // case counts
	{"order", "orders", false, ""},
	{"ord*", "order", true, ""},
	{"ord*", "ord", true, ""},
	{"*der", "order", true, ""},
	{"o*d*r", "order", true, ""},
	{"o**r", "order", true, ""},
	{"*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", false, ""},
	{"*:*", "user:1", true, ""},
	{"ord?r", "order", true, ""},
	{"ord?r", "ordr", false, ""},
	{"ord??", "order", true, ""},
	{"[oa]rder", "order", true, ""},
	{"[oa]rder", "urder", false, ""},
	{"[^oa]rder", "urder", true, ""},
	{"[^oa]rder", "order", false, ""},
	{"[a-z]rder", "order", true, ""},
	{"[A-Z]rder", "order", false, ""},
	{"[z-a]rder", "order", true, "other"},     // Redis swaps a reversed range
	{"[a-]", "]", true, "error"},              // the range a..']', its ']' taken as its end
	{"[a-]", "a", true, "error"},              //
	{"[a-]", "-", false, "error"},             //
	{"order[", "order", false, "error"},       // an open class at the end matches nothing
	{"order[abc", "orderb", true, "error"},    // an open class runs to the end
	{"order[^", "orderx", true, "error"},      // ... a negated empty one matches any byte
	{"[]order", "order", false, "error"},      // an empty class matches nothing
	{"ord\\er", "order", true, ""},            // an escaped ordinary byte is itself
	{"ord\\*", "ord*", true, ""},              // an escaped star is a star
	{"ord\\*", "order", false, ""},            //
	{"order\\", "order\\", true, "error"},     // a '\' at the end is itself
	{"[\\]]x", "]x", true, ""},                // '\' in a class
	{"[\\^]x", "^x", true, ""},                //
	{"[a-\\]x", "^x", true, "error"},          // a range's ends are taken as they are: 'a'..'\\', then ']'
	{"[\\]-a]x", "^x", false, "other"},        // an escaped byte starts no range: ']', '-' and 'a'
	{"[-a]x", "-x", true, "error"},            // a '-' first is a member
	{"a[.:]b", "a.b", true, ""},               //
	{"a[.:]b", "a:b", true, ""},               //
	{"a*", strings.Repeat("a", 64), true, ""}, //
	{strings.Repeat("a", 65), strings.Repeat("a", 64), false, ""},
	{strings.Repeat("?", 64), strings.Repeat("a", 64), true, ""},
}

// TestGlobAsRedis: KEYS patterns match as Redis's do; where Go's
// path.Match answers otherwise, the case says so, which is why it is not
// used.
func TestGlobAsRedis(t *testing.T) {
	for _, tt := range globCases {
		if got := compileGlob([]byte(tt.pattern)).match(tt.name); got != tt.want {
			t.Errorf("KEYS %q on %q: got %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
		ok, err := path.Match(tt.pattern, tt.name)
		pm := ""
		switch {
		case err != nil:
			pm = "error"
		case ok != tt.want:
			pm = "other"
		}
		if pm != tt.pathMatch {
			t.Errorf("path.Match(%q, %q) = %v, %v; the case says %q", tt.pattern, tt.name, ok, err, tt.pathMatch)
		}
	}
}

// TestGlobPrefix: a pattern's literal start, which KEYS narrows the tags
// by, and every name a case matches has it.
func TestGlobPrefix(t *testing.T) {
	for _, tt := range []struct{ pattern, want string }{
		{"", ""},
		{"*", ""},
		{"order", "order"},
		{"ord*", "ord"},
		{"ord?r", "ord"},
		{"ord[ae]r", "ord"},
		{"ord[e]r*", "order"},  // a class of one byte is that byte
		{"ord\\*x*", "ord*x"},  // an escaped star is a star
		{"ord[^e]", "ord"},     //
		{"order\\", "order\\"}, // a '\' at the end is itself
		{"[a-a]b", "ab"},       // a range of one byte
	} {
		if got := compileGlob([]byte(tt.pattern)).prefix(); got != tt.want {
			t.Errorf("prefix of %q: got %q, want %q", tt.pattern, got, tt.want)
		}
	}
	for _, tt := range globCases {
		if p := compileGlob([]byte(tt.pattern)).prefix(); tt.want && !strings.HasPrefix(tt.name, p) {
			t.Errorf("KEYS %q matches %q, which lacks its prefix %q", tt.pattern, tt.name, p)
		}
	}
}

// TestGlobAgainstRedis: on a redis-server, KEYS answers what the matcher
// does, for the cases above and for thousands of patterns and names made
// of the bytes the rules turn on.
func TestGlobAgainstRedis(t *testing.T) {
	srv := redistest.Start(t)
	rdb := redis.NewClient(&redis.Options{Addr: srv.Addr()})
	t.Cleanup(func() { _ = rdb.Close() })
	ctx := context.Background()
	keysOf := func(pattern string) []string {
		t.Helper()
		got, err := rdb.Keys(ctx, pattern).Result()
		if err != nil {
			t.Fatalf("KEYS %q: %v", pattern, err)
		}
		slices.Sort(got)
		return got
	}
	for _, tt := range globCases {
		srv.FlushAll(t)
		if err := rdb.Set(ctx, tt.name, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if got := len(keysOf(tt.pattern)) == 1; got != tt.want {
			t.Errorf("redis-server: KEYS %q on %q: %v, the case says %v", tt.pattern, tt.name, got, tt.want)
		}
	}

	rng := rand.New(rand.NewPCG(23, 5))
	text := func(n int, from string) string {
		b := make([]byte, 1+rng.IntN(n))
		for i := range b {
			b[i] = from[rng.IntN(len(from))]
		}
		return string(b)
	}
	srv.FlushAll(t)
	names := map[string]bool{}
	for range 300 {
		names[text(6, `ab]^-\*`)] = true
	}
	for n := range names {
		if err := rdb.Set(ctx, n, "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	for range 3000 {
		pattern := text(8, `ab*?[]^-\`)
		g := compileGlob([]byte(pattern))
		var want []string
		for n := range names {
			if g.match(n) {
				want = append(want, n)
			}
		}
		slices.Sort(want)
		if got := keysOf(pattern); !slices.Equal(got, want) {
			t.Errorf("KEYS %q: redis-server answers %q, the matcher %q", pattern, got, want)
		}
	}
}
