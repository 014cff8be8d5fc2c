package e2e

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
)

// getter is either client.
type getter interface {
	get(path string) (reply, error)
	close()
}

// client talks to one idalloc over one keep-alive connection at a time:
// requests from one goroutine through one client are sequential on it.
type client struct {
	base string
	tr   *http.Transport
	hc   *http.Client
}

func newClient(base string, timeout time.Duration) *client {
	tr := &http.Transport{
		Proxy:               nil, // 127.0.0.1 only, whatever the environment says
		MaxIdleConns:        1,
		MaxIdleConnsPerHost: 1,
		MaxConnsPerHost:     1,
		DisableCompression:  true,
		IdleConnTimeout:     30 * time.Second,
	}
	return &client{base: base, tr: tr, hc: &http.Client{Transport: tr, Timeout: timeout}}
}

func (c *client) close() { c.tr.CloseIdleConnections() }

// reply is any idalloc answer: the envelope and the fields the tests read.
type reply struct {
	HTTPStatus  int     `json:"-"`
	RetryAfter  string  `json:"-"`
	RespCode    int     `json:"resp_code"`
	Msg         string  `json:"msg"`
	Kind        string  `json:"kind"`
	Field       string  `json:"field"`
	ID          int64   `json:"id"`
	IDs         []int64 `json:"ids"`
	Status      string  `json:"status"`
	Left        int64   `json:"left"`
	WorkerID    int64   `json:"worker_id"`
	Cluster     string  `json:"cluster"`
	TimestampMS int64   `json:"timestamp_ms"`
	Sequence    int64   `json:"sequence"`
	// SnowflakeWaitMS is /health's wait until the instance holds a lease
	// whose fence is open, 0 when there is none; Snowflake says why.
	SnowflakeWaitMS int64  `json:"snowflake_wait_ms"`
	Snowflake       string `json:"snowflake"`
}

// timedCall is one request as a load client saw it: when it was sent, when
// its answer (or error) came back, and what that was.
type timedCall struct {
	sent, recv time.Time
	r          reply
	err        error
}

// allocOK is the exact body of a successful single /alloc, parsed without
// encoding/json on the hot path of the load tests.
var allocOK = []byte(`{"resp_code":0,"msg":"success","id":`)

func (c *client) get(path string) (reply, error) {
	return c.do(http.MethodGet, path, "")
}

func (c *client) post(path, body string) (reply, error) {
	return c.do(http.MethodPost, path, body)
}

func (c *client) do(method, path, body string) (reply, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		return reply{}, err
	}
	resp, err := c.hc.Do(req)
	if err != nil {
		return reply{}, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return reply{}, fmt.Errorf("%s %s: read body: %w", method, path, err)
	}
	r, err := parseReply(resp.StatusCode, resp.Header.Get("Retry-After"), b)
	if err != nil {
		return r, fmt.Errorf("%s %s: %w", method, path, err)
	}
	return r, nil
}

// parseReply decodes an answer's body.
func parseReply(status int, retryAfter string, b []byte) (reply, error) {
	r := reply{HTTPStatus: status, RetryAfter: retryAfter}
	b = bytes.TrimSpace(b)
	if bytes.HasPrefix(b, allocOK) && len(b) > len(allocOK)+1 && b[len(b)-1] == '}' {
		if id, err := strconv.ParseInt(string(b[len(allocOK):len(b)-1]), 10, 64); err == nil {
			r.Msg, r.ID = "success", id
			return r, nil
		}
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("HTTP %d, body not JSON: %q", status, b)
	}
	return r, nil
}

// rawClient is a minimal HTTP/1.1 keep-alive client on one TCP connection,
// for the load tests: net/http's client costs several times more CPU under
// -race, and this one makes "one client, one connection" literal. It
// re-dials after an error or a "Connection: close". Not safe for concurrent
// use.
type rawClient struct {
	addr    string
	timeout time.Duration
	conn    net.Conn
	br      *bufio.Reader
	buf     []byte
	dials   int
}

