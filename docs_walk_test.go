package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
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
