package main

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
)

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