func newRawClient(addr string, timeout time.Duration) *rawClient {
	return &rawClient{addr: addr, timeout: timeout}
}

func (c *rawClient) close() {
	if c.conn != nil {
		_ = c.conn.Close()
		c.conn = nil
	}
}

// get sends GET path and reads the answer.
func (c *rawClient) get(path string) (reply, error) {
	r, err := c.roundTrip(path)
	if err != nil {
		c.close()
	}
	return r, err
}

func (c *rawClient) roundTrip(path string) (reply, error) {
	if c.conn == nil {
		conn, err := net.DialTimeout("tcp", c.addr, c.timeout)
		if err != nil {
			return reply{}, err
		}
		c.conn, c.dials = conn, c.dials+1
		if c.br == nil {
			c.br = bufio.NewReaderSize(conn, 4096)
		} else {
			c.br.Reset(conn)
		}
	}
	if err := c.conn.SetDeadline(time.Now().Add(c.timeout)); err != nil {
		return reply{}, err
	}
	c.buf = append(c.buf[:0], "GET "...)
	c.buf = append(c.buf, path...)
	c.buf = append(c.buf, " HTTP/1.1\r\nHost: "...)
	c.buf = append(c.buf, c.addr...)
	c.buf = append(c.buf, "\r\n\r\n"...)
	if _, err := c.conn.Write(c.buf); err != nil {
		return reply{}, err
	}
	line, err := c.br.ReadSlice('\n')
	if err != nil {
		return reply{}, err
	}
	// "HTTP/1.1 200 OK\r\n"
	if len(line) < 12 || !bytes.HasPrefix(line, []byte("HTTP/1.")) {
		return reply{}, fmt.Errorf("bad status line %q", line)
	}
	status, err := strconv.Atoi(string(line[9:12]))
	if err != nil {
		return reply{}, fmt.Errorf("bad status line %q", line)
	}
	length, closeAfter, retryAfter := -1, false, ""
	for {
		h, err := c.br.ReadSlice('\n')
		if err != nil {
			return reply{}, err
		}
		h = bytes.TrimRight(h, "\r\n")
		if len(h) == 0 {
			break
		}
		name, value, ok := bytes.Cut(h, []byte(":"))
		if !ok {
			return reply{}, fmt.Errorf("bad header %q", h)
		}
		value = bytes.TrimSpace(value)
		switch {
		case bytes.EqualFold(name, []byte("Content-Length")):
			if length, err = strconv.Atoi(string(value)); err != nil {
				return reply{}, fmt.Errorf("bad Content-Length %q", value)
			}
		case bytes.EqualFold(name, []byte("Connection")):
			closeAfter = bytes.EqualFold(value, []byte("close"))
		case bytes.EqualFold(name, []byte("Retry-After")):
			retryAfter = string(value)
		case bytes.EqualFold(name, []byte("Transfer-Encoding")):
			return reply{}, fmt.Errorf("unexpected Transfer-Encoding %q", value)
		}
	}
	if length < 0 || length > 1<<20 {
		return reply{}, fmt.Errorf("answer without a usable Content-Length (%d)", length)
	}
	if cap(c.buf) < length {
		c.buf = make([]byte, length)
	}
	body := c.buf[:length]
	if _, err := io.ReadFull(c.br, body); err != nil {
		return reply{}, err
	}
	r, err := parseReply(status, retryAfter, body)
	if closeAfter {
		c.close()
	}
	return r, err
}

// checkUnique returns how many IDs of ids occur more than once and up to
// five examples. It sorts ids.
func checkUnique(ids []int64) (dups int, examples []int64) {
	slices.Sort(ids)
	for i := 1; i < len(ids); i++ {
		if ids[i] == ids[i-1] {
			dups++
			if len(examples) < 5 {
				examples = append(examples, ids[i])
			}
		}
	}
	return dups, examples
}

// ms formats a duration in milliseconds for the figures.
func ms(d time.Duration) string {
	return strconv.FormatFloat(float64(d)/float64(time.Millisecond), 'f', 1, 64) + "ms"
}
