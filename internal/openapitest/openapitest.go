//go:build openapi

package openapitest

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/pb33f/libopenapi"
	validator "github.com/pb33f/libopenapi-validator"
	"github.com/pb33f/libopenapi-validator/config"
	verrors "github.com/pb33f/libopenapi-validator/errors"
	"github.com/pb33f/libopenapi-validator/helpers"
	"github.com/pb33f/libopenapi-validator/paths"
	"github.com/pb33f/libopenapi-validator/responses"
	"github.com/pb33f/libopenapi-validator/schema_validation"
	v3 "github.com/pb33f/libopenapi/datamodel/high/v3"
)

// Spec is a loaded description.
type Spec struct {
	model   *v3.Document
	v       validator.Validator
	opts    []config.Option
	routing *config.ValidationOptions
	schemas schema_validation.SchemaValidator
	// unmatched are the answers to a path not listed (404) and to a
	// method a listed path does not take (405).
	unmatched map[int]*v3.Response

	mu   sync.Mutex
	seen map[Answer]int
}

// Load reads and compiles the description at path, and checks it is a
// valid OpenAPI document.
func Load(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	doc, err := libopenapi.NewDocument(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	m, err := doc.BuildV3Model()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	// Format assertions hold date-time and int64 to their formats; the
	// standard decoders read text and form bodies, so their schemas are
	// checked too.
	opts := []config.Option{config.WithFormatAssertions(), config.WithStandardBodyDecoders()}
	s := &Spec{
		model:     &m.Model,
		v:         validator.NewValidatorFromV3Model(&m.Model, opts...),
		opts:      opts,
		routing:   config.NewValidationOptions(opts...),
		schemas:   schema_validation.NewSchemaValidator(opts...),
		unmatched: map[int]*v3.Response{},
		seen:      map[Answer]int{},
	}
	s.v.SetDocument(doc)
	if ok, errs := s.v.ValidateDocument(); !ok {
		return nil, fmt.Errorf("%s is not a valid OpenAPI document: %s", path, describe(errs))
	}
	for status, name := range map[int]string{http.StatusNotFound: "UnknownRoute", http.StatusMethodNotAllowed: "MethodNotAllowed"} {
		r, ok := m.Model.Components.Responses.Get(name)
		if !ok {
			return nil, fmt.Errorf("%s: components.responses.%s is missing", path, name)
		}
		s.unmatched[status] = r
	}
	return s, nil
}

// Routes lists every method and path template the description has, as
// "GET /alloc".
func (s *Spec) Routes() []string {
	var out []string
	for p := s.model.Paths.PathItems.First(); p != nil; p = p.Next() {
		for op := p.Value().GetOperations().First(); op != nil; op = op.Next() {
			out = append(out, strings.ToUpper(op.Key())+" "+p.Key())
		}
	}
	slices.Sort(out)
	return out
}

// Seen returns how many answers of each route and status Check has
// checked.
func (s *Spec) Seen() map[Answer]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[Answer]int, len(s.seen))
	for a, n := range s.seen {
		out[a] = n
	}
	return out
}

