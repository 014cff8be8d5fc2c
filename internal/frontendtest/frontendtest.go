// Package frontendtest is the bad input every front end of idalloc must
// refuse in the domain's words. The domain packages (segment, workerlease,
// snowflake) own the rules and the messages; a front end (HTTP in package
// server, RESP beside it) only parses its wire format and maps the domain's
// error Kinds to its own codes or classes. So the same bad input must get
// the same message over every front end, and that message must be the one
// the domain gives when called directly. This package holds that input once,
// as data, for each front end's tests to send in its own wire format:
//
//	st := storetest.SQLite().Open(t)    // or each of storetest.Drivers()
//	dom := frontendtest.Open(t, st)     // serve dom's objects through the front end
//	for _, c := range frontendtest.Cases() {
//		kind, msg, _ := frontendtest.Describe(c.Call(ctx, dom)) // the domain, directly
//		// kind == c.WantKind and msg == c.WantMsg; then send c in the
//		// front end's wire format: its code or class follows c.WantKind,
//		// its text must equal c.WantMsg
//	}
//	frontendtest.CheckUnchanged(t, st)  // the bad input changed nothing
//
// A front end skips the Ops it does not serve (RESP has no lease calls).
// Serve serves either front end on a port of 127.0.0.1 for a test's
// clients. It is imported by tests only.
package frontendtest

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/snowflake"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/workerlease"
)

// Op is the domain call a front end makes for a client.
type Op string

// The calls, with the Case fields each one takes.
const (
	// Alloc is segment.Allocator.Next (Count 0) or NextN (Count IDs): Tag,
	// Count. HTTP: GET /alloc; RESP: GET, INCR, IDS.
	Alloc Op = "alloc"
	// Buffered is segment.Allocator.Buffered: Tag. HTTP: GET
	// /health?app_tag=; RESP: INFO tag.
	Buffered Op = "buffered"
	// CreateTag is segment.Allocator.CreateTag: Tag, Step, Start (0: not
	// sent), Description ("": not sent), Format ("": not sent), Length (0:
	// not sent). HTTP: POST /tags; RESP: HSET.
	CreateTag Op = "create_tag"
	// Acquire is workerlease.Service.Acquire: Cluster ("": not sent).
	Acquire Op = "acquire"
	// Renew is workerlease.Service.Renew: Cluster ("": not sent),
	// WorkerID, Token, LastTimestampMS (0: not sent).
	Renew Op = "renew"
	// Release is workerlease.Service.Release, with Renew's fields.
	Release Op = "release"
	// Decompose is snowflake.Layout.Decompose: ID. HTTP: GET
	// /snowflake/{id}.
	Decompose Op = "decompose"
)

// The fixture the cases assume; Open builds it.
const (
	// ExistingTag is the seeded row of every fresh store.
	ExistingTag = "test_business"
	// MaxStep is the allocator's step cap: the default.
	MaxStep = segment.DefaultMaxStep
	// MaxWorkerID is the lease service's: the default.
	MaxWorkerID = workerlease.DefaultMaxWorkerID
	// WellFormedToken has a token's form and holds nothing.
	WellFormedToken = "AAAAAAAAAAAAAAAAAAAAAA"
)

// Case is one bad input and the answer every front end owes it.
type Case struct {
	Name string
	Op   Op

	Tag         string
	Count       int
	Step, Start int64
	Description string
	Format      string
	Length      int

	Cluster         string
	WorkerID        int64
	Token           string
	LastTimestampMS int64

	ID int64

	// WantKind is the domain error's Kind, as the vocabulary (package
	// errs) spells it: "bad_request", "unknown_tag", "exists", …
	WantKind string
	// WantMsg is the domain error's message, which every front end sends
	// unchanged: HTTP as msg, RESP after the error class.
	WantMsg string
}

// The domain's words for the cases, spelled out here so that a change of
// words shows in review. Call checks them against the domain itself.
const (
	msgInvalidTag     = "invalid app_tag: must match ^[A-Za-z0-9_.:-]{1,64}$"
	msgUnknownTag     = "unknown app_tag: create it first (POST /tags, or HSET over RESP)"
	msgInvalidCluster = "invalid cluster: want 1 to 64 characters of A-Z a-z 0-9 _ . : -"
	msgInvalidToken   = "invalid token: want 22 base64url characters"
	msgNotAssigned    = "worker ID is not assigned"

	msgInvalidFormat    = "invalid format: must be sequential, fixed_length, scrambled or dated"
	msgLengthSequential = "invalid length: must be absent (or 0) for format sequential; send format fixed_length or scrambled for IDs of a fixed number of digits"
	msgLengthFixed      = "invalid length: must be from 1 to 18 for format fixed_length"
	msgLengthScrambled  = "invalid length: must be from 6 to 18 for format scrambled"
)

