// Package tier tells a test whether it belongs to the tier being run.
// `go test ./...` is the fast tier: it passes on a fresh machine in minutes
// and runs every test whose tools are installed. The full tier adds what
// is long or builds the binary with other flags (the end-to-end fault
// suite, the Galera cluster, the Dockerfile's and the release's builds):
// IDALLOC_TEST_FULL=1 turns it on, and .ci/run sets it. CONTRIBUTING.md
// lists the tiers.
//
// It is imported by tests only.
package tier

import (
	"os"
	"testing"
)

// Variable is the switch of the full tier.
const Variable = "IDALLOC_TEST_FULL"

// On reports whether the full tier runs: Variable is "1" and -short is not
// set.
func On() bool { return os.Getenv(Variable) == "1" && !testing.Short() }

// Full skips tb, in one line naming what it is and the switch, unless the
// full tier runs.
func Full(tb testing.TB, what string) {
	tb.Helper()
	if !On() {
		tb.Skipf("full tier (%s): set %s=1 to run it, as .ci/run does", what, Variable)
	}
}
