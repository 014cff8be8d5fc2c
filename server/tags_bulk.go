package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"strings"

	"github.com/idalloc/idalloc/access"
	"github.com/idalloc/idalloc/errs"
	"github.com/idalloc/idalloc/segment"
)

// POST /tags with a JSON array creates many tags in one request (docs/api.md
// §13): each entry is the object POST /tags takes for one tag, and the
// answer is 201 with the tags created, in the request's order, each as the
// one-tag answer has it. The allocator writes them a chunk per
// transaction (segment.Allocator.CreateTags), which is what makes 100,000
// tags a matter of seconds rather than minutes of one POST each.
//
// Refusals name the entry at fault as "tags[i]" (i from 0) and its field:
// {"resp_code":1,…,"field":"tags[3].step"}. Every entry is read and
// checked before anything is written, so an entry that is not a tag, an
// app_tag given twice, or more than maxBulkTags entries refuse the whole
// request and create nothing. An entry whose tag exists already is the
// allocator's to report (segment.Allocator.CreateTags).

// maxBulkTags bounds the entries of one request, and so what one request
// makes the server hold: its body, each entry decoded, the answer. 10,000
// tags of 70 bytes took 0.23 s end to end on SQLite, MariaDB and
// PostgreSQL alike, the audit log included; 100,000 are ten requests.
const maxBulkTags = 10_000

// maxBulkBodyBytes bounds a POST /tags body: 10,000 entries of some 800
// bytes, every field given and a description of 256 characters.
const maxBulkBodyBytes = 8 << 20

// auditDetailBytes bounds one audit entry's detail: MySQL's TEXT column
// holds 65,535 bytes.
const auditDetailBytes = 60_000

var errTooManyTags = badParam("tags", "more than "+strconv.Itoa(maxBulkTags)+" entries: send at most "+
	strconv.Itoa(maxBulkTags)+" tags a request")

// isArray reports whether a body is a JSON array: its first byte that is
// not white space is '['.
func isArray(data []byte) bool {
	data = bytes.TrimLeft(data, " \t\r\n")
	return len(data) > 0 && data[0] == '['
}

// createTags serves POST /tags with an array.
func (s *Server) createTags(w http.ResponseWriter, r *http.Request, data []byte) int {
	nts, err := newTagsOf(data)
	if err != nil {
		return s.fail(w, r, err)
	}
	made, err := s.seg.CreateTags(r.Context(), nts)
	if len(made) > 0 { // one line: the audit log lists them
		s.log.Info("tags created", "count", len(made), "first", made[0].AppTag, "last", made[len(made)-1].AppTag)
	}
	created := make([]segment.TagRecord, len(made))
	for i, t := range made {
		created[i] = t.Record(s.seg.DatedFormat(t.AppTag))
	}
	s.recordCreated(r, created)
	if err != nil && len(created) == 0 {
		return s.fail(w, r, err)
	}
	if err != nil {
		// Some may have been created all the same (tags that existed,
		// or a fault after the first chunks): the answer says which.
		return s.failCreated(w, r, err, created)
	}
	return s.sendJSON(w, r, http.StatusCreated, struct {
		envelope
		Tags []segment.TagRecord `json:"tags"`
	}{success, created})
}

// newTagsOf reads an array of tags, each as newTagOf reads one, refusing
// the first entry at fault by its index.
func newTagsOf(data []byte) ([]segment.NewTag, error) {
	var raws []json.RawMessage
	if err := json.Unmarshal(data, &raws); err != nil {
		return nil, badParam("body", "want a JSON object, or an array of them")
	}
	if len(raws) > maxBulkTags {
		return nil, errTooManyTags
	}
	nts := make([]segment.NewTag, len(raws))
	for i, raw := range raws {
		if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
			return nil, badParam(entryField(i, ""), "want a JSON object")
		}
		nt, err := newTagOf(raw)
		if err != nil {
			return nil, inEntry(i, err)
		}
		nts[i] = nt
	}
	return nts, nil
}

// entryField names field of entry i as the domain does: "tags[3].step",
// or "tags[3]" for the entry itself.
func entryField(i int, field string) string {
	f := "tags[" + strconv.Itoa(i) + "]"
	if field != "" && field != "body" {
		f += "." + field
	}
	return f
}

// inEntry is err, newTagOf's refusal of entry i, naming the entry.
func inEntry(i int, err error) error {
	if pe, ok := errors.AsType[*paramError](err); ok {
		name := entryField(i, pe.field)
		return &paramError{field: name, msg: strings.Replace(pe.msg, pe.field, name, 1)}
	}
	if e, ok := errs.Describe(err); ok {
		return errs.E(e.Kind, entryField(i, e.Field), e.Reason, err)
	}
	return err
}

// failCreated answers err with the tags created in spite of it, as
// "tags", so that a client knows what to send again.
func (s *Server) failCreated(w http.ResponseWriter, r *http.Request, err error, created []segment.TagRecord) int {
	a, rid := s.classifyFor(w, r, err)
	bp := getBuf()
	b := a.appendTo(*bp)
	if a.code == codeInternal {
		b = append(b, `,"request_id":`...)
		b = appendString(b, rid)
	}
	list, _ := json.Marshal(created) // plain fields: cannot fail
	b = append(append(b, `,"tags":`...), list...)
	*bp = append(b, '}')
	return sendPooled(w, a.status, bp)
}

// recordCreated writes the audit log's entries of a bulk create: one per
// run of tags whose details fit a detail column, each
// {"count":n,"tags":[…]} with every tag as the one-tag entry has it, with
// no subject (a change to many). 10,000 entries of their own would be
// 10,000 writes, most of the request's time; one would not fit.
func (s *Server) recordCreated(r *http.Request, created []segment.TagRecord) {
	if s.tokens == nil || len(created) == 0 {
		return
	}
	var run []json.RawMessage
	size := 0
	flush := func() {
		list, _ := json.Marshal(run) // raw JSON of our own: cannot fail
		s.record(r, access.ActionTagCreate, "", struct {
			Count int             `json:"count"`
			Tags  json.RawMessage `json:"tags"`
		}{len(run), list})
		run, size = run[:0], 0
	}
	for _, c := range created {
		one, _ := json.Marshal(c)
		if size+len(one)+1 > auditDetailBytes-len(`{"count":10000,"tags":[]}`) && len(run) > 0 {
			flush()
		}
		run = append(run, one)
		size += len(one) + 1
	}
	flush()
}
