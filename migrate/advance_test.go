package migrate

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/advance"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
	"github.com/idalloc/idalloc/workerlease"
)

func TestPlanAdvance(t *testing.T) {
	// snowflake.lease_ttl 30s + snowflake.max_drift_error 1s, the defaults.
	const leaseMin = 31 * time.Second
	cfgPath := writeConfig(t, `{"segment": {"max_step": 5000}}`)
	for _, tc := range []struct {
		name    string
		args    []string
		want    advance.Advance
		wantErr string // "" for none
	}{
		{
			name: "-by moves every tag and the leases by lease TTL + drift",
			args: []string{"-by", "5000000"},
			want: advance.Advance{Segments: true, Leases: true, By: 5_000_000, LeaseMin: leaseMin, MaxClockSkew: time.Second},
		},
		{
			name: "-for estimates with the config's max_step",
			args: []string{"-for", "2h", "-instances", "3", "-tags", "a, b,,c", "-dry-run"},
			want: advance.Advance{Segments: true, Leases: true, LeaseMin: leaseMin, MaxClockSkew: time.Second, DryRun: true,
				Estimate: advance.Estimate{For: 2 * time.Hour, MaxStep: 5000, Instances: 3}, Tags: []string{"a", "b", "c"}},
		},
		{
			name: "-lease-for",
			args: []string{"-by", "1", "-lease-for", "1h"},
			want: advance.Advance{Segments: true, Leases: true, By: 1, LeaseFor: time.Hour, LeaseMin: leaseMin, MaxClockSkew: time.Second},
		},
		{
			name: "-only segments",
			args: []string{"-only", "segments", "-by", "1"},
			want: advance.Advance{Segments: true, By: 1, LeaseMin: leaseMin, MaxClockSkew: time.Second},
		},
		{
			name: "-only leases, as far as -for says",
			args: []string{"-only", "leases", "-for", "2h"},
			want: advance.Advance{Leases: true, Estimate: advance.Estimate{For: 2 * time.Hour}, LeaseMin: leaseMin, MaxClockSkew: time.Second},
		},
		{
			name: "-only leases, lease TTL + drift",
			args: []string{"-only", "leases"},
			want: advance.Advance{Leases: true, LeaseMin: leaseMin, MaxClockSkew: time.Second},
		},
		{name: "neither -by nor -for", args: nil, wantErr: "give -by COUNT or -for DURATION"},
		{name: "-by and -for", args: []string{"-by", "1", "-for", "1h"}, wantErr: "-by and -for both given"},
		{name: "a negative -by", args: []string{"-by", "-5"}, wantErr: "-by -5: must be at least 1"},
		{name: "-by 0", args: []string{"-by", "0"}, wantErr: "-by 0: must be at least 1"},
		{name: "a negative -for", args: []string{"-for", "-1h"}, wantErr: "-for -1h0m0s: must be positive"},
		{name: "-by not a number", args: []string{"-by", "many"}, wantErr: `invalid value "many" for flag -by`},
		{name: "-for not a duration", args: []string{"-for", "2"}, wantErr: `invalid value "2" for flag -for`},
		{name: "-instances with -by", args: []string{"-by", "1", "-instances", "2"}, wantErr: "-instances sizes -for's estimate"},
		{name: "no instance", args: []string{"-for", "1h", "-instances", "0"}, wantErr: "-instances 0 must be at least 1"},
		{name: "an invalid tag", args: []string{"-by", "1", "-tags", "a b"}, wantErr: `-tags: "a b" is not a tag name`},
		{name: "-tags naming none", args: []string{"-by", "1", "-tags", ","}, wantErr: "-tags names no tag"},
		{name: "-lease-for below lease TTL + drift", args: []string{"-by", "1", "-lease-for", "5s"}, wantErr: "-lease-for 5s is below 31s"},
		{name: "-only what", args: []string{"-only", "tags", "-by", "1"}, wantErr: `-only "tags": want "segments" or "leases"`},
		{name: "-only leases with -by", args: []string{"-only", "leases", "-by", "1"}, wantErr: "-only leases moves no tag"},
		{name: "-only segments with -lease-for", args: []string{"-only", "segments", "-by", "1", "-lease-for", "1h"}, wantErr: "-only segments moves no lease"},
		{name: "an argument left over", args: []string{"-by", "1", "now"}, wantErr: `unexpected argument "now"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := planAdvance(append([]string{"-config", cfgPath}, tc.args...), io.Discard, io.Discard, noEnv)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("planAdvance(%q): %v", tc.args, err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("planAdvance(%q) error = %v, want one containing %q", tc.args, err, tc.wantErr)
			case tc.wantErr == "" && !reflect.DeepEqual(got, tc.want):
				t.Errorf("planAdvance(%q) =\n  %+v\nwant\n  %+v", tc.args, got, tc.want)
			}
		})
	}
}

func TestAdvanceHelp(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := runAdvance([]string{"-h"}, &stdout, &stderr, noEnv, sqlLeases)
	if !errors.Is(err, flag.ErrHelp) || !strings.Contains(stdout.String(), "Usage: idalloc advance") || stderr.Len() > 0 {
		t.Errorf("advance -h = %v, printing %q to stdout and %q to stderr; want flag.ErrHelp and the usage on stdout",
			err, stdout.String(), stderr.String())
	}
}

// TestAdvanceCommand runs the command on each engine as an operator does,
// with the server's config: what it prints, what it moves, and that a
// refused run moves nothing.
func TestAdvanceCommand(t *testing.T) {
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) { testAdvanceCommand(t, d) })
	}
}

func testAdvanceCommand(t *testing.T, d storetest.Driver) {
	ctx := context.Background()
	db := d.NewDB(t)
	cfgPath := writeConfig(t, fmt.Sprintf(`{"driver": %q, "dsn": %q}`, db.Driver, db.DSN))
	st := db.Open(t)
	if err := st.CreateTag(ctx, segment.Tag{AppTag: "order", Step: 100, Start: 1201}); err != nil {
		t.Fatal(err)
	}
	l, err := st.Acquire(ctx, workerlease.AcquireRequest{Cluster: "default", MaxWorkerID: 3, Token: "token-a", TTL: time.Minute, NowMS: 1})
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		err := runAdvance(append([]string{"-config", cfgPath}, args...), &out, io.Discard, noEnv, sqlLeases)
		return out.String(), err
	}
	maxIDs := func() string {
		tags, err := st.Tags(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var s []string
		for _, tg := range tags {
			s = append(s, fmt.Sprintf("%s=%d", tg.AppTag, tg.MaxID))
		}
		return strings.Join(s, " ")
	}

	if _, err := run("-by", "10", "-tags", "order,nope"); err == nil || !strings.Contains(err.Error(), `no tag "nope"`) {
		t.Errorf("advance -tags order,nope = %v, want the unknown tag refused", err)
	}
	if _, err := run("-by", "10", "-dry-run"); err != nil {
		t.Fatal(err)
	}
	if got, want := maxIDs(), "order=1200 test_business=0"; got != want {
		t.Errorf("after a refused run and a dry run: %s, want %s (nothing moved)", got, want)
	}

	before := time.Now()
	out, err := run("-by", "5000000")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("idalloc advance -by 5000000:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 || lines[0] != "tag order: max_id 1200 → 5001200" || lines[1] != "tag test_business: max_id 0 → 5000000" ||
		!strings.HasPrefix(lines[2], fmt.Sprintf("lease cluster default worker %d: last_timestamp_ms 0 → ", l.WorkerID)) ||
		!strings.HasPrefix(lines[3], "advanced: 2 tags moved, 10000000 IDs in all; 1 of 1 worker lease raised to last_timestamp_ms ") {
		t.Errorf("output:\n%s\nwant a line per tag, one for the lease and the summary", out)
	}
	if got, want := maxIDs(), "order=5001200 test_business=5000000"; got != want {
		t.Errorf("after advance -by 5000000: %s, want %s", got, want)
	}
	history, err := st.(historySource).LeaseTimestamps(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if floor := before.Add(31 * time.Second).UnixMilli(); len(history) != 1 || history[0].LastTimestampMS < floor {
		t.Errorf("lease history after advance = %+v, want last_timestamp_ms at least now + 31s (%d)", history, floor)
	}
	// The run that moved the store is in its audit log; the refused one
	// and the dry run are not.
	log, err := st.AuditLog(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(log) != 1 || log[0].Action != access.ActionAdvance || !strings.HasPrefix(log[0].Caller, "idalloc advance on ") ||
		log[0].Detail != `{"segments":true,"by":5000000,"leases":true}` {
		t.Errorf("audit log after the runs = %+v, want one advance entry by this command, by 5000000", log)
	}
}

// TestAdvanceInARegion: on the database of region 1 of 2 (its record, not
// the config, which says nothing of regions), -by counts the region's IDs:
// each max_id moves by twice as much, and the summary counts IDs.
func TestAdvanceInARegion(t *testing.T) {
	ctx := context.Background()
	db := storetest.SQLite().NewDB(t)
	st := db.Open(t)
	if err := segment.CheckRegion(ctx, st, segment.Region{Count: 2, ID: 1}); err != nil {
		t.Fatal(err)
	}
	cfgPath := writeConfig(t, fmt.Sprintf(`{"driver": "sqlite", "dsn": %q}`, db.DSN))
	var out bytes.Buffer
	if err := runAdvance([]string{"-config", cfgPath, "-by", "1000", "-only", "segments"}, &out, io.Discard, noEnv, sqlLeases); err != nil {
		t.Fatal(err)
	}
	want := "region 1 of 2: each tag's max_id moves by 2 × the count, the region's IDs being one number in 2\n" +
		"tag test_business: max_id 0 → 2000\n" +
		"advanced: 1 tag moved, 1000 IDs in all\n"
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
}

// TestAdvanceNamesTheDSNSource: refused credentials and a database
// without idalloc's tables are fixed where the dsn was set, so advance
// names that place, as the server's start does, never the password.
func TestAdvanceNamesTheDSNSource(t *testing.T) {
	dsn, cfg, wrong := storetest.EmptyMySQL(t)
	cases := []struct {
		name string
		dsn  string
		env  bool // the dsn comes from IDALLOC_DSN, not the file
		want []string
	}{
		{"wrong password, from the environment", wrong.FormatDSN(), true,
			[]string{`IDALLOC_DSN (key "dsn"): `, "credentials refused for " + cfg.User + "@" + cfg.Addr, "correct the user or password there"}},
		{"wrong password, in the file", wrong.FormatDSN(), false,
			[]string{`key "dsn": `, "credentials refused", "correct the user or password there"}},
		{"no tables, in the file", dsn, false,
			[]string{`key "dsn": open mysql ` + cfg.Addr + "/" + cfg.DBName, "idalloc's tables are missing", "schema.sql"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			body := `{"driver": "mysql", "dsn": "unused:x@tcp(127.0.0.1:1)/unused"}`
			environ := []string{"IDALLOC_DSN=" + c.dsn}
			if !c.env {
				body, environ = fmt.Sprintf(`{"driver": "mysql", "dsn": %q}`, c.dsn), noEnv
			}
			path := writeConfig(t, body)
			err := runAdvance([]string{"-config", path, "-by", "10"}, io.Discard, io.Discard, environ, sqlLeases)
			if err == nil {
				t.Fatal("advance: got no error")
			}
			t.Logf("idalloc advance: %v", err)
			if !c.env && !strings.Contains(err.Error(), "config "+path+": ") {
				t.Errorf("error %q does not name the config file %s", err, path)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if strings.Contains(err.Error(), wrong.Passwd) || strings.Contains(err.Error(), "supervisor") {
				t.Errorf("error %q shows the password or blames a database that is down", err)
			}
		})
	}
}

// sqlLeases opens the lease stores these tests configure, as main's opener
// does for lease.driver "sql": the main store itself. The Redis and etcd
// ones are main's to open (see the root's advanceLeases).
func sqlLeases(st store.Store, c config.LeaseConfig) (advance.Leases, func(), error) {
	if c.Driver != "sql" {
		return nil, nil, fmt.Errorf("lease.driver %q: these tests open only the main store", c.Driver)
	}
	return st, func() {}, nil
}

// writeConfig writes body as a config file of its own and returns its path.
func writeConfig(tb testing.TB, body string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// noEnv is an environment with no IDALLOC_* variable set.
var noEnv []string

// TestAdvanceReadsTheEnvironmentAsTheServer: advance takes every key's
// variable, a boolean's too, and refuses one that names no setting, naming
// the nearest, as the server's start does.
func TestAdvanceReadsTheEnvironmentAsTheServer(t *testing.T) {
	cfgPath := writeConfig(t, fmt.Sprintf(`{"driver": "sqlite", "dsn": %q}`, storetest.SQLite().NewDB(t).DSN))
	_, cfg, err := planAdvance([]string{"-config", cfgPath, "-by", "10"}, io.Discard, io.Discard,
		[]string{"IDALLOC_SNOWFLAKE_ENABLED=false", "IDALLOC_TEST_ANYTHING=1"})
	if err != nil || cfg.Snowflake.Enabled {
		t.Errorf("IDALLOC_SNOWFLAKE_ENABLED=false: snowflake.enabled %v, %v; want false", cfg.Snowflake.Enabled, err)
	}
	_, _, err = planAdvance([]string{"-config", cfgPath, "-by", "10"}, io.Discard, io.Discard, []string{"IDALLOC_DNS=x.db"})
	if err == nil || !strings.Contains(err.Error(), `IDALLOC_DNS names no setting (the nearest is IDALLOC_DSN, key "dsn")`) {
		t.Errorf("IDALLOC_DNS: got %v, want it refused naming IDALLOC_DSN", err)
	}
}
