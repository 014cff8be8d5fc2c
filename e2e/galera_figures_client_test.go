package e2e

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"time"
)

// The load clients of TestGaleraScalingFigures: raw HTTP/1.1 keep-alive
// connections that keep every ID as runs of consecutive numbers.

// idRun is the IDs lo..hi, all issued.
type idRun struct{ lo, hi int64 }

// unionOf returns how many distinct IDs runs cover, how many runs overlap
// one before them, and the highest ID.
func unionOf(runs []idRun) (union, overlaps, highest int64) {
	slices.SortFunc(runs, func(a, b idRun) int { return cmp.Compare(a.lo, b.lo) })
	hi := int64(0)
	for _, r := range runs {
		switch {
		case r.lo > hi:
			union += r.hi - r.lo + 1
		case r.hi > hi:
			overlaps++
			union += r.hi - hi
		default:
			overlaps++
		}
		hi = max(hi, r.hi)
	}
	return union, overlaps, hi
}

// figuresWorker is one load client: one keep-alive connection, requests
// one after another. It keeps the IDs it got as runs of consecutive IDs
// (a batch is mostly one run), so that tens of millions cost little memory.
type figuresWorker struct {
	inst  *instance
	path  string
	batch bool

	conn net.Conn
	br   *bufio.Reader
	req  []byte
	body []byte
	ids  []int64 // one reply's IDs

	runs        []idRun
	last        int64
	requests    int64
	idsN        int64
	unavailable int
	transport   int
	other       int
	firstOther  string
	outOfOrder  int64

	firstTransport string
}

func (w *figuresWorker) run(ctx context.Context, stop <-chan struct{}) {
	defer w.close()
	w.req = fmt.Appendf(nil, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", w.path, w.inst.addr)
	pause := func() {
		select {
		case <-time.After(5 * time.Millisecond):
		case <-stop:
		case <-ctx.Done():
		}
	}
	for {
		select {
		case <-stop:
			return
		case <-ctx.Done():
			return
		default:
		}
		status, body, err := w.roundTrip()
		w.requests++
		if err != nil {
			w.close()
			w.transport++
			if w.firstTransport == "" {
				w.firstTransport = err.Error()
			}
			pause()
			continue
		}
		ids, ok := parseAllocIDs(body, w.ids[:0])
		w.ids = ids
		if status != http.StatusOK || !ok {
			r, _ := parseReply(status, "", body)
			if status == http.StatusServiceUnavailable && r.RespCode == 3 {
				w.unavailable++
			} else {
				w.other++
				if w.firstOther == "" {
					w.firstOther = fmt.Sprintf("HTTP %d %.200q", status, body)
				}
			}
			pause()
			continue
		}
		for _, id := range ids {
			if id <= w.last {
				w.outOfOrder++
			}
			w.last = id
			if n := len(w.runs); n > 0 && w.runs[n-1].hi+1 == id {
				w.runs[n-1].hi = id
			} else {
				w.runs = append(w.runs, idRun{id, id})
			}
		}
		w.idsN += int64(len(ids))
	}
}

func (w *figuresWorker) close() {
	if w.conn != nil {
		_ = w.conn.Close()
		w.conn = nil
	}
}

// roundTrip sends the worker's request and returns the status and body
// (valid until the next call). It expects a Content-Length, as idalloc sends.
func (w *figuresWorker) roundTrip() (int, []byte, error) {
	if w.conn == nil {
		conn, err := net.DialTimeout("tcp", w.inst.addr, 5*time.Second)
		if err != nil {
			return 0, nil, err
		}
		w.conn = conn
		if w.br == nil {
			w.br = bufio.NewReaderSize(conn, 64<<10)
		} else {
			w.br.Reset(conn)
		}
	}
	if err := w.conn.SetDeadline(time.Now().Add(10 * time.Second)); err != nil {
		return 0, nil, err
	}
	if _, err := w.conn.Write(w.req); err != nil {
		return 0, nil, err
	}
	line, err := w.br.ReadSlice('\n')
	if err != nil {
		return 0, nil, err
	}
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return 0, nil, fmt.Errorf("bad status line %q", line)
	}
	length, closeAfter, chunked := -1, false, false
	for {
		h, err := w.br.ReadSlice('\n')
		if err != nil {
			return 0, nil, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, _ := bytes.Cut(h, []byte(":"))
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return 0, nil, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			closeAfter = bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			chunked = bytes.EqualFold(value, []byte("chunked"))
		}
	}
	if chunked {
		body, err := w.readChunked()
		if err == nil && closeAfter {
			w.close()
		}
		return status, body, err
	}
	if length < 0 || length > 1<<22 {
		return 0, nil, fmt.Errorf("answer without a usable Content-Length (%d)", length)
	}
	if cap(w.body) < length {
		w.body = make([]byte, length)
	}
	body := w.body[:length]
	if _, err := io.ReadFull(w.br, body); err != nil {
		return 0, nil, err
	}
	if closeAfter {
		w.close()
	}
	return status, body, nil
}

