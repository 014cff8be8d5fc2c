package main

import (
	"database/sql"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/idalloc/idalloc/buildinfo"
	"github.com/idalloc/idalloc/store"
)

// version and revision name the build when the linker is told, as the
// Dockerfile does from its build arguments:
//
//	go build -ldflags "-X main.version=v1.4.0 -X main.revision=$(git rev-parse HEAD)"
//
// Left empty they come from the build's own stamp (buildinfo.Read).
var version, revision string

// newRegistry makes the registry /metrics serves, holding what the server
// does not collect itself: the Go runtime and process collectors,
// idalloc_build_info{version,revision,goversion} 1, and the store's
// connection pool (go_sql_*{db_name=<driver>}: open, in use and idle
// connections, waits for one and how long they took).
func newRegistry(st store.Store, driver string) (*prometheus.Registry, error) {
	reg := prometheus.NewRegistry()
	cs := []prometheus.Collector{
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		buildinfo.Read(version, revision).Gauge(),
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
