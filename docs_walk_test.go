package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/frontend"
)

// walkDocs are the documents whose curl examples TestDocsWalkThrough runs,
// in the order a reader meets them, each on a fresh instance.
var walkDocs = []string{"README.md", "docs/api.md"}

// docHost is the address the examples call; other hosts are not run.
const docHost = "localhost:8880"

// notRun are the examples a test cannot run, each matched by a substring
// of its command. Every entry must match an example, and any other
// command with a placeholder ($VAR, <…>, …) fails the test: either it
// becomes runnable or it is listed here.
var notRun = []struct{ match, why string }{
	{"$TOKEN", "alloc_auth on is a restart with other config, and $TOKEN stands for the token POST /tokens answered"},
}

// TestDocsWalkThrough: the curl examples of the README and docs/api.md
// run top to bottom, each document's as one walk-through against an
// idalloc built and served as run does on a fresh SQLite file with
// snowflake on, and answer what the docs say they answer, so that the
// docs and the server cannot drift apart. Each document gets an instance
// of its own because each says so: the README's examples follow its `go
// run .` on a new idalloc.db, docs/api.md's its opening paragraph's fresh
// instance. No tag is reused across the two either. A comment line with
// restartMark stops the instance gracefully and starts it again on its
// store, as the README does before its third ID.
//
// Which lines: every line of a ```sh block that starts with `curl ` or
// `$ curl ` (a quote left open continues on the next line), except those of
// another host than localhost:8880 and those of notRun. The command is
// parsed (-X, -H, -d and the URL, as the docs write them), not run by a
// shell; localhost:8880 becomes the test server, which gets the headers
// curl sends.
//
// The answer an example shows is its trailing `# …` comment; for a `$ curl`
// line, the next line; for a `curl` line with no trailing comment, the `#`
// lines that follow it, joined. An answer may start with its HTTP status
// (`201 {…}`), which is then checked. Then:
//   - a whole JSON body, or a bare number (Leaf's text routes), is checked
//     exactly: the same keys and values, except the values the docs
//     cannot know (unknowable), checked by shape: the same JSON type, the
//     same keys, the same length of an array;
//   - anything else (an answer that starts with `...`, or prose) is
//     checked for the fragments it quotes, if any: each word with `":` in
//     it, between the `...`. A fragment that parses as JSON members
//     (`"total":2,"next":"tenant-0001"`) is checked member by member as
//     above; another (`"tags":[{"app_tag":"test_business",`) must be in
//     the body as written.
//
// An example with no status given and no whole body to compare must
// succeed (2xx). A value the docs cannot know that a later example sends
// back (the token of POST /workerid for its renew and release) is
// replaced, in the later commands, by what the server answered.
//
// No tag is reused: a tag created by one POST /tags example and again by
// another fails the test, and so does an `exists` answer to a POST /tags
// that does not show it.
func TestDocsWalkThrough(t *testing.T) {
	w := walk{t: t, subst: map[string]string{}, formats: map[string]string{}, created: map[string]string{}}
	used := make([]bool, len(notRun))
	var skipped []string
	for _, doc := range walkDocs {
		text, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		examples := curlExamples(doc, string(text))
		if len(examples) == 0 {
			t.Errorf("%s: no curl example found", doc)
			continue
		}
		dsn := filepath.Join(t.TempDir(), "idalloc.db") // a fresh instance, as each document says
		var stop func()
		w.addr, stop = serveForDocs(t, dsn)
		for _, ex := range examples {
			if ex.restart {
				stop()
				w.addr, stop = serveForDocs(t, dsn)
				w.restarts++
				continue
			}
			if i := slices.IndexFunc(notRun, func(n struct{ match, why string }) bool { return strings.Contains(ex.cmd, n.match) }); i >= 0 {
				used[i] = true
				skipped = append(skipped, fmt.Sprintf("%s:%d (%s)", ex.doc, ex.line, notRun[i].why))
				continue
			}
			w.run(ex)
		}
	}
	for i, n := range notRun {
		if !used[i] {
			t.Errorf("notRun lists %q, which no example's command has any more: remove it", n.match)
		}
	}
	t.Logf("%d examples run: %d answers checked exactly, %d with values checked by shape, %d by the fragments they quote, %d only for success; %d restarts; %d other hosts; not run: %s",
		w.ran, w.exact, w.shape, w.fragment, w.success, w.restarts, w.otherHost, strings.Join(skipped, "; "))
}

