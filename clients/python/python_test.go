package python

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/buildtest"
	"github.com/idalloc/idalloc/internal/freeport"
)

func TestMain(m *testing.M) {
	code := m.Run()
	buildtest.Cleanup()
	os.Exit(code)
}

// TestPythonClient generates the stubs with gen-stubs.sh, starts idalloc
// with grpc_addr and alloc_auth on a fresh SQLite file, and runs
// example.py with Debian's python3 (or IDALLOC_TEST_PYTHON) and a tag
// token, which the client sends in the metadata: its IDs of test_business, taken by
// Next one at a time, Next in a batch, NextRanges and StreamRanges in that
// order, must be strictly increasing (so none repeats), its snowflake IDs
// too, and an unknown tag must be refused NOT_FOUND, kind unknown_tag.
// Then bench.py runs each of its calls for a moment, so that the command
// docs/performance.md took its figures with keeps working.
func TestPythonClient(t *testing.T) {
	python, why := pythonWithGRPC()
	if python == "" {
		t.Skip(why)
	}
	if _, err := exec.LookPath("protoc"); err != nil {
		t.Skip("protoc not installed (apt-get install -y protobuf-compiler): skipping the Python client")
	}
	stubs := t.TempDir()
	if out, err := run(context.Background(), []string{"PYTHON=" + python}, "bash", "gen-stubs.sh", stubs); err != nil {
		t.Fatalf("gen-stubs.sh: %v\n%s", err, out)
	}
	target, token := startIdalloc(t)
	// No __pycache__ beside the sources.
	env := []string{"PYTHONPATH=" + stubs, "PYTHONDONTWRITEBYTECODE=1"}

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	out, err := run(ctx, env, python, "example.py", target, "test_business", token)
	if err != nil {
		t.Fatalf("example.py: %v\n%s", err, out)
	}
	var got struct {
		Next, Batch, Stream, Snowflake []int64
		Ranges                         [][2]int64
		Refused                        struct{ Code, Kind, Field string }
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("example.py printed %q: %v", out, err)
	}
	var ranged []int64
	for _, r := range got.Ranges {
		for id := r[0]; id <= r[1]; id++ {
			ranged = append(ranged, id)
		}
	}
	for _, c := range []struct {
		name string
		ids  []int64
		want int
	}{
		{"next", got.Next, 3},
		{"batch", got.Batch, 5},
		{"ranges", ranged, 100},
		{"stream", got.Stream, 120},
		{"snowflake", got.Snowflake, 2},
	} {
		if len(c.ids) != c.want {
			t.Errorf("%s: got %d IDs, want %d: %v", c.name, len(c.ids), c.want, c.ids)
		}
	}
	segmentIDs := slices.Concat(got.Next, got.Batch, ranged, got.Stream)
	for _, ids := range [][]int64{segmentIDs, got.Snowflake} {
		for i, id := range ids {
			if id <= 0 || i > 0 && id <= ids[i-1] {
				t.Fatalf("ID %d is %d, after %v: want IDs above 0, strictly increasing", i, id, ids[max(i-1, 0)])
			}
		}
	}
	if got.Refused.Code != "NOT_FOUND" || got.Refused.Kind != "unknown_tag" {
		t.Errorf("unknown tag refused %+v, want code NOT_FOUND, kind unknown_tag", got.Refused)
	}
	t.Logf("%d segment IDs, %d to %d, strictly increasing; snowflake %v; refused %+v",
		len(segmentIDs), segmentIDs[0], segmentIDs[len(segmentIDs)-1], got.Snowflake, got.Refused)

	for _, call := range []struct{ name, count string }{{"next", "1"}, {"next", "1000"}, {"ranges", "100000"}, {"stream", "100000"}} {
		out, err := run(ctx, env, python, "bench.py", target, "test_business", call.name, call.count, "0.2", token)
		if err != nil {
			t.Fatalf("bench.py %s %s: %v\n%s", call.name, call.count, err, out)
		}
		var b struct{ IDs int64 }
		if err := json.Unmarshal([]byte(out), &b); err != nil || b.IDs <= 0 {
			t.Fatalf("bench.py %s %s printed %q (%v): want a count of IDs above 0", call.name, call.count, out, err)
		}
		t.Logf("bench.py %s %s: %s", call.name, call.count, strings.TrimSpace(out))
	}
}

