//go:build !openapi

package openapitest

// Spec, without -tags openapi, is never loaded: Load answers ErrOff.
type Spec struct{}

// Load answers ErrOff: the check is built with -tags openapi only.
func Load(string) (*Spec, error) { return nil, ErrOff }

// Routes is never called on a Spec Load did not return.
func (*Spec) Routes() []string { return nil }

// Seen is never called on a Spec Load did not return.
func (*Spec) Seen() map[Answer]int { return nil }

// Check is never called on a Spec Load did not return.
func (*Spec) Check(Exchange) error { return nil }
