package cmd

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"strconv"
	"strings"
	"testing"
)

// TestHelpGoesToStdout: the usage asked for goes to stdout, so that
// `idalloc migrate -help | less` pages it; a flag error, and the usage
// after it, go to stderr (the root's test of the same name holds idalloc
// itself to it).
func TestHelpGoesToStdout(t *testing.T) {
	cases := []struct {
		name       string
		parse      func(args []string, stdout, stderr io.Writer) error
		args       []string
		wantStdout string // "" for nothing
		wantStderr string // "" for nothing
	}{
		{"idalloc migrate -help", runMigrate, []string{"-help"}, "Usage: idalloc migrate", ""},
		{"idalloc migrate -nope", runMigrate, []string{"-nope"}, "", "flag provided but not defined: -nope\nUsage: idalloc migrate"},
		{"idalloc advance -h", advanceNoEnv, []string{"-h"}, "Usage: idalloc advance", ""},
		{"idalloc advance -by x", advanceNoEnv, []string{"-by", "x"}, "", `invalid value "x" for flag -by`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := c.parse(c.args, &stdout, &stderr)
			switch help := c.wantStdout != ""; {
			case help && !errors.Is(err, flag.ErrHelp):
				t.Errorf("%s: got error %v, want flag.ErrHelp", c.name, err)
			case !help && (err == nil || errors.Is(err, flag.ErrHelp)):
				t.Errorf("%s: got error %v, want a flag error", c.name, err)
			}
			for _, o := range []struct {
				name      string
				got, want string
			}{{"stdout", stdout.String(), c.wantStdout}, {"stderr", stderr.String(), c.wantStderr}} {
				if (o.want == "") != (o.got == "") || !strings.Contains(o.got, o.want) {
					t.Errorf("%s: %s got %q, want %s", c.name, o.name, o.got, quoteOr(o.want, "nothing"))
				}
			}
		})
	}
}

// advanceNoEnv is runAdvance without IDALLOC_* variables.
func advanceNoEnv(args []string, stdout, stderr io.Writer) error {
	return runAdvance(args, stdout, stderr, noEnv, sqlLeases)
}

// quoteOr is s quoted, or otherwise when s is empty.
func quoteOr(s, otherwise string) string {
	if s == "" {
		return otherwise
	}
	return strconv.Quote(s)
}
