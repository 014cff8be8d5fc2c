package snowflake_test

import (
	"fmt"
	"time"

	"github.com/idalloc/idalloc/snowflake"
)

func ExampleNew() {
	// A fixed clock and no random start make the output repeatable; a real
	// service leaves Now, Sleep and DisableRandomStart unset.
	now := time.Date(2026, 11, 21, 10, 0, 0, 123_000_000, time.UTC)
	g, err := snowflake.New(snowflake.Settings{
		WorkerID:           7,
		DisableRandomStart: true,
		Now:                func() time.Time { return now },
		Sleep:              func(d time.Duration) { now = now.Add(d) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 3 {
		id, err := g.Next()
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(id)
	}
	// Output:
	// 117564663914328064
	// 117564663914328065
	// 117564663914328066
}

func ExampleLayout_Decompose() {
	l, err := snowflake.NewLayout(time.Time{}, 10) // the default epoch, 2026-01-01
	if err != nil {
		fmt.Println(err)
		return
	}
	p, err := l.Decompose(117564663914328106)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Time.Format(time.RFC3339Nano), p.WorkerID, p.Sequence)
	// Output: 2026-11-21T10:00:00.123Z 7 42
}

func ExampleGenerator_NextN() {
	now := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	g, err := snowflake.New(snowflake.Settings{
		WorkerBits:         20, // 4 IDs per millisecond, to show the batch moving on
		WorkerID:           1,
		DisableRandomStart: true,
		Now:                func() time.Time { return now },
		Sleep:              func(d time.Duration) { now = now.Add(d) },
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ids := make([]int64, 6)
	if err := g.NextN(ids); err != nil {
		fmt.Println(err)
		return
	}
	for _, id := range ids {
		p, _ := g.Layout().Decompose(id)
		fmt.Println(id, p.TimestampMS, p.Sequence)
	}
	// Output:
	// 117564663398400004 1795255200000 0
	// 117564663398400005 1795255200000 1
	// 117564663398400006 1795255200000 2
	// 117564663398400007 1795255200000 3
	// 117564663402594308 1795255200001 0
	// 117564663402594309 1795255200001 1
}
