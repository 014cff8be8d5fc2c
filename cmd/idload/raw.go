package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"sync"
	"time"
)

// exchanger sends one request to base URL inst and returns the status, the
// Content-Type and the whole body (in buf's storage when it fits). It is
// used by one goroutine at a time.
type exchanger interface {
	exchange(inst int, buf []byte) (status int, contentType string, body []byte, err error)
	close()
}

// httpExchanger is the default: net/http's Transport, tuned in
// newTransport, with one prebuilt request per base URL reused for every
// call (each is finished before it is sent again).
type httpExchanger struct {
	tr   *http.Transport
	reqs []*http.Request
}

func newHTTPExchanger(ctx context.Context, tr *http.Transport, targets []string) (*httpExchanger, error) {
	e := &httpExchanger{tr: tr}
	for _, t := range targets {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, t, nil)
		if err != nil {
			return nil, err
		}
		req.Header.Set("User-Agent", "idload")
		e.reqs = append(e.reqs, req)
	}
	return e, nil
}

func (e *httpExchanger) exchange(inst int, buf []byte) (int, string, []byte, error) {
	res, err := e.tr.RoundTrip(e.reqs[inst])
	if err != nil {
		return 0, "", buf, err
	}
	buf, err = readBody(res.Body, buf)
	res.Body.Close()
	var ct string
	if v := res.Header["Content-Type"]; len(v) == 1 {
		ct = v[0]
	}
	return res.StatusCode, ct, buf, err
}

func (e *httpExchanger) close() {}

// rawExchanger (-client raw) speaks HTTP/1.1 over its own keep-alive
// connections: a prebuilt request written in one call, the answer read
// by the same goroutine. net/http's client hands every request across
// three goroutines (caller, writeLoop, readLoop); on a core shared with
// nothing but syscalls that handoff is a large share of the client's cost.
// It understands exactly what a load test needs: Content-Length, chunked
// and close-delimited bodies, Connection: close, 1xx skipped. Plain http only.
type rawExchanger struct {
	mu       sync.Mutex // guards each rawConn.conn against abort
	aborted  bool
	conns    []*rawConn
	timeout  time.Duration
	deadline time.Time // the run's end: no read or write outlives it
}

type rawConn struct {
	addr string
	req  []byte
	conn net.Conn
	br   *bufio.Reader
}

func newRawExchanger(targets []string, timeout time.Duration, deadline time.Time) (*rawExchanger, error) {
	e := &rawExchanger{timeout: timeout, deadline: deadline}
	for _, t := range targets {
		u, err := url.Parse(t)
		if err != nil {
			return nil, err
		}
		if u.Scheme != "http" {
			return nil, fmt.Errorf("-client raw speaks plain http only, not %s", u.Scheme)
		}
		host := u.Host
		if u.Port() == "" {
			host = net.JoinHostPort(u.Hostname(), "80")
		}
		req := "GET " + u.RequestURI() + " HTTP/1.1\r\nHost: " + u.Host + "\r\nUser-Agent: idload\r\n\r\n"
		e.conns = append(e.conns, &rawConn{addr: host, req: []byte(req)})
	}
	return e, nil
}

// close closes every connection; any goroutine may call it, and a read or
// write under way then fails at once. The exchanger dials no more after it.
func (e *rawExchanger) close() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.aborted = true
	for _, c := range e.conns {
		if c.conn != nil {
			_ = c.conn.Close()
		}
	}
}

func (e *rawExchanger) drop(c *rawConn) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

var errAborted = errors.New("run stopped")

var errBadResponse = errors.New("bad HTTP response")

func (e *rawExchanger) exchange(inst int, buf []byte) (int, string, []byte, error) {
	c := e.conns[inst]
	dl := time.Now().Add(e.timeout)
	if dl.After(e.deadline) {
		dl = e.deadline
	}
	if c.conn == nil {
		d := net.Dialer{Timeout: 5 * time.Second, Deadline: dl}
		conn, err := d.Dial("tcp", c.addr)
		if err != nil {
			return 0, "", buf, err
		}
		e.mu.Lock()
		if e.aborted {
			e.mu.Unlock()
			_ = conn.Close()
			return 0, "", buf, errAborted
		}
		c.conn = conn
		e.mu.Unlock()
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 16<<10)
		} else {
			c.br.Reset(conn)
		}
	}
	status, ct, body, keep, err := c.roundTrip(dl, buf)
	if err != nil || !keep {
		e.drop(c)
	}
	return status, ct, body, err
}

