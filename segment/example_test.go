package segment_test

import (
	"context"
	"fmt"

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
