package e2e

import (
	"context"
	"errors"
	"fmt"
	"github.com/idalloc/idalloc/internal/tier"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/internal/buildtest"
	"github.com/idalloc/idalloc/internal/freeport"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
)

// galeraProvider is galera-4's wsrep provider as Debian installs it.
const galeraProvider = "/usr/lib/galera/libgalera_smm.so"

// galeraSynced bounds every wait for a node to reach Synced.
const galeraSynced = 60 * time.Second

// galeraCluster is a 3-node MariaDB Galera cluster on loopback ports of its
// own, started once per test process for the Galera tests and torn down by
// TestMain. Its nodes run as the mysql user, each with its own defaults file,
// datadir, tmpdir, socket, pid file and error log under dir.
type galeraCluster struct {
	dir     string    // 0755 root of everything below; removed at close
	env     *suiteEnv // the idalloc binary (db is nil)
	nodes   [3]*galeraNode
	bringUp time.Duration
	phases  []string // how long each step of the bring-up took

	mu  sync.Mutex
	dbs int
}

var galera struct {
	once sync.Once
	c    *galeraCluster
	skip string
	err  error
}

// closeGalera stops the cluster if a test started it (called by TestMain).
func closeGalera() {
	if galera.c != nil {
		galera.c.close()
	}
}

// setupGalera returns the shared cluster, starting it on first use. It skips
// t with a one-line reason when the cluster cannot run here, and fails t
// when it could not be started. When t fails, the end of every node's error
// log is logged.
func setupGalera(t *testing.T) *galeraCluster {
	t.Helper()
	tier.Full(t, "a 3-node MariaDB Galera cluster")
	started := false
	galera.once.Do(func() {
		started = true
		galera.c, galera.skip, galera.err = startGalera()
	})
	switch {
	case galera.skip != "":
		t.Skip(galera.skip)
	case galera.err != nil:
		t.Fatalf("galera cluster: %v", galera.err)
	}
	c := galera.c
	if err := c.heal(); err != nil {
		t.Fatalf("galera cluster left unhealthy by an earlier test: %v", err)
	}
	if started {
		t.Logf("galera: 3-node cluster up in %s (%s)", c.bringUp.Round(100*time.Millisecond), strings.Join(c.phases, ", "))
	}
	t.Cleanup(func() {
		if t.Failed() {
			for _, n := range c.nodes {
				t.Logf("--- galera node %d (127.0.0.1:%d): last lines of its error log:\n%s", n.n, n.port, n.logTail(10))
			}
		}
	})
	return c
}

// galeraMissing says why the cluster cannot run here, or "".
func galeraMissing() (reason, mariadbd, installDB string, mysqlUser *user.User) {
	mariadbd = findBinary("mariadbd", "/usr/sbin/mariadbd", "/usr/local/sbin/mariadbd", "/usr/libexec/mariadbd")
	installDB = findBinary("mariadb-install-db", "/usr/bin/mariadb-install-db", "/usr/local/bin/mariadb-install-db")
	u, uerr := user.Lookup("mysql")
	_, gerr := os.Stat(galeraProvider)
	switch {
	case os.Geteuid() != 0:
		reason = "galera: not root: skipping the Galera tests (their nodes run as the mysql user)"
	case mariadbd == "" || installDB == "":
		reason = "galera: no mariadbd or mariadb-install-db binary: skipping the Galera tests"
	case gerr != nil:
		reason = "galera: no " + galeraProvider + " (package galera-4): skipping the Galera tests"
	case findBinary("rsync", "/usr/bin/rsync") == "":
		reason = "galera: no rsync (needed for state transfers): skipping the Galera tests"
	case uerr != nil:
		reason = "galera: no mysql user: skipping the Galera tests"
	}
	return reason, mariadbd, installDB, u
}

