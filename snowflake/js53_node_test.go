package snowflake

import (
	"encoding/json"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
)

// js53Check is run by node over a JSON array of decimal ID strings, in the
// order the generator issued them. Each must be a safe integer whose
// Number is exactly the ID (String(Number(s)) === s, BigInt(Number(s)) ===
// BigInt(s)). Then a shuffled copy is sorted three ways, and each must give
// the issue order back: as JS numbers (a - b), as BigInt, and as decimal
// strings left-padded with zeros to one length, compared as strings. Equal
// orders mean a front end comparing the numbers it parsed orders IDs as the
// server issued them, by time, and as exact 64-bit integers would.
const js53Check = `
const ids = JSON.parse(require('fs').readFileSync(0, 'utf8'));
const fail = (m) => { console.error(m); process.exit(1); };
for (const s of ids) {
  const n = Number(s);
  if (!Number.isSafeInteger(n) || String(n) !== s || BigInt(n) !== BigInt(s)) fail('not a safe integer: ' + s);
}
const width = Math.max(...ids.map((s) => s.length));
const pad = (s) => s.padStart(width, '0');
let seed = 1;
const shuffled = ids.slice();
for (let i = shuffled.length - 1; i > 0; i--) {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  const j = seed % (i + 1);
  [shuffled[i], shuffled[j]] = [shuffled[j], shuffled[i]];
}
const orders = {
  number: shuffled.slice().sort((a, b) => Number(a) - Number(b)),
  bigint: shuffled.slice().sort((a, b) => (BigInt(a) < BigInt(b) ? -1 : BigInt(a) > BigInt(b) ? 1 : 0)),
  string: shuffled.slice().sort((a, b) => (pad(a) < pad(b) ? -1 : pad(a) > pad(b) ? 1 : 0)),
};
for (const [how, got] of Object.entries(orders)) {
  for (let i = 0; i < ids.length; i++) {
    if (got[i] !== ids[i]) fail('sorted as ' + how + ', position ' + i + ' holds ' + got[i] + ', issued ' + ids[i]);
  }
}
for (let i = 1; i < ids.length; i++) {
  if (!(Number(ids[i - 1]) < Number(ids[i]))) fail('not increasing as numbers at ' + i);
}
console.log(ids.length);
`

// TestJS53IDsInNode runs JS53 generators, one on the real clock and one on
// a fake clock over the layout's last milliseconds (up to 2^53-1 itself),
// and has node check every ID with js53Check.
func TestJS53IDsInNode(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("node not installed: JS53 IDs not checked in JavaScript")
	}
	layout, err := NewJS53Layout(time.Time{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64

	// On the real clock, with the random sequence start.
	g, err := New(Settings{Layout: layout, WorkerID: 37})
	if err != nil {
		t.Fatal(err)
	}
	for range 20000 {
		id, err := g.Next()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}

	// The last 30 ms of the layout, every sequence of the highest worker.
	c := testclock.New(layout.End().Add(-30 * time.Millisecond))
	g = newFakeGenerator(t, c, Settings{Layout: layout, WorkerID: layout.MaxWorkerID(), DisableRandomStart: true})
	for {
		id, err := g.Next()
		if errors.Is(err, ErrTimeExhausted) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if last := ids[len(ids)-1]; last != 1<<53-1 {
		t.Fatalf("the last ID of the layout is %d, want 2^53-1", last)
	}

	dec := make([]string, len(ids))
	for i, id := range ids {
		if i > 0 && id <= ids[i-1] {
			t.Fatalf("ID %d (%d) not above the one before (%d)", i, id, ids[i-1])
		}
		dec[i] = strconv.FormatInt(id, 10)
	}
	in, err := json.Marshal(dec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(node, "-e", js53Check)
	cmd.Stdin = strings.NewReader(string(in))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, out)
	}
	if got := strings.TrimSpace(string(out)); got != strconv.Itoa(len(ids)) {
		t.Fatalf("node checked %s IDs, want %d", got, len(ids))
	}
}