// example is one curl command of a doc and the answer it shows.
type example struct {
	doc    string
	line   int
	cmd    string // the command as written, its lines joined
	answer string // what the doc shows it answers; "" for nothing
	// restart: not a command but a comment saying the server is stopped
	// (Ctrl-C) and started again on the same store (restartMark).
	restart bool
}

// restartMark, in a comment line of a ```sh block, stops the instance
// gracefully and starts it again on its store, as the README's first IDs
// block does between its second and third ID.
const restartMark = "go run . again"

func (ex example) String() string { return fmt.Sprintf("%s:%d: %s", ex.doc, ex.line, ex.cmd) }

// curlExamples returns the curl commands of the ```sh blocks of text, in
// order, with the answers they show.
func curlExamples(doc, text string) []example {
	lines := strings.Split(text, "\n")
	var out []example
	inSh := false
	for i := 0; i < len(lines); i++ {
		l := strings.TrimSpace(lines[i])
		if !inSh {
			inSh = l == "```sh"
			continue
		}
		if strings.HasPrefix(l, "```") {
			inSh = false
			continue
		}
		if strings.HasPrefix(l, "#") && strings.Contains(l, restartMark) {
			out = append(out, example{doc: doc, line: i + 1, cmd: l, restart: true})
			continue
		}
		prompt := strings.HasPrefix(l, "$ curl ")
		if !prompt && !strings.HasPrefix(l, "curl ") {
			continue
		}
		ex := example{doc: doc, line: i + 1, cmd: strings.TrimPrefix(l, "$ ")}
		for quoteOpen(ex.cmd) && i+1 < len(lines) {
			i++
			ex.cmd += "\n" + lines[i]
		}
		next := func() string {
			if i+1 < len(lines) {
				return strings.TrimSpace(lines[i+1])
			}
			return ""
		}
		switch cmd, comment, ok := cutComment(ex.cmd); {
		case prompt:
			if n := next(); n != "" && !strings.HasPrefix(n, "$") && !strings.HasPrefix(n, "#") && !strings.HasPrefix(n, "```") {
				ex.answer = n
				i++
			}
		case ok:
			ex.cmd, ex.answer = cmd, comment
		default:
			var parts []string
			for n := next(); strings.HasPrefix(n, "#"); n = next() {
				parts = append(parts, strings.TrimSpace(strings.TrimPrefix(n, "#")))
				i++
			}
			ex.answer = strings.Join(parts, " ")
		}
		out = append(out, ex)
	}
	return out
}

// quoteOpen reports whether s ends inside a single- or double-quoted
// string (a trailing comment's quotes do not count).
func quoteOpen(s string) bool {
	var q rune
	prev := ' '
	for _, r := range s {
		switch {
		case q == 0 && r == '#' && (prev == ' ' || prev == '\t'):
			return false
		case q == 0 && (r == '\'' || r == '"'):
			q = r
		case r == q:
			q = 0
		}
		prev = r
	}
	return q != 0
}

// cutComment splits a command from its trailing comment: a # outside
// quotes after a space.
func cutComment(s string) (cmd, comment string, ok bool) {
	var q rune
	prev := ' '
	for i, r := range s {
		switch {
		case q == 0 && (r == '\'' || r == '"'):
			q = r
		case r == q:
			q = 0
		case q == 0 && r == '#' && (prev == ' ' || prev == '\t'):
			return strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:]), true
		}
		prev = r
	}
	return s, "", false
}

