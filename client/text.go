package client

import (
	"context"
	"strconv"
)

// Text IDs and the freshness of a dated tag's IDs (docs/api.md §11).
//
// A dated tag's ID carries the period in which it was issued
// ("ORD-20261126-000123"; 20261126000123 without prefix and separator),
// and a buffered one must not be handed out after that period has ended:
// its stamp would misdate what it names. The client does not know a
// tag's settings, and the text alone would not tell it when the period
// ends in the tag's time zone, so it goes by the answers:
//
//   - An /alloc answer that carries "period_ends_in_ms" (how long after
//     the answer the IDs' period ends, by the serving instance's clock)
//     is handed out until the Client's own monotonic clock has moved that
//     far since before the request was sent: never after the instance
//     would itself have moved to the next period, whatever the client's
//     wall clock says.
//   - An /alloc answer with "id_str" or "ids_str" but no
//     "period_ends_in_ms" is a dated tag's too (the server sends them for
//     no other tag), and is handed out for at most Config.DatedMaxAge
//     (1s) after its request was sent.
//
// IDs dropped so are never handed out by anyone (gaps, as the server's
// own period_ended waste); the next call fetches a batch of the new
// period. So the stamp of a dated ID from Next, NextN, NextText or
// NextTextN is the serving instance's period at a moment between the
// request that fetched it and the call (within DatedMaxAge before the
// call without period_ends_in_ms; at the call itself, as the instance's
// clock runs, with it).

// NextText returns the next ID of tag as text: a dated tag's as its
// format writes it ("ORD-20261126-000123"), any other tag's in decimal
// (the same ID Next would have returned). It is the call for a dated tag
// with a prefix or a separator, whose IDs Next refuses. IDs come from
// the tag's buffer, the one Next uses, under the same guarantees, and a
// dated tag's are fresh as the package's text.go says: their stamp is
// the period in which they are handed out. Errors as Next's, and
// ErrPeriodExhausted (an *Error whose RetryAfter says when the next
// period begins) for a dated tag whose current period is spent.
func (c *Client) NextText(ctx context.Context, tag string) (string, error) {
	if c.closed.Load() {
		return "", ErrClosed
	}
	b := (*c.tags.Load())[tag]
	if b == nil {
		var err error
		if b, err = c.newTag(tag); err != nil {
			return "", err
		}
	}
	for {
		if id, ok := b.takeText(); ok {
			return id, nil
		}
		if err := b.wait(ctx); err != nil {
			return "", err
		}
	}
}

// NextTextN fills dst with IDs of tag as text, in the order NextText
// would return them. A dst longer than what is buffered waits for as many
// fetches as it needs: its IDs may come from several batches, so a dated
// tag's may span a period's end, each with its own period's stamp (one
// answer's IDs are of one period). Errors as NextText; on error the IDs
// already written are discarded (never handed out again) and dst's
// content is unspecified.
func (c *Client) NextTextN(ctx context.Context, tag string, dst []string) error {
	if c.closed.Load() {
		return ErrClosed
	}
	b := (*c.tags.Load())[tag]
	if b == nil {
		var err error
		if b, err = c.newTag(tag); err != nil {
			return err
		}
	}
	for len(dst) > 0 {
		if k := b.takeTextN(dst); k > 0 {
			dst = dst[k:]
			continue
		}
		if err := b.wait(ctx); err != nil {
			return err
		}
	}
	return nil
}

// takeText claims one ID of the current batch, as text, without a lock:
// a text batch's own, a numeric one's in decimal. ok is false when the
// batch is used up or too old.
func (b *buffer) takeText() (string, bool) {
	bt := b.cur.Load()
	if bt == nil {
		return "", false
	}
	i := bt.pos.Add(1) - 1
	if i >= bt.n || (bt.expires != 0 && b.c.since() >= bt.expires) {
		return "", false
	}
	if i == bt.refillAt {
		b.refill()
	}
	switch {
	case bt.strs != nil:
		return bt.strs[i], true
	case bt.ids == nil:
		return strconv.FormatInt(bt.first+i, 10), true
	}
	return strconv.FormatInt(bt.ids[i], 10), true
}

// takeTextN is takeN for text IDs.
func (b *buffer) takeTextN(dst []string) int {
	bt := b.cur.Load()
	if bt == nil || len(dst) == 0 {
		return 0
	}
	n := bt.n
	if bt.pos.Load() >= n {
		return 0
	}
	i := bt.pos.Add(int64(len(dst))) - int64(len(dst))
	if i >= n || (bt.expires != 0 && b.c.since() >= bt.expires) {
		return 0
	}
	end := min(n, i+int64(len(dst)))
	switch {
	case bt.strs != nil:
		copy(dst, bt.strs[i:end])
	case bt.ids == nil:
		for j := range dst[:end-i] {
			dst[j] = strconv.FormatInt(bt.first+i+int64(j), 10)
		}
	default:
		for j, id := range bt.ids[i:end] {
			dst[j] = strconv.FormatInt(id, 10)
		}
	}
	k := int(end - i)
	if i <= bt.refillAt && bt.refillAt < end {
		b.refill()
	}
	return k
}
