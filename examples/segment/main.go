// Command segment prints segment IDs from the Go client's local buffer:
// the client fetches them from idalloc as ranges (GET
// /alloc?count=N&as=ranges: [first,last] pairs) in the background, so
// most calls never touch the network.
//
// Start idalloc at the repository root (go run .), then:
//
//	go run ./examples/segment                    # 10 IDs of test_business
//	go run ./examples/segment -tag order -n 1000000 -quiet
//	go run ./examples/segment -url http://10.0.0.5:8880,http://10.0.0.6:8880
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/idalloc/idalloc/client"
)

func main() {
	urls := flag.String("url", "http://localhost:8880", "idalloc base URLs, comma-separated")
	tag := flag.String("tag", "test_business", "app_tag to take IDs of")
	n := flag.Int("n", 10, "how many IDs to take")
	quiet := flag.Bool("quiet", false, "print only the summary")
	flag.Parse()
	if err := run(*urls, *tag, *n, *quiet); err != nil {
		fmt.Fprintln(os.Stderr, "segment:", err)
		os.Exit(1)
	}
}

func run(urls, tag string, n int, quiet bool) error {
	c, err := client.New(client.Config{URLs: strings.Split(urls, ",")})
	if err != nil {
		return err
	}
	defer c.Close()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	start := time.Now()
	var first, last int64
	for i := range n {
		// Each call is answered from the buffer; only an empty buffer waits
		// for a fetch, and no longer than the context allows.
		callCtx, cancel := context.WithTimeout(ctx, 5*time.Second)
		id, err := c.Next(callCtx, tag)
		cancel()
		if err != nil {
			return fmt.Errorf("after %d IDs: %w", i, err)
		}
		if i == 0 {
			first = id
		}
		last = id
		if !quiet {
			fmt.Println(id)
		}
	}
	took := time.Since(start)
	fmt.Printf("%d IDs of %s (%d … %d) in %v: %.0f IDs/s\n", n, tag, first, last,
		took.Round(time.Microsecond), float64(n)/took.Seconds())
	return nil
}