// shellWords splits a command into words as sh does for the forms the docs
// use: blanks separate words, quotes group them and are removed.
func shellWords(s string) ([]string, error) {
	var words []string
	var w strings.Builder
	in, q := false, rune(0)
	for _, r := range s {
		switch {
		case q != 0 && r == q:
			q = 0
		case q != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			q, in = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		case r == '\\' || r == '`':
			return nil, fmt.Errorf("%q is not a form the docs' parser knows", r)
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if q != 0 {
		return nil, errors.New("a quote is not closed")
	}
	if in {
		words = append(words, w.String())
	}
	return words, nil
}

// curlCall is a curl command's request.
type curlCall struct {
	method  string
	headers [][2]string
	data    *string
	url     *url.URL
}

// parseCurl reads curl's -X, -H and -d and one URL without a scheme (or
// http://), as the docs write them; any other flag is an error.
func parseCurl(cmd string) (curlCall, error) {
	var c curlCall
	words, err := shellWords(cmd)
	if err != nil {
		return c, err
	}
	if len(words) == 0 || words[0] != "curl" {
		return c, errors.New("not a curl command")
	}
	var rawURL string
	for i := 1; i < len(words); i++ {
		arg := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("%s without its value", words[i])
			}
			i++
			return words[i], nil
		}
		switch words[i] {
		case "-X", "--request":
			if c.method, err = arg(); err != nil {
				return c, err
			}
		case "-H", "--header":
			h, err := arg()
			if err != nil {
				return c, err
			}
			k, v, ok := strings.Cut(h, ":")
			if !ok {
				return c, fmt.Errorf("header %q has no colon", h)
			}
			c.headers = append(c.headers, [2]string{strings.TrimSpace(k), strings.TrimSpace(v)})
		case "-d", "--data", "--data-raw":
			d, err := arg()
			if err != nil {
				return c, err
			}
			if c.data != nil { // curl joins several with &
				d = *c.data + "&" + d
			}
			c.data = &d
		default:
			if strings.HasPrefix(words[i], "-") {
				return c, fmt.Errorf("curl flag %s: the docs' parser does not know it; teach parseCurl", words[i])
			}
			if rawURL != "" {
				return c, fmt.Errorf("two URLs: %q and %q", rawURL, words[i])
			}
			rawURL = words[i]
		}
	}
	if rawURL == "" {
		return c, errors.New("no URL")
	}
	if !strings.Contains(rawURL, "://") {
		rawURL = "http://" + rawURL
	}
	if c.url, err = url.Parse(rawURL); err != nil {
		return c, err
	}
	if c.method == "" {
		c.method = http.MethodGet
		if c.data != nil {
			c.method = http.MethodPost
		}
	}
	return c, nil
}

// placeholder finds what a reader must fill in: a shell variable, <…> or
// an ellipsis.
var placeholder = regexp.MustCompile(`\$[A-Za-z_{(]|<[^>]*>|…|\.\.\.`)

// docAnswer is what an example shows it answers.
type docAnswer struct {
	status    int    // 0: not shown
	body      any    // a whole JSON body, or nil
	text      string // a whole text answer (a number), or ""
	fragments []string
}

var (
	statusPrefix = regexp.MustCompile(`^([1-5][0-9][0-9]) `)
	digits       = regexp.MustCompile(`^[0-9]+$`)
)

func parseAnswer(a string) docAnswer {
	var w docAnswer
	if m := statusPrefix.FindStringSubmatch(a); m != nil {
		w.status, _ = strconv.Atoi(m[1])
		a = a[len(m[0]):]
	}
	if strings.HasPrefix(a, "{") || strings.HasPrefix(a, "[") {
		if v, err := decodeJSON(a); err == nil {
			w.body = v
			return w
		}
	}
	if digits.MatchString(a) {
		w.text = a
		return w
	}
	for _, piece := range strings.Split(strings.ReplaceAll(a, "…", "..."), "...") {
		for _, word := range strings.Fields(piece) {
			if strings.Contains(word, `":`) {
				w.fragments = append(w.fragments, word)
			}
		}
	}
	return w
}

// decodeJSON decodes one JSON value, numbers as json.Number.
func decodeJSON(s string) (any, error) {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	var v any
	if err := d.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := d.Token(); err != io.EOF {
		return nil, errors.New("more than one JSON value")
	}
	return v, nil
}

