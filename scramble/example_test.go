package scramble_test

import (
	"encoding/hex"
	"fmt"

	"github.com/idalloc/idalloc/scramble"
)

func Example() {
	// A tag's key is scramble.KeySize bytes from crypto/rand, made when the
	// tag is created and kept in its store row; a fixed one keeps the
	// output stable here.
	key, _ := hex.DecodeString("5f1c9a3e7b20d48866e4f0a1c37d92b5e80b14f6a95c2d7038e6b1f49ac05d27")
	p, err := scramble.New(key, 10)
	if err != nil {
		fmt.Println(err)
		return
	}
	for n := range uint64(3) {
		id, _ := p.Encode(n)
		fmt.Printf("n=%d → %d\n", n, id)
	}
	n, _ := p.Decode(7508120828)
	fmt.Println("7508120828 is n =", n)
	_, err = p.Encode(p.Size())
	fmt.Println(err)
	// Output:
	// n=0 → 9189091486
	// n=1 → 7508120828
	// n=2 → 3588794873
	// 7508120828 is n = 1
	// encode 9000000000, want below 9000000000: number outside the scrambled range
}

func ExampleNew() {
	_, err := scramble.New(make([]byte, 20), 10)
	fmt.Println(err)
	_, err = scramble.New(make([]byte, scramble.KeySize), 5)
	fmt.Println(err)
	// Output:
	// key of 20 bytes: scrambled key must be 16, 24 or 32 bytes
	// length 5: scrambled length must be between 6 and 18 digits
}
