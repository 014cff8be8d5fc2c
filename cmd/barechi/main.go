// Command barechi is the HTTP ceiling idalloc's /alloc is measured against:
// the handler a naive chi service would have. It reads app_tag with
// r.URL.Query().Get, sets Content-Type with w.Header().Set and formats the
// body with fmt.Fprintf from an atomic counter; no validation, metrics,
// recovery or store. It uses the same http.Server limits as idalloc, and
// stops by itself after -for (and on SIGINT/SIGTERM).
//
//	barechi -addr 127.0.0.1:8881 -for 10m
//	curl '127.0.0.1:8881/alloc?app_tag=x'   # {"resp_code":0,"msg":"success","id":1}
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-chi/chi/v5"
)

// The limits idalloc's server sets (server/server.go).
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 15 * time.Second
	idleTimeout       = 120 * time.Second
	maxHeaderBytes    = 16 << 10
)

func handler() http.Handler {
	var n atomic.Int64
	r := chi.NewRouter()
	r.Get("/alloc", func(w http.ResponseWriter, r *http.Request) {
		_ = r.URL.Query().Get("app_tag")
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"resp_code":0,"msg":"success","id":%d}`, n.Add(1))
	})
	return r
}

func main() {
	addr := flag.String("addr", "127.0.0.1:8881", "listen address (port 0: any free port, printed at start)")
	life := flag.Duration("for", 10*time.Minute, "stop by itself after this long (0: until a signal)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if *life > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *life)
		defer cancel()
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	hs := &http.Server{
		Handler:           handler(),
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
	}
	// The same form as idalloc's start line, so scripts find the port alike.
	fmt.Fprintf(os.Stderr, "msg=\"barechi serving\" addr=%s\n", ln.Addr())
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	select {
	case err := <-served:
		log.Fatal(err)
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = hs.Shutdown(sctx)
}
