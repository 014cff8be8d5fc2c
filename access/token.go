package access

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/naming"
)

// Token secrets. A made one is secretBytes random bytes from crypto/rand
// in base64url without padding (43 characters); a chosen one, as a Tinyid
// migration brings (its tokens are 32 hex digits), has MinTokenLength to
// MaxTokenLength characters of RFC 6750's b64token: letters, digits and
// - . _ ~ + /, then any '=' padding, so that it travels unchanged in an
// Authorization: Bearer header, and in token= once percent-encoded.
const (
	secretBytes    = 32
	MinTokenLength = 16
	MaxTokenLength = 256
)

// MaxTokenTags bounds the app_tags of one token, and so the size of its
// row and of its audit entry.
const MaxTokenTags = 256

// The refusals of the token calls, and the words every front end sends.
var (
	// ErrTokenMissing: an ID call without a token while alloc_auth is on.
	ErrTokenMissing = errs.E(errs.Unauthorized, "token",
		"missing token: alloc_auth is on, so ID calls need a token allowed for their app_tag "+
			"(Authorization: Bearer <token>, token=, or AUTH <token> over RESP)", nil)
	// ErrTokenUnknown: a token that no token's hash matches (never made,
	// revoked, or mistyped).
	ErrTokenUnknown = errs.E(errs.Unauthorized, "token", "unknown or revoked token", nil)
	// ErrForbidden: a known token not allowed the tag asked for (the tag
	// need not exist: a token cannot learn which tags do).
	ErrForbidden = errs.E(errs.Forbidden, "token", "this token is not allowed this app_tag", nil)

	// ErrInvalidName: a token name outside ^[A-Za-z0-9_.:-]{1,64}$.
	ErrInvalidName = errs.E(errs.BadRequest, "name", "must match ^[A-Za-z0-9_.:-]{1,64}$", nil)
	// ErrInvalidTags: app_tags empty, too many, one not a valid tag, or
	// one listed twice.
	ErrInvalidTags = errs.E(errs.BadRequest, "app_tags",
		"must list 1 to "+strconv.Itoa(MaxTokenTags)+" app_tags, each matching ^[A-Za-z0-9_.:-]{1,64}$, each once", nil)
	// ErrInvalidToken: a chosen secret of the wrong length or characters.
	ErrInvalidToken = errs.E(errs.BadRequest, "token",
		"must be "+strconv.Itoa(MinTokenLength)+" to "+strconv.Itoa(MaxTokenLength)+
			" characters of A-Z a-z 0-9 - . _ ~ + / (then = padding), or absent for a random one", nil)
	// ErrAdminToken: a chosen secret that is the admin token (a case of
	// ErrInvalidToken): its holders would have admin rights, and the admin
	// token would take IDs as a tag token.
	ErrAdminToken = errs.E(errs.BadRequest, "token",
		"must not be the admin token: choose another (a tag token is not an admin token)", ErrInvalidToken)
	// ErrTokenExists: the name, or the chosen secret, is another token's.
	ErrTokenExists = errs.E(errs.Exists, "name", "a token of that name exists already: revoke it first, or choose another name", nil)
	// ErrSecretInUse: the chosen secret is another token's (a case of
	// ErrTokenExists, naming the token field).
	ErrSecretInUse = errs.E(errs.Exists, "token", "that token is another name's already: choose another, or add the app_tags to that name's", ErrTokenExists)
	// ErrNoSuchToken: a revoke of a name that no token has.
	ErrNoSuchToken = errs.E(errs.BadRequest, "name", "no token has that name (GET /tokens lists them)", nil)
	// ErrInvalidLimit: an audit log limit outside 1 to MaxAuditLimit.
	ErrInvalidLimit = errs.E(errs.BadRequest, "limit", "must be from 1 to "+strconv.Itoa(MaxAuditLimit), nil)
)

// HashToken is what the store keeps of secret: its SHA-256, in hex.
//
// A fast hash is the right one here, unlike for passwords: a made token
// has 256 random bits and a chosen one is at least MinTokenLength
// characters of a machine's making (Tinyid's are 128 random bits), so no
// guess list reaches one, and a slow hash (bcrypt, argon2) would only cost
// every ID call milliseconds of CPU. Unsalted, so that the guard finds a
// token by its hash in one lookup, which a per-row salt would prevent; a
// salt defends guessable secrets, which these are not.
func HashToken(secret string) string {
	h := sum(secret)
	return hex.EncodeToString(h[:])
}

// sum is the SHA-256 of secret, without allocating for a secret of up to
// MaxTokenLength bytes: a string converted to a slice on the heap would
// cost every checked ID call an allocation.
func sum(secret string) [sha256.Size]byte {
	var buf [MaxTokenLength]byte
	if len(secret) <= len(buf) {
		n := copy(buf[:], secret)
		return sha256.Sum256(buf[:n])
	}
	return sha256.Sum256([]byte(secret))
}

// newSecret makes a random token.
func newSecret() string {
	var b [secretBytes]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never fails (it crashes the program first)
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// validSecret reports whether s may be a chosen token (ErrInvalidToken).
func validSecret(s string) bool {
	if len(s) < MinTokenLength || len(s) > MaxTokenLength {
		return false
	}
	padding := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '=':
			padding = true
		case padding:
			return false // '=' only at the end
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9',
			c == '-', c == '.', c == '_', c == '~', c == '+', c == '/':
		default:
			return false
		}
	}
	return s[0] != '='
}

// ValidName reports whether s may name a token: the rule of an app_tag
// (package naming), so that a name is safe in a URL path (DELETE
// /tokens/{name}), a log line and SQL alike.
func ValidName(s string) bool { return naming.Valid(s) }

// CheckAdminToken refuses an admin token that a per-tag token st keeps
// has as its secret (docs/api.md §15): that token's holders would have
// admin rights. idalloc migrate may have imported such a Tinyid token; the
// fix is another admin_token, the tag token stays. An empty admin token
// passes.
func CheckAdminToken(ctx context.Context, st Store, admin string) error {
	if admin == "" {
		return nil
	}
	toks, err := st.Tokens(ctx)
	if err != nil {
		return fmt.Errorf("check admin_token against the per-tag tokens: %w", err)
	}
	hash := HashToken(admin)
	for _, t := range toks {
		if t.Hash == hash {
			return fmt.Errorf("the per-tag token %q has it as its secret, so its holders would have admin rights: choose another admin_token", t.Name)
		}
	}
	return nil
}
