package freeport_test

import (
	"net"
	"strconv"
	"testing"

	"github.com/idalloc/idalloc/internal/freeport"
)

func TestGetHandsOutEachPortOnce(t *testing.T) {
	seen := map[int]bool{}
	for range 50 {
		port, err := freeport.Get()
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if seen[port] {
			t.Fatalf("Get: port %d handed out twice", port)
		}
		seen[port] = true
	}
}

func TestGetPortIsListenable(t *testing.T) {
	port, err := freeport.Get()
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		t.Fatalf("listen on the port Get returned: %v", err)
	}
	ln.Close()
}