// Cases returns the bad inputs, a fresh slice on every call. Each is
// refused by the domain and changes nothing in the store.
func Cases() []Case {
	stepMsg := fmt.Sprintf("invalid step: must be from 1 to %d", MaxStep)
	startMsg := fmt.Sprintf("invalid start: must be from 1 to %d", segment.MaxUsableID)
	workerMsg := fmt.Sprintf("invalid worker_id: must be from 0 to %d", MaxWorkerID)
	const tsMsg = "invalid last_timestamp_ms: must be Unix milliseconds, from 0 to a day past this server's clock"
	return []Case{
		// Tags, on every call that takes one.
		{Name: "alloc tag with a space", Op: Alloc, Tag: "a b", WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "alloc tag of 65 characters", Op: Alloc, Tag: strings.Repeat("a", 65), WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "alloc tag with a slash", Op: Alloc, Tag: "a/b", WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "alloc tag with a NUL", Op: Alloc, Tag: "order\x00", WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "alloc tag with a log line in it", Op: Alloc, Tag: "order\nlevel=ERROR", WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "alloc tag not ASCII", Op: Alloc, Tag: "\u2713", WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "alloc tag with SQL", Op: Alloc, Tag: "x'; DROP TABLE segments;--", WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "alloc batch invalid tag", Op: Alloc, Tag: "a b", Count: 5, WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "alloc unknown tag", Op: Alloc, Tag: "nope", WantKind: "unknown_tag", WantMsg: msgUnknownTag},
		{Name: "alloc batch unknown tag", Op: Alloc, Tag: "nope", Count: 3, WantKind: "unknown_tag", WantMsg: msgUnknownTag},
		{Name: "buffered invalid tag", Op: Buffered, Tag: "no pe", WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "buffered unknown tag", Op: Buffered, Tag: "nope", WantKind: "unknown_tag", WantMsg: msgUnknownTag},

		// New tags: every rule of segment.CheckNewTag, in its order.
		{Name: "create invalid tag", Op: CreateTag, Tag: "bad tag", Step: 10, WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "create empty tag", Op: CreateTag, Tag: "", Step: 10, WantKind: "bad_request", WantMsg: msgInvalidTag},
		{Name: "create step 0", Op: CreateTag, Tag: "t1", Step: 0, WantKind: "bad_request", WantMsg: stepMsg},
		{Name: "create negative step", Op: CreateTag, Tag: "t1", Step: -5, WantKind: "bad_request", WantMsg: stepMsg},
		{Name: "create step above max_step", Op: CreateTag, Tag: "t1", Step: MaxStep + 1, WantKind: "bad_request", WantMsg: stepMsg},
		{Name: "create negative start", Op: CreateTag, Tag: "t1", Step: 10, Start: -3, WantKind: "bad_request", WantMsg: startMsg},
		{Name: "create start above the highest ID", Op: CreateTag, Tag: "t1", Step: 10, Start: math.MaxInt64, WantKind: "bad_request", WantMsg: startMsg},
		{Name: "create description too long", Op: CreateTag, Tag: "t1", Step: 10, Description: strings.Repeat("é", segment.MaxDescription+1),
			WantKind: "bad_request", WantMsg: fmt.Sprintf("invalid description: longer than %d characters", segment.MaxDescription)},
		{Name: "create bad tag and bad step names the tag", Op: CreateTag, Tag: "bad tag", Step: 0, WantKind: "bad_request", WantMsg: msgInvalidTag},

		// Number formats (docs/api.md §7), checked after the step, before the
		// start and description.
		{Name: "create unknown format", Op: CreateTag, Tag: "t1", Step: 10, Format: "random", Length: 8, WantKind: "bad_request", WantMsg: msgInvalidFormat},
		{Name: "create format in capitals", Op: CreateTag, Tag: "t1", Step: 10, Format: "Scrambled", Length: 8, WantKind: "bad_request", WantMsg: msgInvalidFormat},
		{Name: "create length without a format", Op: CreateTag, Tag: "t1", Step: 10, Length: 8, WantKind: "bad_request", WantMsg: msgLengthSequential},
		{Name: "create sequential with a length", Op: CreateTag, Tag: "t1", Step: 10, Format: "sequential", Length: 8, WantKind: "bad_request", WantMsg: msgLengthSequential},
		{Name: "create fixed_length without length", Op: CreateTag, Tag: "t1", Step: 10, Format: "fixed_length", WantKind: "bad_request", WantMsg: msgLengthFixed},
		{Name: "create fixed_length of 19 digits", Op: CreateTag, Tag: "t1", Step: 10, Format: "fixed_length", Length: 19, WantKind: "bad_request", WantMsg: msgLengthFixed},
		{Name: "create fixed_length of negative length", Op: CreateTag, Tag: "t1", Step: 10, Format: "fixed_length", Length: -1, WantKind: "bad_request", WantMsg: msgLengthFixed},
		{Name: "create fixed_length start with too many digits", Op: CreateTag, Tag: "t1", Step: 10, Format: "fixed_length", Length: 6, Start: 1_000_000,
			WantKind: "bad_request", WantMsg: "invalid start: must be from 1 to 999999 for format fixed_length with length 6"},
		{Name: "create scrambled without length", Op: CreateTag, Tag: "t1", Step: 10, Format: "scrambled", WantKind: "bad_request", WantMsg: msgLengthScrambled},
		{Name: "create scrambled of 5 digits", Op: CreateTag, Tag: "t1", Step: 10, Format: "scrambled", Length: 5, WantKind: "bad_request", WantMsg: msgLengthScrambled},
		{Name: "create scrambled of 19 digits", Op: CreateTag, Tag: "t1", Step: 10, Format: "scrambled", Length: 19, WantKind: "bad_request", WantMsg: msgLengthScrambled},
		{Name: "create scrambled with a start", Op: CreateTag, Tag: "t1", Step: 10, Format: "scrambled", Length: 8, Start: 1000,
			WantKind: "bad_request", WantMsg: "invalid start: must be absent (or 1) for format scrambled: its IDs follow no order, so there is no first one to choose"},
		{Name: "create bad step and bad format names the step", Op: CreateTag, Tag: "t1", Step: 0, Format: "random", WantKind: "bad_request", WantMsg: stepMsg},
		{Name: "create bad format and bad description names the format", Op: CreateTag, Tag: "t1", Step: 10, Format: "random",
			Description: strings.Repeat("é", segment.MaxDescription+1), WantKind: "bad_request", WantMsg: msgInvalidFormat},
		{Name: "create existing tag in another format", Op: CreateTag, Tag: ExistingTag, Step: 10, Format: "scrambled", Length: 8, WantKind: "exists", WantMsg: "app_tag already exists"},
		{Name: "create existing tag", Op: CreateTag, Tag: ExistingTag, Step: 10, WantKind: "exists", WantMsg: "app_tag already exists"},

		// Worker-ID leases: the Service's checks, in its order, then the
		// store's verdict on a well-formed token that holds nothing.
		{Name: "acquire invalid cluster", Op: Acquire, Cluster: "a b", WantKind: "bad_request", WantMsg: msgInvalidCluster},
		{Name: "acquire cluster of 65 characters", Op: Acquire, Cluster: strings.Repeat("c", 65), WantKind: "bad_request", WantMsg: msgInvalidCluster},
		{Name: "renew invalid cluster", Op: Renew, Cluster: "x;y", WorkerID: 1, Token: WellFormedToken, WantKind: "bad_request", WantMsg: msgInvalidCluster},
		{Name: "renew negative worker_id", Op: Renew, WorkerID: -1, Token: WellFormedToken, WantKind: "bad_request", WantMsg: workerMsg},
		{Name: "renew worker_id above max", Op: Renew, WorkerID: MaxWorkerID + 1, Token: WellFormedToken, WantKind: "bad_request", WantMsg: workerMsg},
		{Name: "renew short token", Op: Renew, WorkerID: 1, Token: "abc", WantKind: "bad_request", WantMsg: msgInvalidToken},
		{Name: "renew empty token", Op: Renew, WorkerID: 1, Token: "", WantKind: "bad_request", WantMsg: msgInvalidToken},
		{Name: "renew token in standard base64", Op: Renew, WorkerID: 1, Token: WellFormedToken[:21] + "+", WantKind: "bad_request", WantMsg: msgInvalidToken},
		{Name: "renew negative last_timestamp_ms", Op: Renew, WorkerID: 1, Token: WellFormedToken, LastTimestampMS: -1, WantKind: "bad_request", WantMsg: tsMsg},
		{Name: "renew last_timestamp_ms in microseconds", Op: Renew, WorkerID: 1, Token: WellFormedToken, LastTimestampMS: time.Now().UnixMicro(), WantKind: "bad_request", WantMsg: tsMsg},
		{Name: "renew bad worker_id and bad token names the worker_id", Op: Renew, WorkerID: -1, Token: "abc", WantKind: "bad_request", WantMsg: workerMsg},
		{Name: "renew token that holds nothing", Op: Renew, WorkerID: 5, Token: WellFormedToken, WantKind: "not_assigned", WantMsg: msgNotAssigned},
		{Name: "release worker_id above max", Op: Release, WorkerID: MaxWorkerID + 1, Token: WellFormedToken, WantKind: "bad_request", WantMsg: workerMsg},
		{Name: "release short token", Op: Release, WorkerID: 1, Token: "abc", WantKind: "bad_request", WantMsg: msgInvalidToken},
		{Name: "release token that holds nothing", Op: Release, WorkerID: 5, Token: WellFormedToken, WantKind: "not_assigned", WantMsg: msgNotAssigned},

		// Snowflake IDs.
		{Name: "decompose negative id", Op: Decompose, ID: -1, WantKind: "bad_request", WantMsg: "invalid id: want a non-negative 64-bit snowflake ID"},
	}
}

