// Package client is the Go client of idalloc, in the manner of Tinyid's
// client: it takes the network off the caller's path.
//
// Client.Next answers from a local buffer per tag, filled in the
// background with GET /alloc?app_tag=T&count=N&as=ranges answers (a few
// [first,last] pairs however many IDs; lists, count=N, for the tags whose
// IDs are not runs of numbers), so a caller waits on the network only
// when its buffer is empty; Client.Snowflake buffers snowflake IDs the
// same way, for a bounded age. Several instances are used
// round robin, and one that fails or drains is set aside for its
// Retry-After. Every ID is handed out once; a tag's IDs reach one goroutine
// strictly increasing while a single instance serves the Client.
//
// Client.Unordered gives one goroutine its own way to a tag's buffer: it
// takes blocks of IDs (256 to 4096) with one atomic add each and serves
// them from fields no other goroutine writes, for callers that need IDs
// unique and each goroutine's increasing but no order across goroutines
// (unordered.go); Next, which keeps one order, stays the default.
//
// Client.NextText and NextTextN hand out IDs as text: a dated tag's
// (docs/api.md §11) as its format writes them ("ORD-20261126-000123"), which
// is the only way to get those of a dated tag with a prefix or a
// separator (Next refuses them with ErrTextOnly), and any other tag's in
// decimal. A dated tag's buffered IDs, text or numeric, are handed out
// only while their period lasts: until the period's end when the answer
// says when that is (period_ends_in_ms), else for at most
// Config.DatedMaxAge (1s) after they were requested; the rest are
// dropped, never issued (text.go).
//
// Generator is the worker-ID lease API of the workerid library
// (GetID, Renew, Release) over HTTP, with that library's sentinel errors;
// Keeper keeps one lease for a snowflake generator running in this process,
// renewing it, reserving timestamps and fencing the generator with the
// server's own keeper (package workerlease).
//
// Errors: an instance's refusal is an *Error carrying its resp_code and
// message, which unwraps to the sentinel of its resp_code (ErrUnknownTag,
// ErrTokenExpired, ErrPeriodExhausted, ...); client-side failures are the
// sentinels ErrClosed, ErrUnavailable, ErrInvalidConfig, ErrInvalidTag,
// ErrTextOnly. Match them with errors.Is.
package client
