package resp

import (
	"bytes"
	"strconv"
)

// Limits of one command (docs/api.md §6). redcon enforces none of them: its
// reader grows its buffer until a command is complete, so without them one
// connection could hold the process's memory with a bulk length of 2^40 or
// a line that never ends.
const (
	// MaxArgSize bounds one bulk argument, and an inline command's line.
	MaxArgSize = 64 << 10
	// MaxArgs bounds the arguments of one command, its name included.
	MaxArgs = 1024
	// MaxCommandSize bounds one multibulk command in all, headers included:
	// room for three arguments of MaxArgSize, or MGET of 1,024 tags of 64
	// characters (75 KB). Without it MaxArgs × MaxArgSize (64 MiB) would be
	// legal and held in memory per connection.
	MaxCommandSize = 256 << 10
)

// protocolError is input that is not RESP, or RESP over a limit. The
// connection that sent it is answered "-ERR Protocol error: <msg>" and
// closed; the commands it sent before are served.
type protocolError struct{ msg string }

func (e *protocolError) Error() string { return "Protocol error: " + e.msg }

var (
	errInlineTooBig  = &protocolError{"inline command over " + strconv.Itoa(MaxArgSize>>10) + " KiB"}
	errArgTooBig     = &protocolError{"bulk argument over " + strconv.Itoa(MaxArgSize>>10) + " KiB"}
	errTooManyArgs   = &protocolError{"more than " + strconv.Itoa(MaxArgs) + " arguments"}
	errCommandTooBig = &protocolError{"command over " + strconv.Itoa(MaxCommandSize>>10) + " KiB"}
	errMultibulkLen  = &protocolError{"invalid multibulk length"}
	errBulkLen       = &protocolError{"invalid bulk length"}
	errExpectedBulk  = &protocolError{"expected '$'"}
)

// Framer states: where in a command the next byte falls.
const (
	stStart     = iota // first byte of a command
	stInline           // inside an inline command's line
	stCount            // digits of "*<count>"
	stCountLF          // '\n' after the count
	stDollar           // '$' of the next bulk argument
	stBulkLen          // digits of "$<len>"
	stBulkLenLF        // '\n' after the length
	stBulkData         // the argument's bytes
	stBulkCR           // '\r' after them
	stBulkLF           // '\n' after them
)

// framer follows the command boundaries of a RESP byte stream without
// copying or keeping arguments, and refuses what breaks a limit or is not
// RESP, as soon as the offending header or byte arrives (a bulk length over
// the limit is refused before its data is sent). It accepts what redcon's
// reader accepts and nothing more: multibulk commands ("*N\r\n$len\r\n…"),
// and inline commands (any other first byte, up to '\n').
type framer struct {
	state  uint8
	digits int // digits of the number being read
	n      int // the number being read, or the bulk bytes still to come
	args   int // bulk arguments still to come in this command
	size   int // bytes of this command so far
}

// scan advances over b. It returns n, the bytes of b it consumed; end, the
// offset in b just past the last command b completes (-1 if none); and
// start, the offset in b where the command under way at the end (or at the
// error) began (0 if it began before b). err is non-nil when b breaks a
// limit or is not RESP; start then says where the offending command began.
//
// An inline command is made a batch of its own: scan stops after one, and
// before one when it has completed another command. redcon's reader drops
// every command of a read when an inline command in it has unbalanced
// quotes; alone, the bad one is all it drops. Inline commands come from
// people typing, so their batches can be small.
func (f *framer) scan(b []byte) (n, end, start int, err error) {
	end, start = -1, 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch f.state {
		case stStart:
			if c != '*' && end >= 0 {
				return i, end, start, nil
			}
			start, f.size = i, 0
			if c != '*' {
				if c == '\n' {
					return i + 1, i + 1, start, nil // an empty line
				}
				f.state, f.size = stInline, 1
				continue
			}
			f.state, f.n, f.digits = stCount, 0, 0
		case stInline:
			// The line's end is found by a fast search; the limit counts
			// the line's bytes, its '\n' excluded.
			j := bytes.IndexByte(b[i:], '\n')
			if j < 0 {
				f.size += len(b) - i
				if f.size > MaxArgSize+1 {
					return i, end, start, errInlineTooBig
				}
				return len(b), end, start, nil
			}
			f.size += j
			if f.size > MaxArgSize+1 {
				return i, end, start, errInlineTooBig
			}
			f.state = stStart
			return i + j + 1, i + j + 1, start, nil
		case stCount:
			switch {
			case '0' <= c && c <= '9' && f.digits < 10:
				f.n, f.digits = f.n*10+int(c-'0'), f.digits+1
				if f.n > MaxArgs {
					return i, end, start, errTooManyArgs
				}
			case c == '\r' && f.digits > 0 && f.n > 0:
				f.state = stCountLF
			default:
				return i, end, start, errMultibulkLen
			}
		case stCountLF:
			if c != '\n' {
				return i, end, start, errMultibulkLen
			}
			f.state, f.args = stDollar, f.n
		case stDollar:
			if c != '$' {
				return i, end, start, errExpectedBulk
			}
			f.state, f.n, f.digits = stBulkLen, 0, 0
		case stBulkLen:
			switch {
			case '0' <= c && c <= '9' && f.digits < 10:
				f.n, f.digits = f.n*10+int(c-'0'), f.digits+1
				if f.n > MaxArgSize {
					return i, end, start, errArgTooBig
				}
			case c == '\r' && f.digits > 0:
				f.state = stBulkLenLF
			default:
				return i, end, start, errBulkLen
			}
		case stBulkLenLF:
			if c != '\n' {
				return i, end, start, errBulkLen
			}
			f.state = stBulkData
			if f.n == 0 {
				f.state = stBulkCR
			}
			if f.size+f.n+3 > MaxCommandSize {
				return i, end, start, errCommandTooBig
			}
		case stBulkData:
			k := min(f.n, len(b)-i)
			f.n -= k
			f.size += k
			i += k - 1
			if f.n == 0 {
				f.state = stBulkCR
			}
			continue
		case stBulkCR:
			if c != '\r' {
				return i, end, start, errBulkLen
			}
			f.state = stBulkLF
		case stBulkLF:
			if c != '\n' {
				return i, end, start, errBulkLen
			}
			f.args--
			f.state = stDollar
			if f.args == 0 {
				f.state, end = stStart, i+1
			}
		}
		f.size++
		if f.size > MaxCommandSize {
			return i, end, start, errCommandTooBig
		}
	}
	return len(b), end, start, nil
}
