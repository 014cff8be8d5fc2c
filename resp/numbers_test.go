package resp

import (
	"slices"
	"strconv"
	"testing"

	"github.com/idalloc/idalloc/segment"
)

// TestOneReadingOfEachCommand: a number with a sign, leading zeros or
// another base, and an HSET field given twice, are refused naming the
// argument or field (docs/api.md §2, last paragraph), so that a proxy, a log
// and idalloc never read two different commands from one; and refused
// commands change nothing.
func TestOneReadingOfEachCommand(t *testing.T) {
	in := start(t, options{})
	c := dialRaw(t, in.addr)
	get := func() int64 {
		t.Helper()
		if head := c.send(t, bulk("GET", "test_business")); head[0] != '$' {
			t.Fatalf("GET test_business = %q", head)
		}
		id, err := strconv.ParseInt(c.line(t), 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	const (
		badCount = "-ERR invalid count: must be an integer from 1 to 1000"
		digits   = ": want an integer, in decimal digits without '+' or leading zeros"
	)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"IDS count with leading zeros", []string{"IDS", "test_business", "007"}, badCount},
		{"IDS count with a plus", []string{"IDS", "test_business", "+5"}, badCount},
		{"IDS count in hex", []string{"IDS", "test_business", "0x10"}, badCount},
		{"IDS count negative", []string{"IDS", "test_business", "-5"}, badCount},
		{"SNOWFLAKE count in hex", []string{"SNOWFLAKE", "0x10"}, badCount},
		{"SNOWFLAKE count with leading zeros", []string{"SNOWFLAKE", "010"}, badCount},
		{"SNOWFLAKE count with a plus", []string{"SNOWFLAKE", "+5"}, badCount},
		{"HSET step with leading zeros", []string{"HSET", "t", "step", "0100"}, "-ERR invalid step" + digits},
		{"HSET step with a plus", []string{"HSET", "t", "step", "+5"}, "-ERR invalid step" + digits},
		{"HSET step in hex", []string{"HSET", "t", "step", "0x10"}, "-ERR invalid step" + digits},
		{"HSET start with leading zeros", []string{"HSET", "t", "step", "5", "start", "007"}, "-ERR invalid start" + digits},
		{"HSET starting minus zero", []string{"HSET", "t", "starting", "-0"}, "-ERR invalid starting" + digits},
		{"HSET length with a leading zero", []string{"HSET", "t", "type", "2", "length", "08"}, "-ERR invalid length" + digits},
		{"HSET type with a leading zero", []string{"HSET", "t", "type", "02"}, "-" + errBadType.line},
		{"HSET field twice", []string{"HSET", "t", "step", "5", "step", "10"}, `-ERR field "step" given twice: send each field once`},
		{"HSET field twice in two cases", []string{"HSET", "t", "step", "5", "STEP", "10"}, `-ERR field "step" given twice: send each field once`},
		{"HSET start and starting", []string{"HSET", "t", "start", "5", "starting", "5"}, `-ERR field "starting" given twice: send each field once`},
		{"HELLO protocol with a leading zero", []string{"HELLO", "02"}, "-" + errNoProto.line},
	}
	before := get()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := c.send(t, bulk(tc.args...)); got != tc.want {
				t.Errorf("%q = %q, want %q", tc.args, got, tc.want)
			}
		})
	}
	if after := get(); after != before+1 {
		t.Errorf("GET after the refusals = %d, want %d: a refused IDS took IDs", after, before+1)
	}
	if slices.ContainsFunc(in.alloc.Tags(), func(tag segment.Tag) bool { return tag.AppTag == "t" }) {
		t.Error("a refused HSET created tag t")
	}
	// The one reading of each is served.
	for _, args := range [][]string{{"IDS", "test_business", "10"}, {"SNOWFLAKE", "10"}} {
		if got := c.send(t, bulk(args...)); got != "*10" {
			t.Fatalf("%q = %q, want an array of 10", args, got)
		}
		for range 20 {
			c.line(t)
		}
	}
	if got := c.send(t, bulk("HSET", "t", "step", "100", "start", "1")); got != ":2" {
		t.Fatalf("HSET t step 100 start 1 = %q, want :2", got)
	}
}