// readChunked reads a chunked body (net/http sends one for any answer
// above 2 KB written without a Content-Length, as idalloc's batches are).
func (w *figuresWorker) readChunked() ([]byte, error) {
	body := w.body[:0]
	for {
		line, err := w.br.ReadSlice('\n')
		if err != nil {
			return nil, err
		}
		size, _, _ := bytes.Cut(bytes.TrimRight(line, "\r\n"), []byte(";"))
		n, err := strconv.ParseInt(string(size), 16, 32)
		if err != nil || n < 0 || len(body)+int(n) > 1<<22 {
			return nil, fmt.Errorf("bad chunk size %q", line)
		}
		if n == 0 {
			// No trailers from idalloc: the empty line ends the body.
			for {
				l, err := w.br.ReadSlice('\n')
				if err != nil {
					return nil, err
				}
				if len(bytes.TrimRight(l, "\r\n")) == 0 {
					w.body = body
					return body, nil
				}
			}
		}
		body = slices.Grow(body, int(n))
		start := len(body)
		body = body[:start+int(n)]
		if _, err := io.ReadFull(w.br, body[start:]); err != nil {
			return nil, err
		}
		crlf, err := w.br.ReadSlice('\n')
		if err != nil || len(bytes.TrimRight(crlf, "\r\n")) != 0 {
			return nil, fmt.Errorf("chunk not followed by CRLF (%q, %v)", crlf, err)
		}
	}
}

// figuresOK heads every successful /alloc answer.
var figuresOK = []byte(`{"resp_code":0,"msg":"success","id":`)

// parseAllocIDs appends the IDs of a successful /alloc answer to dst:
// {"resp_code":0,"msg":"success","id":N} or the same with ,"ids":[…]
// before the closing brace. ok is false for any other body.
func parseAllocIDs(b []byte, dst []int64) (ids []int64, ok bool) {
	b = bytes.TrimSpace(b)
	if !bytes.HasPrefix(b, figuresOK) || len(b) == 0 || b[len(b)-1] != '}' {
		return dst, false
	}
	rest := b[len(figuresOK) : len(b)-1]
	first, rest, ok := parseDigits(rest)
	if !ok {
		return dst, false
	}
	if len(rest) == 0 {
		return append(dst, first), true
	}
	const idsKey = `,"ids":[`
	if !bytes.HasPrefix(rest, []byte(idsKey)) || rest[len(rest)-1] != ']' {
		return dst, false
	}
	rest = rest[len(idsKey) : len(rest)-1]
	for len(rest) > 0 {
		var id int64
		if id, rest, ok = parseDigits(rest); !ok {
			return dst, false
		}
		dst = append(dst, id)
		if len(rest) > 0 {
			if rest[0] != ',' {
				return dst, false
			}
			rest = rest[1:]
		}
	}
	return dst, len(dst) > 0 && dst[0] == first
}

// parseDigits reads a positive decimal number at the start of b.
func parseDigits(b []byte) (int64, []byte, bool) {
	var v int64
	i := 0
	for ; i < len(b) && i < 19 && b[i] >= '0' && b[i] <= '9'; i++ {
		v = v*10 + int64(b[i]-'0')
	}
	return v, b[i:], i > 0
}
