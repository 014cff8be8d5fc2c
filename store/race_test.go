package store

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestRetryRaces(t *testing.T) {
	faultErr := errors.New("connection refused")
	deadlock := &mysql.MySQLError{Number: erDeadlock, Message: "Deadlock found when trying to get lock"}
	for _, tc := range []struct {
		name      string
		outcomes  []error // what each try returns; the last repeats
		wantTries int
		wantErr   error // nil: success
	}{
		{"success at once", []error{nil}, 1, nil},
		{"a fault is not retried", []error{faultErr}, 1, faultErr},
		{"lost compare-and-set, then success", []error{errLostRace, errLostRace, nil}, 3, nil},
		{"certification failure (1213), then success", []error{fmt.Errorf("commit: %w", deadlock), nil}, 2, nil},
		{"always lost: bounded, reported", []error{errLostRace}, raceTries, errLostRace},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := &db{dialect: mysqlDialect}
			var conflicts []string
			d.ObserveConflicts(func(op string) { conflicts = append(conflicts, op) })
			tries := 0
			err := d.retryRaces(context.Background(), "fetch", func() error {
				out := tc.outcomes[min(tries, len(tc.outcomes)-1)]
				tries++
				return out
			})
			if tries != tc.wantTries {
				t.Errorf("tries = %d, want %d", tries, tc.wantTries)
			}
			if tc.wantErr == nil && err != nil || tc.wantErr != nil && !errors.Is(err, tc.wantErr) {
				t.Errorf("err = %v, want %v", err, tc.wantErr)
			}
			wantConflicts := tries - 1
			if err != nil && d.lostRace(err) {
				wantConflicts = tries
			}
			if len(conflicts) != wantConflicts {
				t.Errorf("conflicts counted = %d, want %d", len(conflicts), wantConflicts)
			}
			for _, op := range conflicts {
				if op != "fetch" {
					t.Errorf("conflict counted for %q, want fetch", op)
				}
			}
		})
	}
}

func TestRetryRacesStopsWithContext(t *testing.T) {
	d := &db{dialect: sqliteDialect}
	ctx, cancel := context.WithCancel(context.Background())
	tries := 0
	err := d.retryRaces(ctx, "acquire", func() error {
		tries++
		cancel()
		return errLostRace
	})
	if tries != 1 || !errors.Is(err, context.Canceled) {
		t.Errorf("tries = %d, err = %v; want 1 try and context.Canceled", tries, err)
	}
}
