package segment

// ValidTag reports whether s matches ^[A-Za-z0-9_.:-]{1,64}$, the only tags
// that may reach SQL, logs or metric labels.
func ValidTag(s string) bool {
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
