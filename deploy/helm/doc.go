// Package helmchart holds the tests of idalloc's Helm chart (idalloc/, beside
// this file), and nothing else: no Kubernetes cluster runs them. They lint
// and render the chart with Helm's own Go SDK over every values file of
// idalloc/ci/ and the defaults, decode each rendered object strictly into
// Kubernetes' Go types (an unknown field or kind fails), and run the
// repository's binary on the rendered config and environment to ask each
// probe what the kubelet would ask.
//
// It is a module of its own (github.com/idalloc/idalloc/deploy/helm) so that
// Helm's and Kubernetes' dependencies stay out of idalloc's go.mod and out
// of the root module's `go test ./...`; `.ci/run` runs it. CONTRIBUTING.md
// says how to run it by hand.
package helmchart
