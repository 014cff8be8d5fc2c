package server

import (
	"io"
	"mime"
	"net/http"
)

// What Leaf's routes (leaf.go) and Tinyid's (tinyid.go, tinyid_segment.go)
// share (docs/api.md §12). Both services are Spring Boot 1.5 applications whose
// controllers map their routes with @RequestMapping and no method, so they
// answer every method, and bind parameters from the query string and from
// a form-encoded body alike; Tinyid's Java client POSTs. idalloc answers
// GET and POST, reading both places. Their bodies are a String or a
// Jackson object, which Spring Boot sends as the two content types below.
//
// Their errors are not Spring's: Leaf answers an exception as 500 with
// Spring Boot's error page and Tinyid as 200 with a code in its envelope,
// or an empty text, whatever went wrong. idalloc answers each kind with the
// status of the one table (errors.go), so clients that test the status, as
// Leaf's do and Tinyid's client does (it takes a non-200 as no segment),
// see a refusal, and load balancers see a 503 with Retry-After as on every
// route; the words are the domain's, as the JSON envelope's msg.

// Content types as Spring Boot 1.5 writes them.
var (
	springText = []string{"text/plain;charset=UTF-8"}
	springJSON = []string{"application/json;charset=UTF-8"}
)

// formQuery returns r's parameters as one raw query string: the URL's,
// then those of a form-encoded POST body (at most maxBodyBytes), as Spring
// binds them. A parameter in both places reads as given twice, and
// queryParam refuses that as it refuses a repeat in the URL: a proxy that
// reads only the URL must not see another request than the one served.
func formQuery(w http.ResponseWriter, r *http.Request) (string, error) {
	raw := r.URL.RawQuery
	if r.Method != http.MethodPost {
		return raw, nil
	}
	// Java's HttpURLConnection, which Tinyid's client posts with, sends
	// this content type with an empty body.
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/x-www-form-urlencoded" {
		return raw, nil
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBodyBytes))
	switch {
	case err != nil:
		return "", badParam("body", "could not be read, or larger than 64 KiB")
	case len(body) == 0:
		return raw, nil
	case raw == "":
		return string(body), nil
	}
	return raw + "&" + string(body), nil
}

// words is an error's text for a wire with no field for the request ID:
// the message, and for an internal error the request ID its log line has.
func (a answer) words(rid string) string {
	if a.code == codeInternal {
		return a.msg + " (request_id " + rid + ")"
	}
	return a.msg
}

// failText answers err as plain text: its words, with its status.
func (s *Server) failText(w http.ResponseWriter, r *http.Request, err error) int {
	a, rid := s.classifyFor(w, r, err)
	return sendAs(w, springText, a.status, []byte(a.words(rid)))
}