// Domain is what the cases run on: the domain objects a front end is
// given, on one store.
type Domain struct {
	Segments *segment.Allocator
	Leases   *workerlease.Service
	Layout   snowflake.Layout
}

// Open builds the fixture on st, a fresh store (storetest's, with the seeded
// ExistingTag row): an Allocator and a lease Service with default configs
// and the default snowflake layout. The allocator is closed at tb's cleanup.
func Open(tb testing.TB, st store.Store) Domain {
	tb.Helper()
	ctx := context.Background()
	alloc, err := segment.New(ctx, st, segment.Config{MaxStep: MaxStep})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = alloc.Close(ctx) })
	svc, err := workerlease.NewService(st, workerlease.Config{MaxWorkerID: MaxWorkerID, Holder: "frontendtest"})
	if err != nil {
		tb.Fatal(err)
	}
	layout, err := snowflake.NewLayout(time.Time{}, 0)
	if err != nil {
		tb.Fatal(err)
	}
	return Domain{Segments: alloc, Leases: svc, Layout: layout}
}

// Call makes c's domain call on d directly, with no front end in between,
// and returns its error: what every front end must answer c with.
func (c Case) Call(ctx context.Context, d Domain) error {
	switch c.Op {
	case Alloc:
		if c.Count == 0 {
			_, err := d.Segments.Next(ctx, c.Tag)
			return err
		}
		return d.Segments.NextN(ctx, c.Tag, make([]int64, c.Count))
	case Buffered:
		_, err := d.Segments.Buffered(c.Tag)
		return err
	case CreateTag:
		var start *int64 // Start 0: not sent
		if c.Start != 0 {
			start = &c.Start
		}
		_, err := d.Segments.CreateTag(ctx, segment.NewTag{AppTag: c.Tag, Step: c.Step, Start: start, Description: c.Description,
			Format: segment.Format(c.Format), Length: int64(c.Length)})
		return err
	case Acquire:
		_, err := d.Leases.Acquire(ctx, c.Cluster, "frontendtest")
		return err
	case Renew:
		_, err := d.Leases.Renew(ctx, c.Cluster, c.WorkerID, c.Token, c.LastTimestampMS)
		return err
	case Release:
		return d.Leases.Release(ctx, c.Cluster, c.WorkerID, c.Token, c.LastTimestampMS)
	case Decompose:
		_, err := d.Layout.Decompose(c.ID)
		return err
	}
	return fmt.Errorf("frontendtest: unknown op %q", c.Op)
}

