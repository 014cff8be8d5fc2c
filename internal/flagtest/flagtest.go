// Package flagtest holds a command's flag parsing to idalloc's rule for
// output: the usage asked for (-help, -h) goes to stdout, so that
// `idalloc -help | less` pages it, with flag.ErrHelp; a flag error, and
// the usage after it, go to stderr. The root's commands and package migrate's
// run their cases through it. It is imported by tests only.
package flagtest

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
)

// Case is one command line and what it must print where.
type Case struct {
	Name       string
	Parse      func(args []string, stdout, stderr io.Writer) error
	Args       []string
	WantStdout string // in stdout; "" for nothing there
	WantStderr string // in stderr; "" for nothing there
}

// Run runs each case as a subtest of t.
func Run(t *testing.T, cases []Case) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := c.Parse(c.Args, &stdout, &stderr)
			switch help := c.WantStdout != ""; {
			case help && !errors.Is(err, flag.ErrHelp):
				t.Errorf("%s: got error %v, want flag.ErrHelp", c.Name, err)
			case !help && (err == nil || errors.Is(err, flag.ErrHelp)):
				t.Errorf("%s: got error %v, want a flag error", c.Name, err)
			}
			for _, o := range []struct {
				name      string
				got, want string
			}{{"stdout", stdout.String(), c.WantStdout}, {"stderr", stderr.String(), c.WantStderr}} {
				if (o.want == "") != (o.got == "") || !strings.Contains(o.got, o.want) {
					t.Errorf("%s: %s got %q, want %s", c.Name, o.name, o.got, quoteOr(o.want, "nothing"))
				}
			}
		})
	}
}

// quoteOr is s quoted, or otherwise when s is empty.
func quoteOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return strconv.Quote(s)
}
