// Package naming is the one rule for the names idalloc lets reach SQL,
// log lines, URL paths and metric labels: app_tags and token names alike
// match ^[A-Za-z0-9_.:-]{1,64}$. It imports nothing, so every domain
// package that names things can share it.
package naming

// Valid reports whether s matches ^[A-Za-z0-9_.:-]{1,64}$. A plain loop:
// a regexp would cost a request's worth of time on every miss.
func Valid(s string) bool {
	if len(s) == 0 || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '_', c == '.', c == ':', c == '-':
		default:
			return false
		}
	}
	return true
}
