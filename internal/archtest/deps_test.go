package archtest

import (
	"maps"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/idalloc/idalloc/"

// rule says which packages of this module pkg may depend on, directly or
// not. Paths are relative to the module; "x/..." is x and every package
// below it. The vocabulary (errs, naming) is allowed everywhere but in
// the vocabulary itself.
type rule struct {
	pkg string
	// only, if not nil, lists every package of ours pkg may depend on
	// besides those pkg names and the vocabulary.
	only []string
	// never lists packages of ours pkg must not depend on.
	never []string
	// tests extends the rule to pkg's test binary (its _test.go files and
	// all they pull in), which may also use the shared test helpers under
	// internal/; a helper's own dependencies still count.
	tests bool
	why   string
}

// vocabulary is the words every room may use: the error kinds and the one
// name rule.
var vocabulary = []string{"errs", "naming"}

var rules = []rule{
	{pkg: "errs", only: []string{}, tests: true,
		why: "the vocabulary imports nothing of ours"},
	{pkg: "naming", only: []string{}, tests: true,
		why: "the naming rule imports nothing of ours: every domain package that names things shares it"},
	{pkg: "workerlease/...", only: []string{}, tests: true,
		why: "workerlease knows no generator, store or front end, and stays apart from segment"},
	{pkg: "snowflake", only: []string{}, tests: true,
		why: "snowflake is pure: nothing of ours but the vocabulary"},
	{pkg: "snowflake/leased/...", only: []string{"snowflake", "workerlease/..."}, tests: true,
		why: "the domain never imports a store, a front end or a driver"},
	{pkg: "segment/dated", only: []string{}, tests: true,
		why: "the dated format's core is pure: the standard library and the vocabulary only"},
	// The allocator's runs on the real stores are store's tests
	// (store/allocator_test.go).
	{pkg: "segment", only: []string{"scramble", "segment/dated"}, tests: true,
		why: "segment and workerlease stay apart; the domain never imports a store or a front end"},
	// The tag rule its tokens' app_tags meet is segment's, handed to
	// access.NewAdmin by main: access needs no other domain package.
	{pkg: "access", only: []string{}, tests: true,
		why: "the domain never imports a store or a front end: access is the standard library and the vocabulary"},
	// scramble: segment's, so reached through it.
	{pkg: "metrics", only: []string{"segment", "segment/dated", "scramble", "snowflake", "snowflake/leased", "workerlease", "naming"}, tests: true,
		why: "the domain's metrics read the domain alone: never a front end, a store or an adapter, so every front end can import them"},
	// Its tests start idalloc as a process (internal/buildtest), never
	// through the root or a front end.
	{pkg: "client", only: []string{"snowflake", "workerlease/..."}, tests: true,
		why: "the client speaks the wire: the vocabulary, snowflake's layout and workerlease's keeper, never the allocator or access"},
	{pkg: "drivers", only: []string{}, tests: true,
		why: "the store names config checks import nothing of ours: config may import neither store nor the lease adapters"},
	{pkg: "buildinfo", only: []string{}, tests: true,
		why: "what a build says it is imports nothing of ours"},
	{pkg: "gcpace", only: []string{}, tests: true,
		why: "the collector's pace imports nothing of ours"},
	{pkg: "leasestore", never: []string{"server/...", "resp/...", "grpcapi/...", "client/..."}, tests: true,
		why: "the lease stores' table opens adapters: it starts no front end"},
	{pkg: "frontend", only: []string{}, tests: true,
		why: "the front-end shape (serve, drain, cut, the connection cap, the stop) imports nothing of ours: every front end imports it"},
	{pkg: "server/...", never: []string{"resp/...", "grpcapi/...", "store/...", "redislease/...", "etcdlease/..."},
		why: "front ends never import each other or a store"},
	{pkg: "resp/...", never: []string{"server/...", "grpcapi/...", "store/...", "redislease/...", "etcdlease/..."},
		why: "front ends never import each other or a store"},
	// Its tests serve the real allocator on a SQLite store, as resp's do.
	{pkg: "grpcapi/...", only: []string{"segment", "segment/dated", "scramble", "snowflake", "snowflake/leased", "workerlease",
		"access", "frontend", "metrics", "proto/..."},
		why: "a front end imports the domain, the vocabulary, frontend, metrics and its schema: never another front end or a store"},
	// Their tests start the idalloc binary (internal/buildtest) and run
	// the client, as a user would.
	{pkg: "clients/...", only: []string{}, tests: true,
		why: "the clients in other languages speak the wire: they import nothing of ours"},
	{pkg: "proto/...", only: []string{}, tests: true,
		why: "the gRPC schema's generated code imports nothing of ours: clients and the front end import it"},
	// config takes the front ends' defaults for its keys (max_conns,
	// resp_max_pending...) from frontend, so that they cannot differ; it
	// opens nothing and serves nothing.
	{pkg: "config", never: []string{"server/...", "resp/...", "grpcapi/...", "store/...", "redislease/...", "etcdlease/...", "client/...", "migrate/...", "advance"}, tests: true,
		why: "config imports no front end; it opens no store and starts no front end"},
	{pkg: "store/...", never: []string{"server/...", "resp/...", "grpcapi/...", "client/..."}, tests: true,
		why: "adapters never import a front end"},
	{pkg: "redislease/...", never: []string{"server/...", "resp/...", "grpcapi/...", "client/..."}, tests: true,
		why: "adapters never import a front end"},
	{pkg: "etcdlease/...", never: []string{"server/...", "resp/...", "grpcapi/...", "client/..."}, tests: true,
		why: "adapters never import a front end"},
	// advance is the runbook step after a restore: the domain's rules on
	// the stores' interfaces it declares; package migrate opens the stores.
	{pkg: "advance", only: []string{"segment", "segment/dated", "scramble"}, tests: true,
		why: "the domain never imports a store, a front end or a driver"},
	// The tools room reads the config and opens SQL stores; it reaches
	// the lease adapters only through the opener main passes it.
	{pkg: "migrate/...", never: []string{"server/...", "resp/...", "grpcapi/...", "redislease/...", "etcdlease/...", "client/..."}, tests: true,
		why: "the tools move data between stores: they start no front end and import no lease adapter"},
	// Their tests run the advance and layout suites (internal/advancetest,
	// internal/layouttest), which need neither migrate nor leased.
	// snowflake: each records its clusters' layouts and refuses another
	// with snowflake.ErrLayoutMismatch, the layout's owner's word;
	// snowflake is pure (no I/O, nothing of ours but the vocabulary), so an
	// adapter gains a word, not the generator's runtime, and workerlease
	// still knows no layout.
	{pkg: "redislease/...", only: []string{"workerlease/...", "snowflake"}, tests: true,
		why: "a lease adapter needs only workerlease, and snowflake's word for a layout mismatch"},
	{pkg: "etcdlease/...", only: []string{"workerlease/...", "snowflake"}, tests: true,
		why: "a lease adapter needs only workerlease, and snowflake's word for a layout mismatch"},
}

// match reports whether the module-relative path p is named by pattern.
func match(pattern, p string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return p == base || strings.HasPrefix(p, base+"/")
	}
	return p == pattern
}

func matchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if match(pat, p) {
			return true
		}
	}
	return false
}

// violation returns why dep breaks r, or "" if it does not. dep is
// module-relative; inTest says dep is needed by the test binary.
func (r rule) violation(dep string, inTest bool) string {
	if match(r.pkg, dep) || matchAny(vocabulary, dep) && !matchAny(vocabulary, r.pkg) {
		return ""
	}
	if inTest && match("internal/...", dep) {
		return ""
	}
	if r.only != nil && !matchAny(r.only, dep) {
		return "not among the packages it may depend on"
	}
	if matchAny(r.never, dep) {
		return "a package it must never depend on"
	}
	return ""
}

// listed is one package of go list -test: its deps, and those of its test
// binary if it has tests.
type listed struct {
	deps, testDeps []string
}

// list runs go list -test over the module and returns, by module-relative
// path, the module-relative dependencies of each package and
// the dependencies of its test binary. Test variants ("p [p.test]") count
// as p.
func list(t *testing.T) map[string]*listed {
	t.Helper()
	// The Go running the test: go test puts its bin first in PATH.
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command to list dependencies with")
	}
	cmd := exec.Command(gobin, "list", "-test", "-f", `{{.ImportPath}}{{"\t"}}{{join .Deps " "}}`, module+"...")
	out, err := cmd.Output()
	if err != nil {
		if ee, ok := err.(*exec.ExitError); ok {
			t.Fatalf("go list -test %s...: %v\n%s", module, err, ee.Stderr)
		}
		t.Fatalf("go list -test %s...: %v", module, err)
	}
	// ours returns p relative to the module, with an external test
	// package (p_test) counted as p.
	ours := func(p string) (string, bool) {
		p, _, _ = strings.Cut(p, " ")
		rel, ok := strings.CutPrefix(p, module)
		return strings.TrimSuffix(rel, "_test"), ok
	}
	pkgs := map[string]*listed{}
	get := func(p string) *listed {
		if pkgs[p] == nil {
			pkgs[p] = &listed{}
		}
		return pkgs[p]
	}
	mine := func(paths string) []string {
		var rels []string
		for _, d := range strings.Fields(paths) {
			if rel, ok := ours(d); ok {
				rels = append(rels, rel)
			}
		}
		return rels
	}
	for line := range strings.Lines(string(out)) {
		path, deps, _ := strings.Cut(strings.TrimRight(line, "\n"), "\t")
		if strings.Contains(path, " [") {
			continue // a test variant: its deps are in the test binary's
		}
		rel, ok := ours(path)
		if !ok {
			continue
		}
		if p, isTest := strings.CutSuffix(rel, ".test"); isTest {
			get(p).testDeps = mine(deps)
		} else {
			get(rel).deps = mine(deps)
		}
	}
	return pkgs
}

