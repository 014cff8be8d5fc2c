// Package buildinfo says which build a binary is: its version, VCS
// revision and Go version, for -version and idalloc_build_info.
package buildinfo

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/prometheus/client_golang/prometheus"
)

// Stamp is what a binary says it is.
type Stamp struct {
	Version, Revision, GoVersion string
}

// Read returns the stamp of this binary: version and revision as the
// linker was told them (main's -X flags), else the build's own stamp
// (runtime/debug.ReadBuildInfo): the main module's version, which go build
// derives from the checkout's VCS tag (v1.4.0, or a pseudo-version, +dirty
// with local changes), and its vcs.revision. A build without either (a
// build context without .git, go run of a tree that is no checkout) says
// "(devel)" and "unknown".
func Read(version, revision string) Stamp {
	s := Stamp{Version: version, Revision: revision, GoVersion: runtime.Version()}
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
func (s Stamp) String() string {
	return fmt.Sprintf("idalloc %s (revision %s, %s)", s.Version, s.Revision, s.GoVersion)
}

// Gauge is idalloc_build_info{version,revision,goversion}, always 1.
func (s Stamp) Gauge() prometheus.Gauge {
	g := prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "idalloc", Name: "build_info",
		Help:        "The build this instance runs, as labels: version, revision (VCS commit) and goversion. Always 1.",
		ConstLabels: prometheus.Labels{"version": s.Version, "revision": s.Revision, "goversion": s.GoVersion},
	})
	g.Set(1)
	return g
}
