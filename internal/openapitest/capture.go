package openapitest

import (
	"bytes"
	"io"
	"net/http"
)

// Serve serves r with h through w, as h alone would, and returns the
// exchange: what h read of the request's body and what it answered. The
// answer reaches w as h wrote it; the copies are for Check.
func Serve(h http.Handler, w http.ResponseWriter, r *http.Request) Exchange {
	var in bytes.Buffer
	if r.Body != nil && r.Body != http.NoBody {
		r.Body = &teeBody{r: io.TeeReader(r.Body, &in), c: r.Body}
	}
	c := &capture{ResponseWriter: w}
	h.ServeHTTP(c, r)
	if c.header == nil { // nothing written: net/http answers 200
		c.snapshot(http.StatusOK)
	}
	return Exchange{Request: r, RequestBody: in.Bytes(), Status: c.status, Header: c.header, Body: c.body.Bytes()}
}

// teeBody is a request body that copies what is read of it.
type teeBody struct {
	r io.Reader
	c io.Closer
}

func (b *teeBody) Read(p []byte) (int, error) { return b.r.Read(p) }
func (b *teeBody) Close() error               { return b.c.Close() }

// capture is a ResponseWriter that keeps the status, the header as it was
// sent, and a copy of the body.
type capture struct {
	http.ResponseWriter
	status int
	header http.Header
	body   bytes.Buffer
}

func (c *capture) snapshot(status int) {
	if c.header == nil {
		c.status, c.header = status, c.ResponseWriter.Header().Clone()
	}
}

func (c *capture) WriteHeader(status int) {
	c.snapshot(status)
	c.ResponseWriter.WriteHeader(status)
}

func (c *capture) Write(b []byte) (int, error) {
	c.snapshot(http.StatusOK)
	c.body.Write(b)
	return c.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the connection's writer.
func (c *capture) Unwrap() http.ResponseWriter { return c.ResponseWriter }
