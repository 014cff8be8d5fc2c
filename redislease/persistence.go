package redislease

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/redis/go-redis/v9"
)

// ErrNotPersistent is CheckPersistence's answer for a Redis that keeps
// nothing on disk (appendonly no and no save points): a restart empties
// it, and every lease with it.
//
//lint:ignore ST1005 Redis is a name, and the text is the operator's
var ErrNotPersistent = errors.New("Redis keeps no lease on disk (appendonly no, save \"\"): " +
	"a restart forgets every lease; idalloc then waits one lease TTL before issuing under a forgotten worker ID, " +
	"but a replica promoted or a snapshot restored needs `idalloc advance` (turn on appendonly yes with appendfsync always, or use etcd or SQL leases)")

// ErrPersistenceUnknown is CheckPersistence's answer when Redis refuses
// CONFIG GET, as managed Redis services do: nothing says whether a restart
// keeps the leases.
var ErrPersistenceUnknown = errors.New("could not check whether Redis keeps leases on disk (CONFIG GET refused)")

// CheckPersistence asks Redis (CONFIG GET appendonly, save) whether it keeps
// the leases across a restart. nil when it does; ErrNotPersistent when it
// keeps nothing; ErrPersistenceUnknown wrapping the refusal when it will
// not say; another error when it cannot be reached. On a Redis Cluster it
// asks the node the client picks. It is a start-up warning, never a
// refusal: leases stay safe without persistence (docs/api.md §3), at the cost of
// a wait after each loss.
func (s *Store) CheckPersistence(ctx context.Context) error {
	if s.err != nil {
		return s.err
	}
	got, err := s.c.ConfigGet(ctx, "appendonly").Result()
	if err == nil {
		var save map[string]string
		if save, err = s.c.ConfigGet(ctx, "save").Result(); err == nil {
			got["save"] = save["save"]
		}
	}
	switch {
	case err != nil && isRefusal(err):
		return fmt.Errorf("%w: %w", ErrPersistenceUnknown, err)
	case err != nil:
		return err
	case got["appendonly"] != "yes" && strings.TrimSpace(got["save"]) == "":
		return ErrNotPersistent
	}
	return nil
}

// isRefusal reports an error reply from Redis (a renamed or forbidden
// command: "ERR unknown command", "NOPERM", ...), as opposed to a network
// fault.
func isRefusal(err error) bool {
	var re redis.Error
	return errors.As(err, &re)
}