// Describe returns the Kind (as the contract's word) and the message of
// the domain error in err, whichever domain package made it; ok is false
// when there is none.
func Describe(err error) (kind, msg string, ok bool) {
	e, ok := errs.Describe(err)
	if !ok {
		return "", "", false
	}
	return string(e.Kind), e.Error(), true
}

// CheckUnchanged fails tb unless st, on which Open built the fixture, still
// holds what a fresh store holds: the seeded ExistingTag row at max_id 0
// and no worker lease.
func CheckUnchanged(tb testing.TB, st store.Store) {
	tb.Helper()
	ctx := context.Background()
	tags, err := st.Tags(ctx)
	if err != nil {
		tb.Fatal(err)
	}
	if len(tags) != 1 || tags[0].AppTag != ExistingTag || tags[0].MaxID != 0 {
		tb.Errorf("after bad input the segments table holds %+v, want only %s at max_id 0", tags, ExistingTag)
	}
	lister, ok := st.(interface {
		LeaseTimestamps(context.Context) ([]store.LeaseTimestamp, error)
	})
	if !ok {
		tb.Fatalf("store %T cannot list its leases", st)
	}
	if leases, err := lister.LeaseTimestamps(ctx); err != nil || len(leases) != 0 {
		tb.Errorf("after bad input worker_leases holds %+v (%v), want no rows", leases, err)
	}
}