func (c *rawConn) roundTrip(dl time.Time, buf []byte) (status int, ct string, body []byte, keep bool, err error) {
	if err = c.conn.SetDeadline(dl); err != nil {
		return 0, "", buf, false, err
	}
	if _, err = c.conn.Write(c.req); err != nil {
		return 0, "", buf, false, err
	}
	for {
		var h respHead
		if h, err = readHead(c.br); err != nil {
			return 0, "", buf, false, err
		}
		if h.status >= 100 && h.status < 200 {
			continue // 1xx: the real answer follows
		}
		body, err = readFramedBody(c.br, &h, buf)
		return h.status, h.contentType, body, !h.close && !h.untilEOF && err == nil, err
	}
}

// respHead is what readHead keeps of a status line and its headers.
type respHead struct {
	status        int
	contentLength int64 // -1: none given
	chunked       bool
	close         bool
	untilEOF      bool // no length and not chunked: the body ends at EOF
	contentType   string
}

// knownCT spares an allocation for the Content-Type every answer carries.
const knownCT = "application/json"

func readHead(br *bufio.Reader) (respHead, error) {
	h := respHead{contentLength: -1}
	line, err := br.ReadSlice('\n')
	if err != nil {
		return h, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) || line[8] != ' ' {
		return h, fmt.Errorf("%w: status line %.40q", errBadResponse, line)
	}
	st, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return h, fmt.Errorf("%w: status line %.40q", errBadResponse, line)
	}
	h.status = st
	http10 := line[7] == '0'
	h.close = http10
	for {
		line, err = br.ReadSlice('\n')
		if err != nil {
			if errors.Is(err, bufio.ErrBufferFull) {
				return h, fmt.Errorf("%w: header line too long", errBadResponse)
			}
			return h, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 {
			break
		}
		name, value, ok := bytes.Cut(line, []byte(":"))
		if !ok {
			return h, fmt.Errorf("%w: header %.40q", errBadResponse, line)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 {
				return h, fmt.Errorf("%w: Content-Length %q", errBadResponse, value)
			}
			h.contentLength = n
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			if !bytes.EqualFold(value, []byte("chunked")) {
				return h, fmt.Errorf("%w: Transfer-Encoding %q", errBadResponse, value)
			}
			h.chunked = true
		case bytes.EqualFold(name, []byte("Connection")):
			if bytes.EqualFold(value, []byte("close")) {
				h.close = true
			} else if http10 && bytes.EqualFold(value, []byte("keep-alive")) {
				h.close = false
			}
		case bytes.EqualFold(name, []byte("Content-Type")):
			if string(value) == knownCT {
				h.contentType = knownCT
			} else {
				h.contentType = string(value)
			}
		}
	}
	if !h.chunked && h.contentLength < 0 && h.status != http.StatusNoContent && h.status != http.StatusNotModified {
		h.untilEOF = true
	}
	return h, nil
}

func readFramedBody(br *bufio.Reader, h *respHead, buf []byte) ([]byte, error) {
	switch {
	case h.chunked:
		return readChunked(br, buf)
	case h.contentLength >= 0:
		if h.contentLength > maxBody {
			return buf, fmt.Errorf("body larger than %d bytes", maxBody)
		}
		n := int(h.contentLength)
		buf = growTo(buf, n)
		_, err := io.ReadFull(br, buf[:n])
		return buf[:n], err
	case h.untilEOF:
		return readBody(br, buf)
	}
	return buf[:0], nil
}

func growTo(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, 0, n)
	}
	return b[:0]
}

// readChunked decodes a chunked body (extensions and trailers ignored).
func readChunked(br *bufio.Reader, buf []byte) ([]byte, error) {
	buf = buf[:0]
	for {
		line, err := br.ReadSlice('\n')
		if err != nil {
			return buf, err
		}
		line = bytes.TrimRight(line, "\r\n")
		if i := bytes.IndexByte(line, ';'); i >= 0 {
			line = line[:i]
		}
		size, err := strconv.ParseInt(string(bytes.TrimSpace(line)), 16, 64)
		if err != nil || size < 0 {
			return buf, fmt.Errorf("%w: chunk size %q", errBadResponse, line)
		}
		if size == 0 {
			for { // trailers, then the final CRLF
				line, err := br.ReadSlice('\n')
				if err != nil {
					return buf, err
				}
				if len(bytes.TrimRight(line, "\r\n")) == 0 {
					return buf, nil
				}
			}
		}
		if int64(len(buf))+size > maxBody {
			return buf, fmt.Errorf("body larger than %d bytes", maxBody)
		}
		n := len(buf)
		if cap(buf) < n+int(size) {
			nb := make([]byte, n, 2*(n+int(size)))
			copy(nb, buf)
			buf = nb
		}
		buf = buf[:n+int(size)]
		if _, err := io.ReadFull(br, buf[n:]); err != nil {
			return buf, err
		}
		var crlf [2]byte
		if _, err := io.ReadFull(br, crlf[:]); err != nil {
			return buf, err
		}
		if crlf != [2]byte{'\r', '\n'} {
			return buf, fmt.Errorf("%w: chunk not followed by CRLF", errBadResponse)
		}
	}
}
