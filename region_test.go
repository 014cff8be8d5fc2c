package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/idalloc/idalloc/segment"
	"github.com/idalloc/idalloc/store"
	"github.com/idalloc/idalloc/store/storetest"
)

// TestRegionMismatchRefusesToStart: on a SQLite file that records region 1
// of 2, an idalloc process configured as another region (another id,
// another count, or none) exits with status 1 before serving, its error
// one line naming the database's region and its own; one configured as
// region 1 of 2 serves that region: segment IDs ≡ 1 (mod 2), and its own
// worker lease shown as the worker ID its snowflake IDs carry, in the
// upper half of the layout's.
func TestRegionMismatchRefusesToStart(t *testing.T) {
	db := storetest.SQLite().NewDB(t)
	st, err := store.OpenSQLite(t.Context(), db.DSN)
	if err != nil {
		t.Fatal(err)
	}
	// The first instance of region 1 of 2 records it as a start does.
	if err := segment.CheckRegion(t.Context(), st, segment.Region{Count: 2, ID: 1}); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	body := func(region string) string {
		return fmt.Sprintf(`{"driver": "sqlite", "dsn": %q, "http_addr": "127.0.0.1:0", "shutdown_drain": "0s"%s}`, db.DSN, region)
	}
	cases := []struct {
		name, region string
		want         string // the instance's half of the line
	}{
		{"another id", `, "region": {"count": 2, "id": 0}`, "this instance is configured as region 0 of 2 (region.count, region.id)"},
		{"another count", `, "region": {"count": 3, "id": 1}`, "this instance is configured as region 1 of 3 (region.count, region.id)"},
		{"no region", ``, "this instance is configured as a single region (region.count, region.id)"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in, served := spawn(t, body(c.region))
			var err error
			select {
			case err = <-in.done:
			case a := <-served:
				t.Fatalf("an instance configured as %s serves at %s on a database of region 1 of 2", c.region, a)
			case <-time.After(30 * time.Second):
				t.Fatal("idalloc neither served nor exited within 30s")
			}
			if ee, ok := errors.AsType[*exec.ExitError](err); !ok || ee.ExitCode() != 1 {
				t.Errorf("exit: %v, want status 1", err)
			}
			out := strings.TrimSpace(in.log.String())
			lines := strings.Split(out, "\n")
			last := lines[len(lines)-1]
			for _, w := range []string{"idalloc: ", "this database is region 1 of 2", c.want} {
				if !strings.Contains(last, w) {
					t.Errorf("last line %q does not say %q (stderr:\n%s)", last, w, out)
				}
			}
		})
	}

	in := startServing(t, body(`, "region": {"count": 2, "id": 1}`))
	for range 3 {
		var got struct {
			ID int64 `json:"id"`
		}
		getJSON(t, in.url+"/alloc?app_tag=test_business", &got)
		if got.ID%2 != 1 {
			t.Errorf("region 1 of 2 issued %d, want an odd ID", got.ID)
		}
	}
	var own struct {
		WorkerID    int64 `json:"worker_id"`
		MaxWorkerID int64 `json:"max_worker_id"`
	}
	getJSON(t, in.url+"/workerid", &own)
	if own.WorkerID < 512 || own.MaxWorkerID != 1023 {
		t.Errorf("GET /workerid = %+v, want a worker ID of region 1's half, 512..1023, and the layout's max 1023", own)
	}
}

// getJSON decodes the JSON answer of a GET of url into v, failing t
// unless it is 200.
func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
}
