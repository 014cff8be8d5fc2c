package e2e

import (
	"bytes"
	"errors"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// refusedWithin bounds how long a refused instance may run: it checks the
// record right after opening its store. It is a bound on a hang, not a
// measure.
const refusedWithin = 20 * time.Second

// TestRegionsMisconfigured: a database recorded as region 1 of 2 (by its
// first instance, which keeps serving) refuses every instance configured
// otherwise: as region 0 of 2 (it would issue region 0's IDs from region
// 1's rows), as region 1 of 3, and with no region at all (a single region). Each
// exits with a non-zero status, and its standard error names both the
// recorded and the configured values. The record is unchanged by them: an
// instance configured as region 1 of 2 still starts.
func TestRegionsMisconfigured(t *testing.T) {
	env := setup(t)
	dsn := env.db.newDatabase(t)
	first := startInstance(t, env, "recorded", dsn, regionConfig(2, 1, nil), true)
	first.createTag(t, "r_refused", 100)
	ids := takeIDs(t, first.ctl, "r_refused", 3)

	cases := []struct {
		name string
		cfg  map[string]any
		want []string // in its standard error
	}{
		{"another region.id", regionConfig(2, 0, nil), []string{"this database is region 1 of 2", "configured as region 0 of 2"}},
		{"another region.count", regionConfig(3, 1, nil), []string{"this database is region 1 of 2", "configured as region 1 of 3"}},
		{"no region config", config(nil), []string{"this database is region 1 of 2", "configured as a single region"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := newInstance(t, env, "refused", dsn, c.cfg)
			code, stderr := in.refusedStart(t)
			t.Logf("%s: exit status %d: %s", c.name, code, strings.TrimSpace(stderr))
			if code == 0 {
				t.Errorf("exit status 0, want non-zero")
			}
			for _, w := range c.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("standard error %q does not name %q", stderr, w)
				}
			}
		})
	}

	// Nothing changed: the first instance still serves, and a correctly
	// configured one starts.
	again := startInstance(t, env, "again", dsn, regionConfig(2, 1, nil), false)
	ids = slices.Concat(ids, takeIDs(t, first.ctl, "r_refused", 3), takeIDs(t, again.ctl, "r_refused", 3))
	for _, id := range ids {
		if id%2 != 1 {
			t.Errorf("region 1 of 2 issued %d, want ≡ 1 (mod 2)", id)
		}
	}
	if dups, examples := checkUnique(ids); dups > 0 {
		t.Errorf("%d duplicate IDs, e.g. %v", dups, examples)
	}
}

// TestRegionsRefuseWhatCannotBeSplit: in region 0 of 2, a scrambled tag
// cannot be created (each region's would have a key of its own, and two
// regions could issue the same ID), nor a dated one (its per-period
// counters are not split between regions), and IDs cannot be asked for as
// ranges (a region's IDs are every second number). Each is resp_code 1
// naming the field, and nothing is created: the refused tags stay unknown.
func TestRegionsRefuseWhatCannotBeSplit(t *testing.T) {
	env := setup(t)
	in := startInstance(t, env, "r0", env.db.newDatabase(t), regionConfig(2, 0, nil), true)
	in.createTag(t, "r_seq", 100)
	cases := []struct {
		name   string
		method string
		path   string
		body   string
		field  string
		tag    string // must stay unknown
	}{
		{"scrambled", http.MethodPost, "/tags", `{"app_tag":"r_scr","step":100,"format":"scrambled","length":10}`, "format", "r_scr"},
		{"dated", http.MethodPost, "/tags", `{"app_tag":"r_dated","format":"dated","period":"day","prefix":"ORD","length":6}`, "format", "r_dated"},
		{"ranges", http.MethodGet, "/alloc?app_tag=r_seq&count=10&as=ranges", "", "as", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := in.ctl.do(c.method, c.path, c.body)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s %s: HTTP %d %s", c.method, c.path, r.HTTPStatus, r.Msg)
			if r.HTTPStatus != http.StatusBadRequest || r.RespCode != 1 || r.Kind != "bad_request" || r.Field != c.field {
				t.Errorf("HTTP %d resp_code %d kind %q field %q (%q), want 400, 1, bad_request naming %q", r.HTTPStatus, r.RespCode, r.Kind, r.Field, r.Msg, c.field)
			}
			if c.tag == "" {
				return
			}
			if r, err := in.ctl.get("/alloc?app_tag=" + c.tag); err != nil || r.HTTPStatus != http.StatusNotFound {
				t.Errorf("/alloc of the refused tag %s: HTTP %d %q %v, want 404: it was created", c.tag, r.HTTPStatus, r.Msg, err)
			}
		})
	}
	if ids := takeIDs(t, in.ctl, "r_seq", 3); ids[0]%2 != 0 {
		t.Errorf("region 0 of 2 issued %v, want IDs ≡ 0 (mod 2)", ids)
	}
}