// Check returns nil when x's answer is one the description allows for
// its route, and, when the server accepted the request (2xx, 304), the
// request is one it allows too; otherwise an error that names the route,
// the status and the validator's words.
func (s *Spec) Check(x Exchange) error {
	req := x.Request.Clone(x.Request.Context())
	req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
	req.ContentLength = int64(len(x.RequestBody))
	body := x.Body
	if strings.EqualFold(x.Header.Get("Content-Encoding"), "gzip") && len(body) > 0 {
		// Checked as the client reads it.
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err == nil {
			body, err = io.ReadAll(zr)
		}
		if err != nil {
			return fmt.Errorf("%s %s answered %d with a body that is not gzip: %v", req.Method, req.URL, x.Status, err)
		}
	}
	resp := &http.Response{StatusCode: x.Status, Header: x.Header.Clone(), Request: req,
		Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body))}

	answer := Answer{Method: req.Method, Status: x.Status}
	_, errs, route := paths.FindPath(req, s.model, s.routing)
	var err error
	switch {
	case route != "" && emptyParameter(route, req.URL.EscapedPath()):
		// A router's {param} is one segment that is not empty: /tags/
		// is no tag's path.
		err = s.checkUnmatched(req, resp, body, http.StatusNotFound)
	case len(errs) > 0 && errs[0].ValidationType == helpers.PathValidation && errs[0].ValidationSubType == helpers.ValidationMissing:
		err = s.checkUnmatched(req, resp, body, http.StatusNotFound)
	case len(errs) > 0 && errs[0].ValidationType == helpers.PathValidation && errs[0].ValidationSubType == helpers.ValidationMissingOperation:
		answer.Route = route
		err = s.checkUnmatched(req, resp, body, http.StatusMethodNotAllowed)
	case len(errs) > 0:
		err = errors.New(describe(errs))
	default:
		answer.Route = route
		if ok, errs := s.v.ValidateHttpResponse(req, resp); !ok {
			err = errors.New(describe(errs))
			break
		}
		if accepted(x.Status) {
			req.Body = io.NopCloser(bytes.NewReader(x.RequestBody))
			if ok, errs := s.v.ValidateHttpRequestSync(req); !ok {
				err = fmt.Errorf("the server accepted a request the description refuses: %s", describe(errs))
			}
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s (%s) answered %d %s: %w", req.Method, req.URL.RequestURI(), routeName(answer.Route), x.Status, brief(body), err)
	}
	s.mu.Lock()
	s.seen[answer]++
	s.mu.Unlock()
	return nil
}

// checkUnmatched checks the answer to a request the description has no
// operation for against its components response for want.
func (s *Spec) checkUnmatched(req *http.Request, resp *http.Response, body []byte, want int) error {
	if resp.StatusCode != want {
		return fmt.Errorf("the description has no operation for it, so the answer must be %d", want)
	}
	r := s.unmatched[want]
	code := strconv.Itoa(want)
	if ok, errs := responses.ValidateResponseHeaders(req, resp, r.Headers, "", code, s.opts...); !ok {
		return errors.New(describe(errs))
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	media, ok := r.Content.Get(mt)
	if !ok {
		return fmt.Errorf("Content-Type %q is not one the %d answer has", mt, want)
	}
	if ok, errs := s.schemas.ValidateSchemaBytes(media.Schema.Schema(), body); !ok {
		return errors.New(describe(errs))
	}
	return nil
}

// emptyParameter reports whether path leaves a parameter of template
// empty.
func emptyParameter(template, path string) bool {
	ts, ps := strings.Split(template, "/"), strings.Split(path, "/")
	if len(ts) != len(ps) {
		return false
	}
	for i, t := range ts {
		if strings.HasPrefix(t, "{") && ps[i] == "" {
			return true
		}
	}
	return false
}

// accepted reports whether status says the server accepted the request.
func accepted(status int) bool {
	return status/100 == 2 || status == http.StatusNotModified
}

func routeName(route string) string {
	if route == "" {
		return "a path the description does not list"
	}
	return "route " + route
}

// brief is the start of a body, for an error message.
func brief(body []byte) string {
	const most = 300
	if len(body) > most {
		return fmt.Sprintf("%q…", body[:most])
	}
	return fmt.Sprintf("%q", body)
}

// describe is the validator's words for errs, one line each.
func describe(errs []*verrors.ValidationError) string {
	var b strings.Builder
	for _, e := range errs {
		b.WriteString("\n\t")
		b.WriteString(e.Message)
		if e.Reason != "" && e.Reason != e.Message {
			b.WriteString(": ")
			b.WriteString(e.Reason)
		}
		for _, f := range e.SchemaValidationErrors {
			b.WriteString("\n\t\t")
			if f.FieldPath != "" {
				b.WriteString(f.FieldPath)
				b.WriteString(": ")
			}
			b.WriteString(f.Reason)
			if f.KeywordLocation != "" {
				b.WriteString(" (")
				b.WriteString(f.KeywordLocation)
				b.WriteString(")")
			}
		}
	}
	return b.String()
}
