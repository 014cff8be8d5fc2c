package migrate

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/idalloc/idalloc/store"
)

// sourceInUseError is migrate's refusal of a source an instance may still
// be serving: the IDs that instance issues after the copy are not in it,
// and may repeat on the target. Each reason names what was found.
type sourceInUseError struct {
	driver  string
	reasons []string
}

func (e sourceInUseError) Error() string {
	return fmt.Sprintf("the %s source is in use: %s. Stop every instance on it first, gracefully, so that their "+
		"unused IDs are back in it; or add -force to copy it as it is, and IDs issued there after the copy may "+
		"repeat on the target", e.driver, strings.Join(e.reasons, "; "))
}

// sqliteInUse says why the SQLite file at path is in use: another
// connection holds it open, as every running instance does (and any other
// program reading it). A missing file is left to openSource to report.
func sqliteInUse(path string) ([]string, error) {
	held, pid, err := store.SQLiteHolder(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, nil
	case err != nil:
		return nil, err
	case !held:
		return nil, nil
	}
	by := "another process"
	if pid > 0 {
		by = fmt.Sprintf("process %d", pid)
	}
	return []string{fmt.Sprintf("%s holds %s open (an idalloc instance serving it, or a program reading it)", by, path)}, nil
}

// maxLeasesNamed bounds the live leases a refusal lists one by one.
const maxLeasesNamed = 3

// leasesInUse says which worker leases of src are live: each is held by an
// instance that is running, or was killed less than a lease TTL ago.
func leasesInUse(ctx context.Context, src source) ([]string, error) {
	live, err := src.LiveLeases(ctx)
	if err != nil {
		return nil, err
	}
	var why []string
	for i, l := range live {
		if i == maxLeasesNamed {
			why = append(why, fmt.Sprintf("and %d more live worker leases", len(live)-i))
			break
		}
		// %q: the holder and cluster are the source's, not checked.
		why = append(why, fmt.Sprintf("cluster %q worker ID %d is leased to %q until %s (the database's clock)",
			l.Cluster, l.WorkerID, l.Holder, l.Expires().UTC().Format(time.RFC3339)))
	}
	return why, nil
}
