// Command snowflake runs a snowflake generator in this process on a worker
// ID leased from idalloc through the Go client: the Keeper renews the lease
// in the background (every TTL/3, reserving timestamps), fences the
// generator so that it stops before the lease could lapse, and releases the
// worker ID on Ctrl-C.
//
// Start idalloc at the repository root (go run .), then:
//
//	go run ./examples/snowflake
//	go run ./examples/snowflake -every 100ms -token "$IDALLOC_ADMIN_TOKEN"
//
// The layout flags must match the server's snowflake.epoch and
// snowflake.worker_bits (the defaults match config.json), so that the IDs
// made here and the server's own never collide.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/idalloc/idalloc/client"
	"github.com/idalloc/idalloc/snowflake"
)

func main() {
	urls := flag.String("url", "http://localhost:8880", "idalloc base URLs, comma-separated")
	token := flag.String("token", os.Getenv("IDALLOC_ADMIN_TOKEN"), "the server's admin_token, if it has one (default $IDALLOC_ADMIN_TOKEN)")
	epoch := flag.String("epoch", "2026-01-01T00:00:00Z", "the server's snowflake.epoch")
	workerBits := flag.Int("worker-bits", 10, "the server's snowflake.worker_bits")
	every := flag.Duration("every", time.Second, "how often to print an ID")
	flag.Parse()
	if err := run(*urls, *token, *epoch, *workerBits, *every); err != nil {
		fmt.Fprintln(os.Stderr, "snowflake:", err)
		os.Exit(1)
	}
}

func run(urls, token, epochText string, workerBits int, every time.Duration) error {
	epoch, err := time.Parse(time.RFC3339, epochText)
	if err != nil {
		return fmt.Errorf("-epoch: %w", err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	c, err := client.New(client.Config{URLs: strings.Split(urls, ","), AdminToken: token, Logger: log})
	if err != nil {
		return err
	}
	defer c.Close()

	k, err := client.NewKeeper(ctx, client.KeeperConfig{Generator: c.Generator()})
	if err != nil {
		return fmt.Errorf("lease a worker ID: %w", err)
	}
	// The generator starts after the previous holders' last timestamp and
	// asks the Keeper's fence before every ID.
	gen, err := snowflake.New(k.Settings(snowflake.Settings{Epoch: epoch, WorkerBits: workerBits}))
	if err != nil {
		_ = k.Close(context.Background(), 0)
		return err
	}
	fmt.Printf("leased worker ID %d (earlier holders reached %d); Ctrl-C releases it\n",
		k.WorkerID(), k.StartAfterMS())

	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			// Release, reporting the last timestamp used, so that the next
			// holder of this worker ID starts after it.
			closeCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := k.Close(closeCtx, gen.LastTimestampMS()); err != nil {
				return fmt.Errorf("release worker ID %d: %w", k.WorkerID(), err)
			}
			fmt.Printf("released worker ID %d\n", k.WorkerID())
			return nil
		case <-k.Done():
			err := k.Err()
			_ = k.Close(context.Background(), gen.LastTimestampMS())
			return fmt.Errorf("worker ID %d: %w", k.WorkerID(), err)
		case <-tick.C:
			id, err := gen.Next()
			if errors.Is(err, snowflake.ErrFenced) {
				continue // the lease is being lost; Done follows
			}
			if err != nil {
				return err
			}
			p, _ := gen.Layout().Decompose(id)
			fmt.Printf("%d  time %s  worker %d  sequence %d  lease renewed until %s\n", id,
				p.Time.Format(time.RFC3339Nano), p.WorkerID, p.Sequence,
				k.Lease().ExpiresAt.Local().Format("15:04:05.000"))
		}
	}
}
