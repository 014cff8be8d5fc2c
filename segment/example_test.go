package segment_test

import (
	"context"
	"fmt"
	"time"

	"github.com/idalloc/idalloc/internal/testclock"
	"github.com/idalloc/idalloc/segment"
)

func Example() {
	// In production the store is store.OpenSQLite or store.OpenMySQL.
	st := newFakeStore(segment.Tag{AppTag: "order", Step: 1000})
	a, err := segment.New(context.Background(), st, segment.Config{})
	if err != nil {
		panic(err)
	}
	for i := 0; i < 3; i++ {
		id, _ := a.Next(context.Background(), "order")
		fmt.Println(id)
	}
	// Close gives the 997 unused IDs back, so a restart continues at 4.
	_ = a.Close(context.Background())
	fmt.Println(st.maxID("order"))
	// Output:
	// 1
	// 2
	// 3
	// 3
}

func ExampleAllocator_NextText() {
	// A store with per-period counters (segment.PeriodStore); the clock
	// is the instance's, here fixed at 23:59:59 in Shanghai.
	clock := testclock.New(time.Date(2026, 11, 26, 15, 59, 59, 0, time.UTC))
	st := newPeriodStore(clock)
	ctx := context.Background()
	a, err := segment.New(ctx, st, segment.Config{Now: clock.Now})
	if err != nil {
		panic(err)
	}
	defer a.Close(ctx)
	_, err = a.CreateTag(ctx, segment.NewTag{AppTag: "order", Format: segment.FormatDated,
		TimeZone: "Asia/Shanghai", Prefix: "ORD", Separator: "-"})
	if err != nil {
		panic(err)
	}
	id, _ := a.NextText(ctx, "order")
	fmt.Println(id)
	_, err = a.Next(ctx, "order") // text IDs only: it has a prefix
	fmt.Println(err)
	clock.Set(time.Date(2026, 11, 26, 16, 0, 0, 0, time.UTC)) // midnight in Shanghai
	id, _ = a.NextText(ctx, "order")
	fmt.Println(id)
	// Output:
	// ORD-20261126-000001
	// invalid app_tag: this tag's IDs are text, not numbers (a dated tag with a prefix or a separator): ask for them as text (id_str; NextText in Go)
	// ORD-20261127-000001
}
