package segment

import (
	"context"
	"strconv"

	"github.com/idalloc/idalloc/segment/dated"
)

// The IDs of a dated tag without prefix and separator are numbers
// (stamp × 10^length + sequence), served by Next and NextN like every
// tag's. With a prefix or a separator they are text, which Next and NextN
// refuse (ErrTextOnly, before claiming anything) and the calls here
// serve. The text calls serve every tag, a number being written in
// decimal, so that a front end that answers text (RESP) has one path.

// nextID is Next for a dated tag.
func (d *datedTag) nextID(ctx context.Context) (int64, error) {
	if !d.f.Numeric() {
		return 0, ErrTextOnly
	}
	p, seq, err := d.claim(ctx)
	if err != nil {
		return 0, err
	}
	return d.f.ID(p.per.key, seq)
}

// nextN is NextN for a dated tag: the IDs of one period.
func (d *datedTag) nextN(ctx context.Context, dst []int64) error {
	if !d.f.Numeric() {
		return ErrTextOnly
	}
	p, err := d.claimN(ctx, dst)
	if err != nil {
		return err
	}
	for i, seq := range dst {
		id, err := d.f.ID(p.per.key, seq)
		if err != nil {
			return err // never: the period's ranges lie within its numbers
		}
		dst[i] = id
	}
	return nil
}

// NextText returns the next ID of tag as text: a dated tag's as its
// format writes it ("ORD-20261126-000123"), any other tag's in decimal.
// Errors as Next's, but for ErrTextOnly.
func (a *Allocator) NextText(ctx context.Context, tag string) (string, error) {
	var buf [dated.MaxTextLength]byte // the longest dated ID; an int64's 19 digits fit too
	b, err := a.AppendNextText(ctx, tag, buf[:0])
	if err != nil {
		return "", err
	}
	return string(b), nil
}

// AppendNextText appends the next ID of tag as text (as NextText writes
// it) to dst and returns the extended slice; on error, dst unchanged. It
// allocates nothing when dst has room for dated.MaxTextLength bytes.
func (a *Allocator) AppendNextText(ctx context.Context, tag string, dst []byte) ([]byte, error) {
	b, err := a.buffer(ctx, tag)
	if err != nil {
		return dst, err
	}
	if b.dated == nil {
		id, err := a.Next(ctx, tag)
		if err != nil {
			return dst, err
		}
		return strconv.AppendInt(dst, id, 10), nil
	}
	p, seq, err := b.dated.claim(ctx)
	if err != nil {
		return dst, err
	}
	return b.dated.f.AppendText(dst, p.per.key, seq)
}

// TextBatch is a batch of one tag's IDs from NextTextN, to be written as
// text one by one into a caller's buffer: a dated tag's are one period's,
// in increasing order of their sequence numbers.
type TextBatch struct {
	f    *dated.Format // nil: the IDs are numbers, written in decimal
	key  dated.Key
	seqs []int64 // sequence numbers of a dated tag, else the IDs
}

// Len is the number of IDs in t.
func (t TextBatch) Len() int { return len(t.seqs) }

// AppendID appends the i-th ID of t (from 0) to dst as text and returns
// the extended slice. It allocates nothing when dst has room for
// dated.MaxTextLength bytes.
func (t TextBatch) AppendID(dst []byte, i int) []byte {
	if t.f == nil {
		return strconv.AppendInt(dst, t.seqs[i], 10)
	}
	// Never fails: every number of the batch was claimed from a range of
	// the period's numbers, whose key Of made.
	dst, _ = t.f.AppendText(dst, t.key, t.seqs[i])
	return dst
}

// NextTextN claims len(buf) IDs of tag, using buf to hold them, and
// returns them as a TextBatch to write out (valid while buf is not
// reused). A dated tag's batch is of one period: a batch that a period's
// end cuts short is wasted (period_ended) and claimed again in the next;
// one larger than what is left of the period fails as it runs out
// (dated.ErrPeriodExhausted). Other tags' batches are NextN's. Errors as
// NextN's, but for ErrTextOnly; on error buf holds nothing usable.
func (a *Allocator) NextTextN(ctx context.Context, tag string, buf []int64) (TextBatch, error) {
	b, err := a.buffer(ctx, tag)
	if err != nil {
		return TextBatch{}, err
	}
	if b.dated == nil {
		if err := a.NextN(ctx, tag, buf); err != nil {
			return TextBatch{}, err
		}
		return TextBatch{seqs: buf}, nil
	}
	p, err := b.dated.claimN(ctx, buf)
	if err != nil {
		return TextBatch{}, err
	}
	return TextBatch{f: b.dated.f, key: p.per.key, seqs: buf}, nil
}
