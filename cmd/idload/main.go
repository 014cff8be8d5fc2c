// Command idload is a load generator and checker for idalloc (and for the
// bare chi handler in cmd/barechi, its HTTP ceiling).
//
// N clients, each with one keep-alive connection per base URL, send requests
// one after another for a duration (or a request count, still bounded by
// the duration), round robin over the base URLs. idload reports requests/s,
// IDs/s, p50/p90/p99/p99.9 latency from an HDR histogram, errors by
// resp_code, and checks what it receives: every body against the contract,
// strict increase per client per instance, and duplicates across every ID
// of the run (it keeps them all, up to -max-ids).
//
// By default each client sends its next request as soon as it has read an
// answer (closed loop): that finds the most a server answers, and at that
// point latency is mostly queueing (Little's law: clients ÷ req/s). With
// -rate R the clients share R requests/s on a fixed schedule (open loop),
// which shows the latency of a request to a server that is not saturated;
// sends that fell a whole interval behind their schedule are counted.
//
//	idload -url http://127.0.0.1:8880 -mode segment -tag test_business -c 64 -d 10s
//	idload -mode segment -count 1000 -json result.json
//	idload -mode snowflake -url http://127.0.0.1:8880,http://127.0.0.1:8881
//	idload -mode bare -url http://127.0.0.1:8881
//	idload -rate 40000 -c 64 -d 10s
//
// The default client is net/http's Transport, tuned (an idle connection per
// client, no compression, no proxy, prebuilt requests); -client raw uses
// idload's own HTTP/1.1 keep-alive client, which costs about half the CPU
// per request, so that on a shared machine the load tool is less often the
// bottleneck (scripts/perf.sh uses it). Bodies are parsed by a small
// allocation-free JSON scanner, not encoding/json.
//
// Only loopback targets are accepted unless -allow-remote is given. Exit
// status: 0 when every check passed, 2 when one failed (a duplicate, an
// order violation or a malformed answer, or any error with -fail-on-errors),
// 1 when the run could not be made.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"
)

func main() {
	os.Exit(mainErr(os.Args[1:], os.Stdout, os.Stderr))
}

func mainErr(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("idload", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var cfg config
	urls := fs.String("url", "http://127.0.0.1:8880", "base URL(s), comma-separated; requests go round robin")
	m := fs.String("mode", "segment", "segment (GET /alloc), snowflake (GET /snowflake) or bare (GET /alloc on cmd/barechi)")
	fs.StringVar(&cfg.Tag, "tag", "test_business", "app_tag (segment and bare modes)")
	fs.IntVar(&cfg.Count, "count", 0, "IDs per request (count=N); 0 asks for single IDs")
	fs.IntVar(&cfg.Clients, "c", 64, "concurrent clients (one connection each per base URL)")
	fs.DurationVar(&cfg.Duration, "d", 10*time.Second, "measured duration; bounds the run even with -n")
	fs.DurationVar(&cfg.Warmup, "warmup", 0, "warm-up before the measured phase (checked, not counted)")
	fs.Int64Var(&cfg.Requests, "n", 0, "stop after this many measured requests (0: run for -d)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "open loop: requests/s over all clients, each client on a fixed schedule (0: closed loop, the next request as soon as an answer is read)")
	fs.DurationVar(&cfg.Timeout, "timeout", 10*time.Second, "per-request wait for the response headers")
	fs.StringVar(&cfg.Client, "client", "http", "http: net/http's Transport, tuned; raw: idload's own HTTP/1.1 keep-alive client (plain http; no goroutine handoffs, about half the client CPU per request)")
	fs.BoolVar(&cfg.AllowRemote, "allow-remote", false, "allow non-loopback base URLs")
	fs.BoolVar(&cfg.KeepIDs, "dups", true, "keep every ID and check for duplicates at the end")
	fs.Int64Var(&cfg.MaxIDs, "max-ids", 200_000_000, "IDs kept at most for the duplicate check (8 bytes each)")
	jsonOut := fs.String("json", "", `write the JSON report to this file ("-": stdout, the table then goes to stderr)`)
	quiet := fs.Bool("q", false, "no human table")
	cpuProfile := fs.String("cpuprofile", "", "write idload's own CPU profile here")
	failOnErrors := fs.Bool("fail-on-errors", false, "exit 2 when any request failed (resp_code != 0 or transport)")
	if err := fs.Parse(args); err != nil {
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "idload: unexpected argument %q\n", fs.Arg(0))
		return 1
	}
	for u := range strings.SplitSeq(*urls, ",") {
		if u = strings.TrimSpace(u); u != "" {
			cfg.URLs = append(cfg.URLs, u)
		}
	}
	cfg.Mode = mode(*m)

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintln(stderr, "idload:", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintln(stderr, "idload:", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	rep, err := run(ctx, cfg)
	if err != nil {
		fmt.Fprintln(stderr, "idload:", err)
		return 1
	}
	table := stdout
	if *jsonOut != "" {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			fmt.Fprintln(stderr, "idload:", err)
			return 1
		}
		b = append(b, '\n')
		if *jsonOut == "-" {
			_, err = stdout.Write(b)
			table = stderr
		} else {
			err = os.WriteFile(*jsonOut, b, 0o644)
		}
		if err != nil {
			fmt.Fprintln(stderr, "idload:", err)
			return 1
		}
	}
	if !*quiet {
		writeTable(table, rep)
	}
	if !rep.Pass || (*failOnErrors && rep.Errors > 0) {
		return 2
	}
	return 0
}
