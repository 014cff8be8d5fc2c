package main

import (
	"database/sql"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// version and revision name the build when the linker is told, as the
// Dockerfile does from its build arguments:
//
//	go build -ldflags "-X main.version=v1.4.0 -X main.revision=$(git rev-parse HEAD)"
//
// Left empty they come from the build's own stamp (runtime/debug.ReadBuildInfo):
// the main module's version, which go build derives from the checkout's VCS
// tag (v1.4.0, or a pseudo-version, +dirty with local changes), and its
// vcs.revision. A build without either (a build context without .git, go
// run of a tree that is no checkout) says "(devel)" and "unknown".
var version, revision string

// buildStamp is what this binary says it is: -version and idalloc_build_info.
type buildStamp struct {
	Version, Revision, GoVersion string
}

func readBuildStamp() buildStamp {
	s := buildStamp{Version: version, Revision: revision, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if s.Version == "" {
			s.Version = bi.Main.Version
		}
		for _, kv := range bi.Settings {
			if kv.Key == "vcs.revision" && s.Revision == "" {
				s.Revision = kv.Value
			}
		}
	}
	if s.Version == "" {
		s.Version = "(devel)"
	}
	if s.Revision == "" {
		s.Revision = "unknown"
	}
	return s
}

// String is the -version line.
func (s buildStamp) String() string {
	return fmt.Sprintf("idalloc %s (revision %s, %s)", s.Version, s.Revision, s.GoVersion)
}

// newRegistry makes the registry /metrics serves, holding what the server
// does not collect itself: the Go runtime and process collectors,
// idalloc_build_info{version,revision,goversion} 1, and the store's
// connection pool (go_sql_*{db_name=<driver>}: open, in use and idle
// connections, waits for one and how long they took).
func newRegistry(st dataStore, driver string) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	b := readBuildStamp()
	info := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "idalloc", Name: "build_info",
		Help:        "The build this instance runs, as labels: version, revision (VCS commit) and goversion. Always 1.",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision, "goversion": b.GoVersion},
	})
	info.Set(1)
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		info,
	}
	// Both stores of package store have a pool (store/pool.go); a store
	// without one (a test's fake) just has no pool figures.
	if p, ok := st.(interface{ DB() *sql.DB }); ok {
		cs = append(cs, collectors.NewDBStatsCollector(p.DB(), driver))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return reg, nil
}
