package main

import (
	"bufio"
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/idalloc/idalloc/migrate"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// serveChildEnv, when set, makes this test binary an idalloc server, as
// `idalloc -config PATH` runs with PATH its value: a real instance in a
// process of its own, for the tests that need one holding a file.
const serveChildEnv = "IDALLOC_TEST_SERVE_CONFIG"

func TestMain(m *testing.M) {
	if path := os.Getenv(serveChildEnv); path != "" {
		if err := run([]string{"-config", path}); err != nil {
			fmt.Fprintln(os.Stderr, "idalloc:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// instance is an idalloc process serving a SQLite file (see TestMain).
type instance struct {
	cmd  *exec.Cmd
	url  string
	done chan error // the process's end, once
	log  bytes.Buffer
}

var servingLine = regexp.MustCompile(`msg="idalloc serving" addr=(\S+)`)

// startInstance starts an instance on the SQLite file at path, with
// snowflake IDs on, and returns once it has served a snowflake ID: it
// holds the file open and a worker lease. It is killed at t's cleanup.
func startInstance(t *testing.T, path string) *instance {
	t.Helper()
	return startServing(t, fmt.Sprintf(`{"driver": "sqlite", "dsn": %q, "http_addr": "127.0.0.1:0", "shutdown_drain": "0s"}`, path))
}

// startServing starts an instance with the config body (whose http_addr
// must be 127.0.0.1:0) and returns once it has served a snowflake ID.
func startServing(t *testing.T, body string) *instance {
	t.Helper()
	in, addr := spawn(t, body)
	select {
	case a := <-addr:
		in.url = "http://" + a
	case err := <-in.done:
		t.Fatalf("idalloc exited before serving: %v\n%s", err, in.log.String())
	case <-time.After(30 * time.Second):
		t.Fatal("idalloc did not start serving within 30s")
	}
	for deadline := time.Now().Add(15 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		resp, err := http.Get(in.url + "/snowflake")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return in
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("idalloc served no snowflake ID within 15s: %v", err)
		}
	}
}

// spawn starts this test binary as an idalloc process (TestMain) with the
// config body and returns it, and the channel its address comes on once
// it logs that it serves. Its stderr is in log once done has delivered.
// It is killed at t's cleanup.
func spawn(t *testing.T, body string) (*instance, <-chan string) {
	t.Helper()
	cfg := writeConfig(t, body)
	in := &instance{cmd: exec.Command(os.Args[0]), done: make(chan error, 1)}
	in.cmd.Env = []string{serveChildEnv + "=" + cfg}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IDALLOC_") { // the config file alone
			in.cmd.Env = append(in.cmd.Env, kv)
		}
	}
	stderr, err := in.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			in.log.WriteString(sc.Text() + "\n")
			if m := servingLine.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		in.done <- in.cmd.Wait()
		close(in.done)
	}()
	t.Cleanup(func() {
		_ = in.cmd.Process.Kill()
		<-in.done
	})
	return in, addr
}

// stop sends sig and waits for the process to end.
func (in *instance) stop(t *testing.T, sig syscall.Signal) {
	t.Helper()
	if err := in.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	select {
	case <-in.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("idalloc did not end within 30s of %v", sig)
	}
}

// TestMigrateRefusesASQLiteFileInUse runs idalloc migrate against a file a
// real idalloc process serves: refused, naming the process, with nothing
// written to the target; copied with -force; refused on the live lease an
// instance killed with -9 leaves; copied once the instance has stopped
// gracefully.
func TestMigrateRefusesASQLiteFileInUse(t *testing.T) {
	cases := []struct {
		name  string
		state string // "serving", "killed" (kill -9) or "stopped" (SIGTERM)
		force bool
		want  []string // in the error; none: migrated
		never []string // in the error or output
	}{
		{"served by a running instance", "serving", false,
			[]string{"the sqlite source is in use: process {pid} holds {path} open", `cluster "default" worker ID 0 is leased to`,
				"Stop every instance on it first", "add -force"}, nil},
		{"served, with -force", "serving", true, nil, nil},
		{"killed with -9: its lease is live", "killed", false,
			[]string{`the sqlite source is in use: cluster "default" worker ID 0 is leased to "`, "(the database's clock)"},
			[]string{"holds"}},
		{"stopped gracefully", "stopped", false, nil, []string{"in use"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := t.Context()
			src := storetest.SQLite().NewDB(t)
			st := src.Open(t)
			if err := st.CreateTag(ctx, segment.Tag{AppTag: "order", Step: 10, Start: 1}); err != nil {
				t.Fatal(err)
			}
			if err := st.Close(); err != nil { // the instance's alone
				t.Fatal(err)
			}
			in := startInstance(t, src.DSN)
			switch c.state {
			case "killed":
				in.stop(t, syscall.SIGKILL)
			case "stopped":
				in.stop(t, syscall.SIGTERM)
			}
			dst := storetest.SQLite().NewDB(t)
			args := []string{"-from-driver", "sqlite", "-from-dsn", src.DSN, "-to-driver", "sqlite", "-to-dsn", dst.DSN}
			if c.force {
				args = append(args, "-force")
			}
			var out bytes.Buffer
			err := migrate.Migrate(args, &out, &out)
			got := out.String()
			if err != nil {
				got = err.Error() + "\n" + got
				t.Logf("idalloc migrate: %v", err)
			}
			for _, n := range c.never {
				if strings.Contains(got, n) {
					t.Errorf("got %q, want nothing saying %q", got, n)
				}
			}
			if len(c.want) == 0 {
				if err != nil {
					t.Fatalf("migrate: got %v, want the source migrated", err)
				}
				if c.force && !strings.Contains(got, "source in use, copied anyway (-force)") {
					t.Errorf("output %q does not say the source was in use", got)
				}
				return
			}
			if err == nil {
				t.Fatalf("migrate: got no error, want one saying %q", c.want)
			}
			for _, w := range c.want {
				w = strings.NewReplacer("{pid}", strconv.Itoa(in.cmd.Process.Pid), "{path}", src.DSN).Replace(w)
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			to, oerr := store.OpenSQLite(ctx, dst.DSN)
			if oerr != nil {
				t.Fatal(oerr)
			}
			defer to.Close()
			tags, oerr := to.Tags(ctx)
			if oerr != nil {
				t.Fatal(oerr)
			}
			for _, tg := range tags {
				if tg.AppTag == "order" {
					t.Errorf("the refused migrate wrote tag %q to the target", tg.AppTag)
				}
			}
		})
	}
}
