// Package scramble provides the keyed permutation behind idalloc's
// scrambled number format (spec §7): for a digit length L (6 ≤ L ≤ 18) and a
// per-tag AES key, a bijection from the tag's sequence numbers
// n ∈ [0, 9·10^(L−1)) onto the L-digit numbers [10^(L−1), 10^L), and its
// inverse. It is pure: no I/O, no clock, no randomness of its own (the caller
// makes the key with crypto/rand and keeps it in the store row).
//
// # Guarantee
//
// For a fixed key and length, Encode is a bijection: distinct n give distinct
// IDs, every ID has exactly L digits and no leading zero, and Decode(Encode(n))
// = n. So a tag that never issues the same sequence number twice never issues
// the same scrambled ID twice; uniqueness rests on the allocator, not on luck.
// Without the key, the IDs seen so far say nothing useful about the next one
// or about how many were issued, as far as FF1 over AES is a pseudorandom
// permutation, which is what it is designed and analysed to be. (Any
// L-digit format leaks what counting does: with 9·10^(L−1) IDs in all, the
// next one is one of those not yet seen; at L = 6 that is a small set.)
//
// The mapping is part of the stored format. A tag's IDs are Encode(n) for
// n = 0, 1, 2, …, across restarts and releases; if the mapping changed, the
// new IDs of an old tag could repeat ones issued before the change. The
// golden-value test pins it.
//
// # Construction
//
// The permutation is NIST SP 800-38G FF1 (radix 10, AES-128/192/256, empty
// tweak) over L-digit strings, restricted by cycle-walking to the numbers
// without a leading zero:
//
//	Encode(n): x = 10^(L−1) + n; repeat x = FF1(x) until x ≥ 10^(L−1)
//	Decode(y): x = y;            repeat x = FF1⁻¹(x) until x ≥ 10^(L−1); n = x − 10^(L−1)
//
// Why this construction:
//
//   - FF1 is a published standard with NIST sample vectors, a 10-round Feistel
//     network over AES, so it is a bijection on [0, 10^L) by construction,
//     whatever the key; the tests check the implementation against the
//     radix-10 samples and against a literal big-integer transcription of the
//     spec at every length.
//   - Cycle-walking keeps it a bijection on the subdomain [10^(L−1), 10^L):
//     the walk from a point of the subdomain follows that point's cycle of FF1
//     and stops at the next point of the subdomain on it, which is a bijection
//     of the subdomain onto itself (its inverse walks the same cycle
//     backwards), and it terminates because the cycle returns to its start.
//   - The subdomain is 90% of the domain, so a walk takes 10/9 ≈ 1.11 FF1
//     calls on average (exactly, over all n: the walks together visit each
//     of the 10^L strings once), and one of k steps has probability about
//     0.9·0.1^(k−1).
//   - SP 800-38G Rev. 1 asks FF1 for radix^L ≥ 10^6 (against the attacks on
//     small domains), which is where the minimum length 6 comes from; L ≤ 18
//     keeps every ID below 10^18 < 2^63, so IDs fit int64.
//
// FF1 is implemented here (ff1.go) rather than imported: the Go FF1
// libraries work on strings with math/big, allocate on every call, and the
// best known one (capitalone/fpe) is archived and shares a mutable CBC state
// between calls, so one cipher cannot serve concurrent requests. Halves of at
// most 9 digits fit in uint64 arithmetic, which makes the whole FF1 call one
// AES block per round after a per-key precomputation.
//
// A Permutation is safe for concurrent use and its Encode and Decode do not
// allocate (a scratch block comes from a per-Permutation sync.Pool, because a
// buffer handed to cipher.Block escapes to the heap).
package scramble
