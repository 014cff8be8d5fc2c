package dated_test

import (
	"fmt"
	"time"

	"github.com/idalloc/idalloc/segment/dated"
)

func Example() {
	f, err := dated.New(dated.Settings{Prefix: "ORD", Separator: "-", TimeZone: "Asia/Shanghai"})
	if err != nil {
		fmt.Println(err)
		return
	}
	// The instant comes from the instance's clock; the store's counter
	// for the stamp gives the sequence numbers.
	now := time.Date(2026, 11, 26, 15, 59, 59, 0, time.UTC)
	k, _ := f.Of(now)
	id, _ := f.Text(k, 123)
	fmt.Println(id, "until", k.End.UTC())
	next, _ := f.Of(k.End)
	id, _ = f.Text(next, f.Start())
	fmt.Println(id)
	stamp, seq, _ := f.ParseText("ORD-20261127-000001")
	fmt.Println(stamp, seq)
	// Output:
	// ORD-20261126-000123 until 2026-11-26 16:00:00 +0000 UTC
	// ORD-20261127-000001
	// 20261127 1
}

func ExampleFormat_ID() {
	f, _ := dated.New(dated.Settings{}) // period day, length 6, UTC, start 1
	k, _ := f.Of(time.Date(2026, 11, 26, 9, 30, 0, 0, time.UTC))
	id, _ := f.ID(k, 123)
	fmt.Println(id)
	// Output: 20261126000123
}

func ExampleNew() {
	_, err := dated.New(dated.Settings{Period: dated.Minute, Length: 7})
	fmt.Println(err)
	_, err = dated.New(dated.Settings{Prefix: "OR D"})
	fmt.Println(err)
	_, err = dated.New(dated.Settings{TimeZone: "Mars/Olympus_Mons"})
	fmt.Println(err)
	// Output:
	// invalid length: must be from 1 to 6 for period minute: its stamp yyyyMMddHHmm has 12 digits, and stamp + sequence may have at most 18 so that the number fits a signed 64-bit integer
	// invalid prefix: has a space: use up to 12 letters or digits (A-Z, a-z, 0-9)
	// invalid time_zone: unknown time zone: use an IANA name such as UTC, Europe/Berlin or Asia/Shanghai (the names are case-sensitive)
}
