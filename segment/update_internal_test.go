package segment

import (
	"context"
	"testing"
	"testing/synctest"
)

// TestStepSetDuringFetchStays: a step set while a fetch is under way (a
// tag updated here, or a reload) is not put back by the step that fetch
// read, which may be from before the change.
func TestStepSetDuringFetchStays(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		st := &stallStore{release: make(chan struct{})}
		a, err := New(context.Background(), st, Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer a.Close(context.Background())
		go a.Next(context.Background(), "t") // starts a fetch, which stalls
		synctest.Wait()

		b := a.index.get("t")
		b.followRowStep(500)
		close(st.release) // the fetch returns the row's step it read, 10
		synctest.Wait()
		b.mu.Lock()
		got, size := b.rowStep, b.step
		b.mu.Unlock()
		if size != 10 || got != 500 {
			t.Errorf("after the fetch: step %d, row step %d; want the fetch's 10 and the step set meanwhile, 500", size, got)
		}
	})
}