// unknowable names the fields of an answer whose values the docs cannot
// know: secrets, times, and counts that depend on timing everywhere; the
// IDs of snowflake routes and of scrambled and dated tags (their key is
// random, their stamp today's).
func unknowable(path, tagFormat string) map[string]bool {
	u := map[string]bool{"token": true, "expires_at": true, "created_at": true, "at": true, "period_ends_in_ms": true, "left": true}
	ids := path == "/snowflake" || strings.HasPrefix(path, "/api/snowflake/get/")
	if path == "/alloc" || strings.HasPrefix(path, "/api/segment/get/") {
		ids = tagFormat == "scrambled" || tagFormat == "dated"
	}
	if ids {
		for _, k := range []string{"id", "id_str", "ids", "ids_str"} {
			u[k] = true
		}
	}
	return u
}

// walk is the state of a walk-through.
type walk struct {
	t       *testing.T
	addr    string
	subst   map[string]string // a value the docs show → the one the server answered
	formats map[string]string // tag → its format, from the POST /tags examples
	created map[string]string // tag → the example that created it

	ran, exact, shape, fragment, success, otherHost, restarts int
}

func (w *walk) fail(ex example, format string, args ...any) {
	w.t.Helper()
	w.t.Errorf("%s\n%s", ex, fmt.Sprintf(format, args...))
}

func (w *walk) run(ex example) {
	w.t.Helper()
	cmd := ex.cmd
	for doc, real := range w.subst {
		cmd = strings.ReplaceAll(cmd, doc, real)
	}
	if p := placeholder.FindString(cmd); p != "" {
		w.fail(ex, "the command has a placeholder, %q: make it runnable, or list it in notRun with the reason", p)
		return
	}
	c, err := parseCurl(cmd)
	if err != nil {
		w.fail(ex, "cannot parse the command: %v", err)
		return
	}
	if c.url.Host != docHost {
		w.otherHost++
		return
	}
	w.ran++
	tag := c.url.Query().Get("app_tag")
	if strings.HasPrefix(c.url.Path, "/api/segment/get/") {
		tag = strings.TrimPrefix(c.url.Path, "/api/segment/get/")
	}
	if c.method == http.MethodPost && c.url.Path == "/tags" && c.data != nil {
		w.creates(ex, *c.data)
	}

	status, body := w.do(ex, c)
	if status == 0 {
		return
	}
	want := parseAnswer(ex.answer)
	if want.status != 0 && status != want.status {
		w.fail(ex, "got status %d, want %d\n got: %s\nwant: %s", status, want.status, body, ex.answer)
	}
	if c.url.Path == "/tags" && c.method == http.MethodPost && status == http.StatusConflict && want.status != status {
		w.fail(ex, "the tag is reused: the server already has it (%s); give the example a tag of its own", body)
		return
	}
	if want.status == 0 && want.body == nil && (status < 200 || status > 299) {
		w.fail(ex, "got status %d, want success\n got: %s", status, body)
		return
	}
	unknown := unknowable(c.url.Path, w.formats[tag])
	switch {
	case want.body != nil:
		got, err := decodeJSON(body)
		if err != nil {
			w.fail(ex, "the answer is not JSON: %v\n got: %s", err, body)
			return
		}
		var byShape bool
		if diff := w.match("", got, want.body, unknown, &byShape); diff != "" {
			w.fail(ex, "%s\n got: %s\nwant: %s", diff, body, ex.answer)
			return
		}
		if byShape {
			w.shape++
		} else {
			w.exact++
		}
	case want.text != "":
		got := strings.TrimSpace(body)
		switch {
		case unknown["id"] && !digits.MatchString(got):
			w.fail(ex, "got %q, want a number like %s", got, want.text)
		case unknown["id"]:
			w.shape++
		case got != want.text:
			w.fail(ex, "got %q, want %q", got, want.text)
		default:
			w.exact++
		}
	case len(want.fragments) > 0:
		got, _ := decodeJSON(body)
		for _, f := range want.fragments {
			if diff := w.fragmentDiff(got, body, f, unknown); diff != "" {
				w.fail(ex, "%s\n got: %s\nwant: %s", diff, body, ex.answer)
			}
		}
		w.fragment++
	default:
		w.success++
	}
}

