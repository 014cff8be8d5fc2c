package main

import (
	"github.com/idalloc/idalloc/internal/tier"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/buildinfo"
	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/server"
	"github.com/idalloc/idalloc/store/storetest"
)

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
			st := d.Open(t)
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

			b := buildinfo.Read(version, revision)
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