// TestRegionsRefusedAfterIssue: a single-region database that issued IDs
// 1-50 of a tag, restarted with region.count 2, is refused (non-zero
// exit, standard error naming the tag and idalloc migrate) and records no
// region; its single-region instance starts again as before. A database
// whose tags were created and never used becomes region 0 of 2 in place.
// The way the refusal names, idalloc migrate with -region-count and
// -region-id into a new database, gives a region 1 of 2 that starts and
// issues above 50, odd numbers only.
func TestRegionsRefusedAfterIssue(t *testing.T) {
	env := setup(t)
	dsn := env.db.newDatabase(t)
	single := startInstance(t, env, "single", dsn, config(nil), true)
	single.createTag(t, "r_issued", 100)
	if ids := takeIDs(t, single.ctl, "r_issued", 50); ids[0] != 1 || ids[49] != 50 {
		t.Fatalf("a single region issued %d … %d, want 1 … 50", ids[0], ids[49])
	}
	if _, err := single.stopGracefully(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	in := newInstance(t, env, "region0", dsn, regionConfig(2, 0, nil))
	code, stderr := in.refusedStart(t)
	t.Logf("region 0 of 2 on it: exit status %d: %s", code, strings.TrimSpace(stderr))
	if code == 0 {
		t.Errorf("exit status 0, want non-zero")
	}
	for _, w := range []string{`this database issued IDs as a single region (tag "r_issued" among them) and records no region`,
		"cannot become region 0 of 2 in place", "idalloc migrate", "-region-count 2 -region-id <its id>"} {
		if !strings.Contains(stderr, w) {
			t.Errorf("standard error %q does not say %q", stderr, w)
		}
	}
	if err := single.start(false); err != nil {
		t.Fatalf("the single region after the refusal: %v", err)
	}
	if ids := takeIDs(t, single.ctl, "r_issued", 1); ids[0] <= 50 {
		t.Errorf("the single region issued %d after the refusal, want above 50", ids[0])
	}
	if _, err := single.stopGracefully(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	unused := env.db.newDatabase(t)
	fresh := startInstance(t, env, "fresh", unused, config(nil), true)
	fresh.createTag(t, "r_unused", 100)
	if _, err := fresh.stopGracefully(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	startInstance(t, env, "fresh-region0", unused, regionConfig(2, 0, nil), false)

	copied := env.db.newDatabase(t)
	cmd := exec.CommandContext(t.Context(), env.bin, "migrate", "-from-driver", "mysql", "-from-dsn", dsn,
		"-to-driver", "mysql", "-to-dsn", copied, "-init-schema", "-region-count", "2", "-region-id", "1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("idalloc migrate into region 1 of 2: %v\n%s", err, out)
	}
	r1 := startInstance(t, env, "region1", copied, regionConfig(2, 1, nil), false)
	for _, id := range takeIDs(t, r1.ctl, "r_issued", 10) {
		if id <= 51 || id%2 != 1 {
			t.Errorf("region 1 of 2 on the copy issued %d, want odd and above everything issued", id)
		}
	}
}

// refusedStart runs an incarnation that must refuse to start and returns
// its exit status and standard error; it fails t if the process is still
// running after refusedWithin (and kills it, by PID).
func (in *instance) refusedStart(t *testing.T) (code int, stderr string) {
	t.Helper()
	cmd := in.command(false)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Start(); err != nil {
		t.Fatalf("%s: start idalloc: %v", in.name, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(refusedWithin):
		_ = cmd.Process.Kill()
		<-done
		t.Fatalf("%s: still running %s after its start (a refused config must stop it): %s%s", in.name, refusedWithin, out.Bytes(), errOut.Bytes())
	}
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode(), errOut.String()
	}
	if err != nil {
		t.Fatalf("%s: %v", in.name, err)
	}
	return 0, errOut.String()
}
