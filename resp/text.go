package resp

import (
	"errors"
	"strconv"

	"github.com/tidwall/redcon"

	"github.com/idalloc/idalloc/segment"
)

// Text IDs (docs/api.md §11). A dated tag with a prefix or a separator has IDs
// that are text ("ORD-20261126-000123"), which the allocator's Next and
// NextN refuse (segment.ErrTextOnly) before claiming anything. GET, MGET
// and IDS answer bulk strings for every tag, so they try the numeric call
// first, which is every other tag's path unchanged (no allocation, no
// extra lookup), and on ErrTextOnly take the ID as text. A dated tag
// without prefix and separator has numeric IDs (20261126000123), served
// by the numeric call as the same digits its text would be. INCR answers
// integers, so a text tag is refused there (errIncrText).

// errIncrText answers INCR on a tag whose IDs are text: the domain's
// ErrTextOnly names the text calls of HTTP and Go, this one RESP's.
var errIncrText = ownError(classErr, "this tag's IDs are text, not numbers (a dated tag with a prefix or a separator): "+
	"INCR answers integers; GET, MGET and IDS answer its IDs as text")

// incrError is INCR's answer to err from Next.
func incrError(err error) error {
	if errors.Is(err, segment.ErrTextOnly) {
		return errIncrText
	}
	return err
}

// getText answers GET after Next failed with err: a text tag's next ID
// as a bulk string, or err.
func (s *Server) getText(c redcon.Conn, ses *session, tag string, err error) error {
	if !errors.Is(err, segment.ErrTextOnly) {
		return err
	}
	b, err := s.seg.AppendNextText(s.ctx, tag, ses.num[:0])
	if err != nil {
		return err
	}
	c.WriteBulk(b)
	return nil
}

// idsText answers IDS after NextN failed with err: a text tag's batch, of
// one period, as an array of bulk strings, or err. ids is the scratch
// NextN was given, reused to hold the batch's numbers.
func (s *Server) idsText(c redcon.Conn, ses *session, tag string, ids []int64, err error) error {
	if !errors.Is(err, segment.ErrTextOnly) {
		return err
	}
	batch, err := s.seg.NextTextN(s.ctx, tag, ids)
	if err != nil {
		return err
	}
	c.WriteArray(batch.Len())
	for i := range batch.Len() {
		c.WriteBulk(batch.AppendID(ses.num[:0], i))
	}
	return nil
}

// textKeep is the largest MGET answer buffer a session keeps between
// commands; a larger one is dropped after its command.
const textKeep = 4 << 10

// mgetText takes the next ID of each of tags (checked already) and
// answers them as an array of bulk strings: digits, or a text tag's text.
// They are written into one buffer first, so that a tag failing halfway
// answers its error alone, as GET would.
func (s *Server) mgetText(c redcon.Conn, ses *session, tags [][]byte) error {
	buf := ses.text[:0]
	ends := ses.scratch(len(tags))
	for i, t := range tags {
		tag := ses.tag(t)
		id, err := s.seg.Next(s.ctx, tag)
		switch {
		case err == nil:
			buf = strconv.AppendInt(buf, id, 10)
		case errors.Is(err, segment.ErrTextOnly):
			if buf, err = s.seg.AppendNextText(s.ctx, tag, buf); err != nil {
				return err
			}
		default:
			return err
		}
		ends[i] = int64(len(buf))
	}
	c.WriteArray(len(ends))
	from := int64(0)
	for _, end := range ends {
		c.WriteBulk(buf[from:end])
		from = end
	}
	if cap(buf) <= textKeep {
		ses.text = buf[:0]
	} else {
		ses.text = nil
	}
	return nil
}