// pythonWithGRPC returns a python3 that can import grpc and grpc_tools, or
// "" and why there is none: IDALLOC_TEST_PYTHON, else Debian's own, for
// which python3-grpcio and python3-grpc-tools install them. The python3
// first on PATH may be another Python, without Debian's packages.
func pythonWithGRPC() (string, string) {
	p := os.Getenv("IDALLOC_TEST_PYTHON")
	if p == "" {
		p = "/usr/bin/python3"
	}
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Sprintf("%s not installed: skipping the Python client", p)
	}
	if out, err := run(context.Background(), nil, p, "-c", "import grpc, grpc_tools"); err != nil {
		return "", fmt.Sprintf("%s cannot import grpc, grpc_tools (apt-get install -y python3-grpcio python3-grpc-tools): skipping the Python client: %s", p, lastLine(out))
	}
	return p, ""
}

// startIdalloc starts the idalloc binary on a fresh SQLite file with HTTP
// and gRPC on ports of their own and alloc_auth on, creates a token
// allowed test_business and no_such_tag (POST /tokens from loopback, no
// admin token being set), waits until it serves snowflake IDs (its worker
// lease held), and returns the gRPC address and the token. It is killed at
// t's cleanup, and its log shown if t failed.
func startIdalloc(t *testing.T) (string, string) {
	t.Helper()
	bin, err := buildtest.Idalloc()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	var addrs [2]string
	for i := range addrs {
		port, err := freeport.Get()
		if err != nil {
			t.Fatal(err)
		}
		addrs[i] = "127.0.0.1:" + strconv.Itoa(port)
	}
	httpAddr, grpcAddr := addrs[0], addrs[1]
	cfg, err := json.Marshal(map[string]any{
		"driver": "sqlite", "dsn": filepath.Join(dir, "idalloc.db"),
		"http_addr": httpAddr, "grpc_addr": grpcAddr, "shutdown_drain": "0s", "alloc_auth": true,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	logPath := filepath.Join(dir, "idalloc.log")
	log, err := os.Create(logPath)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-config", cfgPath)
	cmd.Dir = dir
	// The test's own IDALLOC_* variables would override the config.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "IDALLOC_") })
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = childAttr()
	if err := cmd.Start(); err != nil {
		log.Close()
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		_ = cmd.Wait()
		log.Close()
		close(done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-done
		if t.Failed() {
			out, _ := os.ReadFile(logPath)
			t.Logf("idalloc log:\n%s", out)
		}
	})

	hc := &http.Client{Timeout: time.Second}
	defer hc.CloseIdleConnections()
	base := "http://" + httpAddr
	waitFor(t, done, "/health", func() bool {
		resp, err := hc.Get(base + "/health")
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	resp, err := hc.Post(base+"/tokens", "application/json",
		strings.NewReader(`{"name":"python","app_tags":["test_business","no_such_tag"]}`))
	if err != nil {
		t.Fatal(err)
	}
	var made struct{ Token string }
	err = json.NewDecoder(resp.Body).Decode(&made)
	resp.Body.Close()
	if err != nil || resp.StatusCode != http.StatusCreated || made.Token == "" {
		t.Fatalf("POST /tokens: HTTP %d, token %q, %v", resp.StatusCode, made.Token, err)
	}
	waitFor(t, done, "/snowflake", func() bool {
		req, _ := http.NewRequest(http.MethodGet, base+"/snowflake", nil)
		req.Header.Set("Authorization", "Bearer "+made.Token)
		resp, err := hc.Do(req)
		if err != nil {
			return false
		}
		resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	})
	return grpcAddr, made.Token
}

// waitFor waits up to 30 s for ok, failing t if the process ends first
// (done closed) or the time is up.
func waitFor(t *testing.T, done <-chan struct{}, what string, ok func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !ok() {
		select {
		case <-done:
			t.Fatalf("idalloc exited waiting for %s", what)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not answered 200 within 30s", what)
		}
	}
}

// run runs a program in this directory with env added to the test's and
// returns its standard output, or its error output with the error.
func run(ctx context.Context, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil {
		return errOut.String(), fmt.Errorf("%s: %w", name, err)
	}
	return out.String(), nil
}

// lastLine is the last line of s: a Python traceback's error.
func lastLine(s string) string {
	s = strings.TrimSpace(s)
	return s[strings.LastIndexByte(s, '\n')+1:]
}