// creates records the tags a POST /tags example creates, failing when one
// was created before.
func (w *walk) creates(ex example, data string) {
	w.t.Helper()
	v, err := decodeJSON(data)
	if err != nil {
		return // the server's answer says what is wrong
	}
	tags, ok := v.([]any)
	if !ok {
		tags = []any{v}
	}
	for _, t := range tags {
		m, _ := t.(map[string]any)
		name, _ := m["app_tag"].(string)
		if name == "" {
			continue
		}
		if first, ok := w.created[name]; ok {
			w.fail(ex, "tag %q is created again (first by %s): the walk-through reuses no tag", name, first)
			continue
		}
		w.created[name] = fmt.Sprintf("%s:%d", ex.doc, ex.line)
		format, _ := m["format"].(string)
		w.formats[name] = format
	}
}

// do sends c to the server as curl would, returning the status and body.
func (w *walk) do(ex example, c curlCall) (int, string) {
	w.t.Helper()
	u := *c.url
	u.Host = w.addr
	var body io.Reader
	if c.data != nil {
		body = strings.NewReader(*c.data)
	}
	req, err := http.NewRequest(c.method, u.String(), body)
	if err != nil {
		w.fail(ex, "%v", err)
		return 0, ""
	}
	_, port, _ := net.SplitHostPort(w.addr)
	req.Host = "localhost:" + port // curl's Host
	req.Header.Set("User-Agent", "curl/8")
	req.Header.Set("Accept", "*/*")
	if c.data != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range c.headers {
		req.Header.Set(h[0], h[1])
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableCompression: true}}
	resp, err := client.Do(req)
	if err != nil {
		w.fail(ex, "%v", err)
		return 0, ""
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		w.fail(ex, "read the answer: %v", err)
		return 0, ""
	}
	return resp.StatusCode, string(bytes.TrimSpace(b))
}

// match compares got with want, the keys of unknown by shape (noting
// that in byShape and learning the value the server gave in place of the
// docs'), and returns the first difference, or "".
func (w *walk) match(at string, got, want any, unknown map[string]bool, byShape *bool) string {
	switch want := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("%s: got %s, want an object", orTop(at), kind(got))
		}
		for k := range g {
			if _, ok := want[k]; !ok {
				return fmt.Sprintf("%s: got a key %q the docs do not show", orTop(at), k)
			}
		}
		for k, wv := range want {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s: no key %q", orTop(at), k)
			}
			if unknown[k] {
				*byShape = true
				w.learn(gv, wv)
				if d := sameShape(at+"."+k, gv, wv); d != "" {
					return d
				}
				continue
			}
			if d := w.match(at+"."+k, gv, wv, unknown, byShape); d != "" {
				return d
			}
		}
		return ""
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(want) {
			return fmt.Sprintf("%s: got %s, want %d elements", orTop(at), kind(got), len(want))
		}
		for i := range want {
			if d := w.match(fmt.Sprintf("%s[%d]", at, i), g[i], want[i], unknown, byShape); d != "" {
				return d
			}
		}
		return ""
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Sprintf("%s: got %v, want %v", orTop(at), got, want)
	}
	return ""
}

// learn notes the value the server gave for a string the docs show, so
// that a later command sending the docs' value sends the server's.
func (w *walk) learn(got, want any) {
	g, ok1 := got.(string)
	d, ok2 := want.(string)
	if ok1 && ok2 && d != "" && d != g && !placeholder.MatchString(d) {
		w.subst[d] = g
	}
}

