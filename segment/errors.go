package segment

import "errors"

// Sentinel errors; callers match them with errors.Is.
var (
	// ErrInvalidTag: the app_tag does not match ^[A-Za-z0-9_.:-]{1,64}$.
	ErrInvalidTag = errors.New("invalid app_tag")
	// ErrUnknownTag: no such tag in the store.
	ErrUnknownTag = errors.New("unknown app_tag")
	// ErrTagExists: CreateTag for a tag that is already there.
	ErrTagExists = errors.New("app_tag already exists")
	// ErrInvalidStep: CreateTag with a step below 1 or above the configured cap,
	// or a start below 1.
	ErrInvalidStep = errors.New("invalid step or start")
	// ErrExhausted: the tag's ID space (int64) is used up.
	ErrExhausted = errors.New("app_tag ID space exhausted")
	// ErrUnavailable: the IDs asked for are not buffered and the store did
	// not deliver in time (or a store call failed).
	ErrUnavailable = errors.New("the store is unreachable or too slow and the IDs asked for are not buffered")
	// ErrRewound: the store handed out a range that does not start above
	// every range this allocator already received for the tag, as a primary
	// rewound by a failover would (its last max_id updates lost). Nothing is
	// issued from such a range; the fetch is retried as after a fault.
	ErrRewound = errors.New("the store handed out a range at or below one this instance already received (was the database rewound by a failover?); refusing it")
	// ErrInvalidConfig: a negative Config field.
	ErrInvalidConfig = errors.New("invalid segment config")
	// ErrClosed: the allocator is closed (draining).
	ErrClosed = errors.New("allocator closed")
)
