// Package archtest holds the deps test that keeps the architecture's
// "never" arrows in CI: which packages of this module each room may depend
// on, in its code and, where the rule says so, in its tests. It has no code
// of its own; see deps_test.go for the rules.
package archtest