// fragmentDiff checks one fragment of an answer: as JSON members when it
// parses as such, else as text the body must hold.
func (w *walk) fragmentDiff(got any, body, f string, unknown map[string]bool) string {
	trimmed := strings.Trim(f, ",")
	for _, c := range []string{"{" + trimmed + "}", "{" + strings.TrimSuffix(trimmed, "}") + "}"} {
		members, err := decodeJSON(c)
		if err != nil {
			continue
		}
		g, ok := got.(map[string]any)
		if !ok {
			return fmt.Sprintf("got no JSON object, want one with %s", f)
		}
		for k, wv := range members.(map[string]any) {
			gv, ok := g[k]
			switch {
			case !ok:
				return fmt.Sprintf("no key %q (fragment %s)", k, f)
			case unknown[k]:
				if d := sameShape("."+k, gv, wv); d != "" {
					return d
				}
			default:
				var byShape bool
				if d := w.match("."+k, gv, wv, unknown, &byShape); d != "" {
					return d
				}
			}
		}
		return ""
	}
	if !strings.Contains(body, f) {
		return fmt.Sprintf("the answer does not have %s", f)
	}
	return ""
}

// sameShape: the same JSON type; objects with the same keys, arrays of the
// same length, each element of the same shape.
func sameShape(at string, got, want any) string {
	if kind(got) != kind(want) {
		return fmt.Sprintf("%s: got %s, want %s", orTop(at), kind(got), kind(want))
	}
	switch want := want.(type) {
	case map[string]any:
		g := got.(map[string]any)
		if len(g) != len(want) {
			return fmt.Sprintf("%s: got %d keys, want %d", orTop(at), len(g), len(want))
		}
		for k, wv := range want {
			gv, ok := g[k]
			if !ok {
				return fmt.Sprintf("%s: no key %q", orTop(at), k)
			}
			if d := sameShape(at+"."+k, gv, wv); d != "" {
				return d
			}
		}
	case []any:
		g := got.([]any)
		if len(g) != len(want) {
			return fmt.Sprintf("%s: got %d elements, want %d", orTop(at), len(g), len(want))
		}
		for i := range want {
			if d := sameShape(fmt.Sprintf("%s[%d]", at, i), g[i], want[i]); d != "" {
				return d
			}
		}
	}
	return ""
}

// kind is a JSON value's type.
func kind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case json.Number:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

func orTop(at string) string {
	if at == "" {
		return "the body"
	}
	return strings.TrimPrefix(at, ".")
}

// serveForDocs serves idalloc as run does, on the SQLite file dsn with
// the default config (snowflake on, no admin_token, so loopback is
// admin), HTTP alone on a port of its own (127.0.0.1:0, the listener
// kept: internal/freeport's advice for a test that listens itself), and
// returns its address once the instance holds its worker lease, and stop,
// which stops it as a SIGTERM does (without the drain) and is also the
// test's cleanup.
func serveForDocs(t *testing.T, dsn string) (addr string, stop func()) {
	t.Helper()
	c := config.Default()
	c.HTTPAddr, c.DSN = "127.0.0.1:0", dsn
	cfg, err := c.Validate()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancelCause(context.Background())
	lns, err := frontend.Listen(frontend.Addr{Name: "http", Addr: cfg.HTTPAddr})
	if err != nil {
		t.Fatal(err)
	}
	p, closeParts, err := buildParts(ctx, cfg, false, discard)
	if err != nil {
		closeParts()
		lns.Close()
		t.Fatal(err)
	}
	fronts, srv, err := frontEnds(cfg, lns, p)
	if err != nil {
		closeParts()
		lns.Close()
		t.Fatal(err)
	}
	stopGate, err := gateSnowflake(ctx, cancel, cfg, p)
	if err != nil {
		srv.Close()
		closeParts()
		lns.Close()
		t.Fatal(err)
	}
	serving := frontend.Serve(ctx, 0, cancel, fronts...)
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel(frontend.ErrStopSignal)
			stopGate()
			serveErr, handBackErr := frontend.Stop{Timeout: 10 * time.Second, Served: serving.Done(), Cut: serving.Cut,
				HandBack: handBack(p.alloc, p.keeper, p.source), Log: discard}.Run(time.Now())
			if err := errors.Join(serveErr, handBackErr); err != nil {
				t.Errorf("stop: %v", err)
			}
			srv.Close()
			closeParts()
		})
	}
	t.Cleanup(stop)
	waitUntil(t, func() bool { _, held := p.keeper.Lease(); return held })
	return lns["http"].Addr().String(), stop
}
