package redislease

import (
	"strings"
	"testing"
	"time"
)

// keySlot is Redis Cluster's slot of key: CRC16 (XMODEM) of its hash tag,
// the part between the first '{' and the next '}' when that is not empty,
// else of the whole key, modulo 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for i := 0; i < len(key); i++ {
		crc ^= uint16(key[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}

func TestKeySlot(t *testing.T) {
	// Values from the Redis Cluster specification and CLUSTER KEYSLOT.
	for key, want := range map[string]int{
		"123456789":            0x31C3 % 16384,
		"foo":                  12182,
		"{user1000}.following": keySlot("user1000"),
		"foo{}{bar}":           keySlot("foo{}{bar}"),
	} {
		if got := keySlot(key); got != want {
			t.Errorf("keySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if keySlot("foo{}{bar}") == keySlot("bar") {
		t.Errorf("an empty tag must hash the whole key")
	}
}

// TestOneSlotPerCluster: every key the Store writes for a cluster lies in
// that cluster's one slot, so its scripts run on Redis Cluster.
func TestOneSlotPerCluster(t *testing.T) {
	r := newRig(t)
	clusters := []string{"c1", "east", "a:b.c-d_e", strings.Repeat("x", 64)}
	for _, c := range clusters {
		l := mustAcquire(t, r, request(c, "token-a", 3))
		if _, err := r.Renew(t.Context(), c, l.WorkerID, l.Token, time.Minute, 42); err != nil {
			t.Fatalf("Renew: %v", err)
		}
		if err := r.CheckLayout(t.Context(), c, 0, 10); err != nil {
			t.Fatalf("CheckLayout: %v", err)
		}
		if err := r.Release(t.Context(), c, l.WorkerID, l.Token, 43); err != nil {
			t.Fatalf("Release: %v", err)
		}
	}
	keys := keysUnder(t.Context(), t, r.raw, r.prefix)
	if len(keys) != 2*len(clusters) {
		t.Errorf("keys under the prefix: %q, want a lease and a layout key for each of %q", keys, clusters)
	}
	for _, c := range clusters {
		want := keySlot(c)
		for _, k := range []string{r.leaseKey(c), r.layoutKey(c)} {
			if got := keySlot(k); got != want {
				t.Errorf("slot of %q = %d, want %d (the slot of %q)", k, got, want, c)
			}
		}
	}
	for _, k := range keys {
		var owner string
		for _, c := range clusters {
			if strings.HasPrefix(k, r.leaseKey(c)) {
				owner = c
			}
		}
		if owner == "" || keySlot(k) != keySlot(owner) {
			t.Errorf("key %q is not in the slot of a cluster it belongs to", k)
		}
	}
}
