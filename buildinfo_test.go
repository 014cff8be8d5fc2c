package main

import (
	"github.com/idalloc/idalloc/internal/tier"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestBuildStamp: what the linker sets wins; without it the build's own
// stamp, else "(devel)" and "unknown" (a test binary has no VCS stamp).
func TestBuildStamp(t *testing.T) {
	defer func(v, r string) { version, revision = v, r }(version, revision)

	version, revision = "", ""
	if got := readBuildStamp(); got.Version == "" || got.Revision == "" || got.GoVersion != runtime.Version() {
		t.Errorf("without -X: %+v, want a version, a revision and %s", got, runtime.Version())
	}
	version, revision = "v1.2.3", "0123abcd"
	got := readBuildStamp()
	if want := (buildStamp{"v1.2.3", "0123abcd", runtime.Version()}); got != want {
		t.Errorf("with -X: %+v, want %+v", got, want)
	}
	if want := "idalloc v1.2.3 (revision 0123abcd, " + runtime.Version() + ")"; got.String() != want {
		t.Errorf("-version line %q, want %q", got.String(), want)
	}
}

// TestVersionFlag builds the binary as the Dockerfile does, with a version
// and revision from -ldflags -X, and runs it with -version.
func TestVersionFlag(t *testing.T) {
	tier.Full(t, "builds the binary with -trimpath and -ldflags")
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH to build the binary with: %v", err)
	}
	bin := filepath.Join(t.TempDir(), "idalloc")
	build := exec.Command(goBin, "build", "-trimpath",
		"-ldflags=-s -w -X main.version=v9.8.7 -X main.revision=feedc0de", "-o", bin, ".")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", build, err, out)
	}
	out, err := exec.Command(bin, "-version").CombinedOutput()
	if want := "idalloc v9.8.7 (revision feedc0de, go"; err != nil || !strings.HasPrefix(string(out), want) {
		t.Errorf("idalloc -version: %q (%v), want a line starting %q", out, err, want)
	}
}

// TestScrapeIsClean wires a registry as main does, on each store, serves
// IDs and a snowflake lease, and checks the scrape: build info, the pool's
// figures, the lease as an info metric, and promtool check metrics clean.
func TestScrapeIsClean(t *testing.T) {
	promtool, promErr := exec.LookPath("promtool")
	for _, d := range storetest.Drivers() {
		t.Run(d.Name, func(t *testing.T) {
			st, ok := d.Open(t).(dataStore)
			if !ok {
				t.Fatalf("the %s store is not a dataStore", d.Name)
			}
			c := config.Default()
			c.Driver = d.Name
			cfg, err := c.Validate()
			if err != nil {
				t.Fatal(err)
			}
			reg, err := newRegistry(st, d.Name)
			if err != nil {
				t.Fatal(err)
			}
			srv := wire(t, st, cfg, reg).srv
			for _, target := range []string{"/alloc?app_tag=test_business", "/alloc?app_tag=test_business&count=3", "/snowflake"} {
				if rec := serveGet(srv, target); rec.Code != 200 {
					t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
				}
			}
			scrape := serveGet(srv, "/metrics").Body.String()

			b := readBuildStamp()
			for _, want := range []*regexp.Regexp{
				regexp.MustCompile(`(?m)^idalloc_build_info\{goversion="` + regexp.QuoteMeta(b.GoVersion) +
					`",revision="` + regexp.QuoteMeta(b.Revision) + `",version="` + regexp.QuoteMeta(b.Version) + `"\} 1$`),
				regexp.MustCompile(`(?m)^go_sql_open_connections\{db_name="` + d.Name + `"\} [1-9]`),
				regexp.MustCompile(`(?m)^go_sql_wait_duration_seconds_total\{db_name="` + d.Name + `"\} `),
				regexp.MustCompile(`(?m)^idalloc_workerlease_info\{cluster="default",worker_id="\d+"\} 1$`),
				regexp.MustCompile(`(?m)^idalloc_workerlease_left_seconds [1-9]`),
				regexp.MustCompile(`(?m)^idalloc_segment_ids_wasted_total\{reason="give_back_refused"\} 0$`),
				regexp.MustCompile(`(?m)^idalloc_ids_issued_total\{app_tag="test_business",mode="segment"\} 4$`),
			} {
				if !want.MatchString(scrape) {
					t.Errorf("scrape has no line matching %s", want)
				}
			}

			if promErr != nil {
				t.Skipf("promtool not installed (apt-get install prometheus): the scrape was not linted: %v", promErr)
			}
			check := exec.Command(promtool, "check", "metrics")
			check.Stdin = strings.NewReader(scrape)
			if out, err := check.CombinedOutput(); err != nil {
				t.Errorf("promtool check metrics: %v\n%s", err, out)
			}
		})
	}
}

func serveGet(srv *server.Server, target string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	srv.Handler().ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
	return rec
}
