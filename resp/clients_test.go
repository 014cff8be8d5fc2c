package resp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// ioredisScript connects with ioredis (its ready check sends INFO), then
// PINGs, GETs twice, sends IDS and a pipeline of GETs, and prints what it
// got as one JSON line.
const ioredisScript = `
const Redis = require('ioredis');
const [host, port] = process.argv.slice(2);
const r = new Redis({host, port: Number(port), connectTimeout: 5000, maxRetriesPerRequest: 1,
  retryStrategy: () => null});
(async () => {
  let version = '?';
  try { version = require('ioredis/package.json').version; } catch (e) {}
  const out = {client: 'ioredis ' + version};
  out.ping = await r.ping();
  out.get = [await r.get('test_business'), await r.get('test_business')];
  out.ids = await r.call('IDS', 'test_business', '5');
  const res = await r.pipeline(Array.from({length: 10}, () => ['get', 'test_business'])).exec();
  out.pipeline = res.map(([err, v]) => { if (err) throw err; return v; });
  console.log(JSON.stringify(out));
  r.disconnect();
})().catch((e) => { console.error(String(e)); process.exit(1); });
`

// redisPyScript does the same with redis-py; its pipeline without
// transaction=False would wrap the GETs in MULTI/EXEC.
const redisPyScript = `
import json, sys
import redis
host, port = sys.argv[1], int(sys.argv[2])
r = redis.Redis(host=host, port=port, socket_timeout=5, socket_connect_timeout=5, decode_responses=True)
out = {"client": "redis-py " + redis.__version__}
out["ping"] = r.ping()
out["get"] = [r.get("test_business"), r.get("test_business")]
out["ids"] = r.execute_command("IDS", "test_business", 5)
p = r.pipeline(transaction=False)
for _ in range(10):
    p.get("test_business")
out["pipeline"] = p.execute()
print(json.dumps(out))
`

// TestRedisClients runs ioredis (Node) and redis-py (Python), the clients
// docs/api.md §6 names besides go-redis, against the front end: each connects
// as it does by default, PINGs, GETs test_business twice, asks IDS for 5
// and pipelines 10 GETs. Every ID must be above the one before, across
// both clients, since they share one instance. Each client is skipped
// with a one-line reason when it is not installed: ioredis is found
// through IDALLOC_TEST_NODE_PATH (used as NODE_PATH: npm install --prefix
// DIR ioredis, then DIR/node_modules), redis-py in a python3 that can
// import redis (IDALLOC_TEST_PYTHON, python3 on PATH, or Debian's
// /usr/bin/python3, for which python3-redis installs it).
func TestRedisClients(t *testing.T) {
	in := start(t, options{noFlake: true})
	host, port, _ := net.SplitHostPort(in.addr)
	var last int64 // the highest ID seen, across the clients

	t.Run("ioredis", func(t *testing.T) {
		node, err := exec.LookPath("node")
		if err != nil {
			t.Skip("node not installed: skipping ioredis")
		}
		env := os.Environ()
		if p := os.Getenv("IDALLOC_TEST_NODE_PATH"); p != "" {
			env = append(env, "NODE_PATH="+p)
		}
		if out, err := clientRun(env, node, "-e", "require.resolve('ioredis')"); err != nil {
			t.Skipf("ioredis not found (npm install --prefix DIR ioredis; IDALLOC_TEST_NODE_PATH=DIR/node_modules): %s", firstLine(out))
		}
		last = checkClientRun(t, last, env, node, writeScript(t, "client.js", ioredisScript), host, port)
	})

	t.Run("redis-py", func(t *testing.T) {
		python, why := pythonWithRedis()
		if python == "" {
			t.Skip(why)
		}
		last = checkClientRun(t, last, os.Environ(), python, writeScript(t, "client.py", redisPyScript), host, port)
	})
}

// pythonWithRedis returns a python3 that can import redis, or "" and why
// there is none.
func pythonWithRedis() (string, string) {
	candidates := []string{os.Getenv("IDALLOC_TEST_PYTHON")}
	if p, err := exec.LookPath("python3"); err == nil {
		candidates = append(candidates, p)
	}
	candidates = append(candidates, "/usr/bin/python3")
	tried := 0
	for _, p := range slices.Compact(candidates) {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err != nil {
			continue
		}
		tried++
		if _, err := clientRun(nil, p, "-c", "import redis"); err == nil {
			return p, ""
		}
	}
	if tried == 0 {
		return "", "python3 not installed: skipping redis-py"
	}
	return "", "no python3 here can import redis (apt-get install -y python3-redis): skipping redis-py"
}

func writeScript(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// clientRun runs a client program for at most a minute and returns its
// standard output, or its error output with the error.
func clientRun(env []string, name string, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return errOut.String(), fmt.Errorf("%s: %w", name, err)
	}
	return out.String(), nil
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(s), "\n")
	return line
}

// checkClientRun runs a client script and checks its answers: PING
// answered, then 2 + 5 + 10 IDs in strictly increasing order, all above
// after. It returns the last ID.
func checkClientRun(t *testing.T, after int64, env []string, name string, args ...string) int64 {
	t.Helper()
	out, err := clientRun(env, name, args...)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var got struct {
		Client   string `json:"client"`
		Ping     any    `json:"ping"`
		Get      []any  `json:"get"`
		IDs      []any  `json:"ids"`
		Pipeline []any  `json:"pipeline"`
	}
	dec := json.NewDecoder(strings.NewReader(out))
	dec.UseNumber() // IDs as the digits sent, not float64
	if err := dec.Decode(&got); err != nil {
		t.Fatalf("client output %q: %v", out, err)
	}
	if got.Ping != "PONG" && got.Ping != true {
		t.Errorf("%s: PING = %v, want PONG", got.Client, got.Ping)
	}
	if len(got.Get) != 2 || len(got.IDs) != 5 || len(got.Pipeline) != 10 {
		t.Fatalf("%s: got %d GET, %d IDS and %d pipelined answers, want 2, 5, 10: %s", got.Client, len(got.Get), len(got.IDs), len(got.Pipeline), out)
	}
	prev := after
	for i, v := range slices.Concat(got.Get, got.IDs, got.Pipeline) {
		id, err := strconv.ParseInt(fmt.Sprint(v), 10, 64)
		if err != nil || id <= prev {
			t.Fatalf("%s: ID %d = %v, want an integer above %d: %s", got.Client, i, v, prev, out)
		}
		prev = id
	}
	t.Logf("%s: PING %v, GET %v, IDS %v, pipelined GETs %v", got.Client, got.Ping, got.Get, got.IDs, got.Pipeline)
	return prev
}
