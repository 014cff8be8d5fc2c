package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"

	"github.com/idalloc/idalloc/segment"
)

// Header values are shared slices assigned straight into the header map:
// Header().Set would canonicalise the key and allocate a slice per response.
// net/http only reads them.
var (
	jsonCT     = []string{"application/json"}
	noStore    = []string{"no-store"} // a cached /alloc answer would be a duplicate ID
	retryAfter = []string{"1"}
)

const (
	requestIDHeader = "X-Request-Id"
	okPrefix        = `{"resp_code":0,"msg":"success"`
)

// envelope heads every encoding/json body; embedded, its fields come first.
type envelope struct {
	RespCode int    `json:"resp_code"`
	Msg      string `json:"msg"`
}

var success = envelope{RespCode: codeOK, Msg: "success"}

// maxPooledBuf keeps one huge batch from pinning its buffer in the pool.
const maxPooledBuf = 64 << 10

// bufPool holds *[]byte: a pointer goes into an interface without allocating.
var bufPool = sync.Pool{New: func() any {
	b := make([]byte, 0, 512)
	return &b
}}

func getBuf() *[]byte { return bufPool.Get().(*[]byte) }

func putBuf(bp *[]byte) {
	if cap(*bp) > maxPooledBuf {
		return
	}
	*bp = (*bp)[:0]
	bufPool.Put(bp)
}

// send writes a complete JSON body with its status in one Write and returns
// the status for the metrics. Every 503 gets Retry-After here, so no path
// can forget it: 1 second unless the error's answer set another.
func send(w http.ResponseWriter, status int, body []byte) int {
	return sendAs(w, jsonCT, status, body)
}

// sendAs is send for a body of Content-Type ct: the few routes that answer
// as another service does (compat.go).
func sendAs(w http.ResponseWriter, ct []string, status int, body []byte) int {
	h := w.Header()
	h["Content-Type"] = ct
	h["Cache-Control"] = noStore
	if status == http.StatusServiceUnavailable {
		if _, set := h["Retry-After"]; !set {
			h["Retry-After"] = retryAfter
		}
	}
	if status != http.StatusOK {
		w.WriteHeader(status)
	}
	_, _ = w.Write(body) // a write error means the client left; nobody to tell
	return status
}

// atCapRefusal is the whole HTTP answer written to a new connection that
// finds max_conns open, each in a request, before its request is read, after
// which the connection is closed (frontend.Limiter): a 503 with the
// contract's envelope for kind unavailable and Retry-After, as every 503.
var atCapRefusal = func() []byte {
	body := append(atCapAnswer.appendTo(nil), '}')
	return fmt.Appendf(nil, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nCache-Control: no-store\r\n"+
		"Retry-After: 1\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s",
		atCapAnswer.status, http.StatusText(atCapAnswer.status), len(body), body)
}()

// sendPooled sends *bp and returns it to the pool.
func sendPooled(w http.ResponseWriter, status int, bp *[]byte) int {
	return sendPooledAs(w, jsonCT, status, bp)
}

// sendPooledAs is sendPooled for a body of Content-Type ct.
func sendPooledAs(w http.ResponseWriter, ct []string, status int, bp *[]byte) int {
	sendAs(w, ct, status, *bp)
	putBuf(bp)
	return status
}

// sendJSON answers the cold paths, whose bodies are structs embedding
// envelope.
func (s *Server) sendJSON(w http.ResponseWriter, r *http.Request, status int, v any) int {
	b, err := json.Marshal(v)
	if err != nil {
		return s.fail(w, r, err)
	}
	return send(w, status, b)
}

// appendIDs appends `,"id":first,"ids":[...]` and, with strings, the
// `"id_str"` and `"ids_str"` forms JavaScript clients need above 2^53.
func appendIDs(b []byte, ids []int64, strs bool) []byte {
	b = append(b, `,"id":`...)
	b = strconv.AppendInt(b, ids[0], 10)
	if strs {
		b = append(b, `,"id_str":"`...)
		b = strconv.AppendInt(b, ids[0], 10)
		b = append(b, '"')
	}
	b = append(b, `,"ids":[`...)
	from := len(b)
	for i, id := range ids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, id, 10)
	}
	b = append(b, ']')
	if strs {
		// The same digits again, quoted: copying them costs a fraction of
		// formatting each ID a second time.
		digits := b[from : len(b)-1]
		b = append(b, `,"ids_str":["`...)
		for len(digits) > 0 {
			n := bytes.IndexByte(digits, ',')
			if n < 0 {
				b = append(b, digits...)
				break
			}
			b = append(b, digits[:n]...)
			b = append(b, `","`...)
			digits = digits[n+1:]
		}
		b = append(b, `"]`...)
	}
	return b
}

const hexDigits = "0123456789abcdef"

// appendString appends s as a JSON string. The strings it gets are our own
// messages and validated request IDs, so escaping quotes, backslashes and
// control bytes is all JSON needs.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c < 0x20:
			b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
		default:
			b = append(b, c)
		}
	}
	return append(b, '"')
}

// requestID honours a caller's X-Request-Id when it is safe to echo into
// headers, JSON and logs, and otherwise makes one. It is only called on the
// error path, so successful requests pay nothing for it.
func (s *Server) requestID(r *http.Request) string {
	// The tag alphabet and length suit request IDs too: UUIDs and trace IDs
	// pass, nothing needs escaping.
	if id := r.Header.Get(requestIDHeader); segment.ValidTag(id) {
		return id
	}
	return s.ridPrefix + strconv.FormatUint(s.ridSeq.Add(1), 10)
}