// TestDependencies holds the architecture's "never" arrows: each rule's
// packages depend only on what the rule allows.
func TestDependencies(t *testing.T) {
	pkgs := list(t)
	if len(pkgs) == 0 {
		t.Fatal("go list listed no package of this module")
	}
	for _, r := range rules {
		var matched int
		for _, p := range slices.Sorted(maps.Keys(pkgs)) {
			l := pkgs[p]
			if !match(r.pkg, p) {
				continue
			}
			matched++
			seen := map[string]bool{}
			for _, d := range l.deps {
				if why := r.violation(d, false); why != "" && !seen[d] {
					seen[d] = true
					t.Errorf("%s depends on %s: %s (%s)", p, d, why, r.why)
				}
			}
			if !r.tests {
				continue
			}
			for _, d := range l.testDeps {
				if why := r.violation(d, true); why != "" && !seen[d] {
					seen[d] = true
					t.Errorf("%s's tests depend on %s: %s (%s)", p, d, why, r.why)
				}
			}
		}
		if matched == 0 {
			t.Errorf("rule for %s matches no package: renamed or moved?", r.pkg)
		}
	}
}

func TestMatch(t *testing.T) {
	for _, tc := range []struct {
		pattern, p string
		want       bool
	}{
		{"snowflake", "snowflake", true},
		{"snowflake", "snowflake/leased", false},
		{"workerlease/...", "workerlease", true},
		{"workerlease/...", "workerlease/leasetest", true},
		{"workerlease/...", "workerleasex", false},
		{"internal/...", "internal/testclock", true},
	} {
		if got := match(tc.pattern, tc.p); got != tc.want {
			t.Errorf("match(%q, %q): got %v, want %v", tc.pattern, tc.p, got, tc.want)
		}
	}
}
