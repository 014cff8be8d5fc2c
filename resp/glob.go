package resp

import "math/bits"

// glob is a KEYS pattern, read as Redis reads it (stringmatchlen in its
// util.c): '*' any run of bytes, '?' any one byte, '[…]' one byte of a
// class ('^' first negates it; "a-z" a range, its ends taken as they are
// and swapped when reversed; '\' makes the next byte a member), '\' makes
// the next byte literal, and every other byte stands for itself, case
// counting. Redis never refuses a pattern, and neither does this: a class
// left open runs to the pattern's end, and a '\' at the end stands for
// itself.
//
// Go's path.Match is not that: it refuses what Redis takes ("[a", "[]",
// "[a-]", a trailing '\': ErrBadPattern), matches nothing with a reversed
// range ("[z-a]", which Redis reads as [a-z]), honours '\' inside a range
// ("[\]-a]", whose ends Redis takes as they are), and its '*' and '?' never
// match '/', which a tag cannot hold but Redis's would.
//
// The pattern is compiled once into tokens, each a star or a set of bytes,
// so a long class costs its length once rather than at every byte of
// every tag tried; a pattern that needs more bytes than a name has is
// answered without trying.
type glob struct {
	tokens []globToken
	// bytes is how many bytes a matching name has at least: the tokens
	// that are not stars.
	bytes int
}

// globToken is a star, or one byte of set.
type globToken struct {
	star bool
	set  byteSet
}

type byteSet [4]uint64

func (s *byteSet) add(c byte)      { s[c>>6] |= 1 << (c & 63) }
func (s *byteSet) has(c byte) bool { return s[c>>6]&(1<<(c&63)) != 0 }
func (s *byteSet) addRange(lo, hi byte) {
	if lo > hi {
		lo, hi = hi, lo
	}
	for c := int(lo); c <= int(hi); c++ {
		s.add(byte(c))
	}
}

// compileGlob reads p as Redis does.
func compileGlob(p []byte) glob {
	var g glob
	for i := 0; i < len(p); i++ {
		var t globToken
		switch c := p[i]; c {
		case '*':
			if n := len(g.tokens); n > 0 && g.tokens[n-1].star {
				continue // a run of stars is one
			}
			t.star = true
		case '?':
			t.set = byteSet{^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)}
		case '[':
			i = t.set.class(p, i+1)
		case '\\':
			if i+1 < len(p) {
				i++
			}
			t.set.add(p[i])
		default:
			t.set.add(c)
		}
		if !t.star {
			g.bytes++
		}
		g.tokens = append(g.tokens, t)
	}
	return g
}

// prefix is the literal start of every name that matches g: the bytes
// its leading tokens stand for while each stands for one byte alone.
func (g glob) prefix() string {
	var b []byte
	for _, t := range g.tokens {
		c, ok := t.set.only()
		if t.star || !ok {
			break
		}
		b = append(b, c)
	}
	return string(b)
}

// only returns the one byte of s, false if it has none or several.
func (s *byteSet) only() (byte, bool) {
	var c byte
	n := 0
	for k, w := range s {
		if w != 0 {
			c = byte(k<<6 + bits.TrailingZeros64(w))
		}
		n += bits.OnesCount64(w)
	}
	return c, n == 1
}

// class reads the class whose members begin at p[i] into s, and returns
// the index of its closing ']' (the pattern's last byte when it is left
// open).
func (s *byteSet) class(p []byte, i int) int {
	not := i < len(p) && p[i] == '^'
	if not {
		i++
	}
	for ; i < len(p) && p[i] != ']'; i++ {
		switch {
		case p[i] == '\\' && i+1 < len(p):
			i++
			s.add(p[i])
		case i+2 < len(p) && p[i+1] == '-':
			s.addRange(p[i], p[i+2])
			i += 2
		default:
			s.add(p[i])
		}
	}
	if not {
		for k := range s {
			s[k] = ^s[k]
		}
	}
	return min(i, len(p)-1)
}

// match reports whether the whole of name matches g. Each star remembers
// where it was tried last; a mismatch retries the latest star one byte
// further on. The earlier stars need not be retried: whatever the later
// one can reach, it reaches from any of their positions, so the work is
// at most tokens × len(name), and tokens are at most 2 × len(name) + 1
// once bytes is within len(name).
func (g glob) match(name string) bool {
	if g.bytes > len(name) {
		return false
	}
	toks := g.tokens
	ti, ni := 0, 0
	star, from := -1, 0
	for ni < len(name) {
		switch {
		case ti < len(toks) && toks[ti].star:
			star, from = ti, ni
			ti++
		case ti < len(toks) && toks[ti].set.has(name[ni]):
			ti++
			ni++
		case star >= 0:
			from++
			ti, ni = star+1, from
		default:
			return false
		}
	}
	for ti < len(toks) && toks[ti].star {
		ti++
	}
	return ti == len(toks)
}