func startGalera() (*galeraCluster, string, error) {
	reason, mariadbd, installDB, mysqlUser := galeraMissing()
	if reason != "" {
		return nil, reason, nil
	}
	uid, err1 := strconv.ParseUint(mysqlUser.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(mysqlUser.Gid, 10, 32)
	if err := errors.Join(err1, err2); err != nil {
		return nil, "", fmt.Errorf("mysql user: %w", err)
	}
	began := time.Now()
	dir, err := os.MkdirTemp("", "idalloc-galera-")
	if err != nil {
		return nil, "", err
	}
	c := &galeraCluster{dir: dir, env: &suiteEnv{dir: dir}}
	fail := func(err error) (*galeraCluster, string, error) {
		c.close()
		return nil, "", err
	}
	// MkdirTemp makes it 0700: the nodes, running as mysql, must traverse it.
	if err := os.Chmod(dir, 0o755); err != nil {
		return fail(err)
	}
	phase := time.Now()
	lap := func(what string) {
		c.phases = append(c.phases, what+" "+time.Since(phase).Round(100*time.Millisecond).String())
		phase = time.Now()
	}
	if c.env.bin, err = buildtest.Idalloc(); err != nil {
		return fail(err)
	}
	lap("build idalloc")

	// Four ports per node: client, group communication, IST, SST.
	var ports [3][4]int
	var gcomm []string
	for i := range ports {
		for j := range ports[i] {
			if ports[i][j], err = freeport.Get(); err != nil {
				return fail(err)
			}
		}
		gcomm = append(gcomm, "127.0.0.1:"+strconv.Itoa(ports[i][1]))
	}
	for i := range c.nodes {
		n := &galeraNode{
			n: i + 1, dir: filepath.Join(dir, fmt.Sprintf("node%d", i+1)), port: ports[i][0],
			uid: uint32(uid), gid: uint32(gid), mariadbd: mariadbd,
		}
		n.cnf = filepath.Join(n.dir, "my.cnf")
		n.logPath = filepath.Join(n.dir, "mariadbd.err")
		if err := n.prepare(ports[i], strings.Join(gcomm, ",")); err != nil {
			return fail(err)
		}
		c.nodes[i] = n
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	install := exec.CommandContext(ctx, installDB, "--defaults-file="+c.nodes[0].cnf, "--user=mysql",
		"--skip-test-db", "--auth-root-authentication-method=normal")
	install.Dir = c.nodes[0].dir
	install.SysProcAttr = childAttr()
	if out, err := install.CombinedOutput(); err != nil {
		return fail(fmt.Errorf("mariadb-install-db on node 1: %v\n%s", err, tail(out, 20)))
	}
	lap("install node 1")
	// Node 1 bootstraps the cluster; 2 and 3 join one after the other, each
	// with a full rsync state transfer.
	for i, n := range c.nodes {
		var extra []string
		if i == 0 {
			extra = []string{"--wsrep-new-cluster"}
		}
		if err := n.start(extra...); err != nil {
			return fail(err)
		}
		if err := n.waitSynced(galeraSynced); err != nil {
			return fail(err)
		}
		lap(fmt.Sprintf("node %d Synced", n.n))
	}
	c.bringUp = time.Since(began)
	return c, "", nil
}

// heal restarts a node an earlier test left dead and waits until every
// node is Synced, so each test starts on a whole cluster.
func (c *galeraCluster) heal() error {
	for _, n := range c.nodes {
		if cmd, done := n.running(); cmd != nil {
			select {
			case <-done:
				if _, _, err := n.restart(); err != nil {
					return err
				}
			default:
			}
		}
		if err := n.waitSynced(galeraSynced); err != nil {
			return err
		}
	}
	return nil
}

func (c *galeraCluster) close() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		if n != nil {
			wg.Go(n.stop)
		}
	}
	wg.Wait()
	for _, n := range c.nodes {
		if n != nil && n.admin != nil {
			_ = n.admin.Close()
		}
	}
	_ = os.RemoveAll(c.dir)
}

// newDatabase creates a fresh database for t on node 1 and waits until
// every node has it. It returns the database's name; node i's DSN for it is
// c.nodes[i].dsn(name).
func (c *galeraCluster) newDatabase(t *testing.T) string {
	t.Helper()
	c.mu.Lock()
	c.dbs++
	name := fmt.Sprintf("g%d_%s", c.dbs, sanitize(t.Name()))
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if _, err := c.nodes[0].admin.ExecContext(ctx, "CREATE DATABASE "+name); err != nil {
		t.Fatalf("create database %s on node 1: %v", name, err)
	}
	c.waitEverywhere(t, "database "+name, "SELECT 1 FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = ?", name)
	return name
}

// waitEverywhere polls query on every node until it returns a row (up to
// 30s): what was written on one node has been applied on all.
func (c *galeraCluster) waitEverywhere(t *testing.T, what, query string, args ...any) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for _, n := range c.nodes {
		for {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
			var v any
			err := n.admin.QueryRowContext(ctx, query, args...).Scan(&v)
			cancel()
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not on galera node %d after 30s: %v", what, n.n, err)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// galeraStep is the tag step of the Galera tests: small, so that segment
// fetches from the three nodes collide all the time.
const galeraStep = 10

// galeraSchema applies schema.sql through node 1, creates tag with step,
// and waits until every node has the tag's row.
func galeraSchema(t *testing.T, c *galeraCluster, db, tag string, step int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	st, err := store.OpenMySQL(ctx, c.nodes[0].dsn(db), store.MySQLOptions{InitSchema: true})
	if err != nil {
		t.Fatalf("open store on galera node 1 with the schema: %v", err)
	}
	defer st.Close()
	if err := st.CreateTag(ctx, segment.Tag{AppTag: tag, Step: step}); err != nil {
		t.Fatalf("create tag %s on galera node 1: %v", tag, err)
	}
	c.waitEverywhere(t, "tag "+tag, "SELECT step FROM "+db+".segments WHERE app_tag = ?", tag)
}
