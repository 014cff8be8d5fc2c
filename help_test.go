package main

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/idalloc/idalloc/config"
	"github.com/idalloc/idalloc/internal/flagtest"
)

// TestHelpExitsZero: -help and -h, of idalloc and of each command, print
// the usage and end without an error (exit status 0), where idalloc alone
// used to answer "flag: help requested" and exit 1.
func TestHelpExitsZero(t *testing.T) {
	cases := []struct {
		name string
		main func([]string) error
		args []string
	}{
		{"idalloc -help", run, []string{"-help"}},
		{"idalloc -h", run, []string{"-h"}},
		{"idalloc migrate -help", migrateMain, []string{"-help"}},
		{"idalloc migrate -h", migrateMain, []string{"-h"}},
		{"idalloc advance -help", advanceMain, []string{"-help"}},
		{"idalloc advance -h", advanceMain, []string{"-h"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := c.main(c.args); err != nil {
				t.Errorf("%s: got %v, want no error", c.name, err)
			}
		})
	}
}

// TestHelpNamesEverything: the usage names both commands, every flag, and
// every IDALLOC_ variable, with the key it replaces and its kind.
func TestHelpNamesEverything(t *testing.T) {
	var out bytes.Buffer
	if _, err := config.ParseServe([]string{"-help"}, &out, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("config.ParseServe(-help): got %v, want flag.ErrHelp", err)
	}
	help := out.String()
	for _, w := range []string{"Usage: idalloc", "migrate", "advance", "-config", "-init-schema", "-print-config", "-version", config.TestEnvPrefix} {
		if !strings.Contains(help, w) {
			t.Errorf("help does not mention %q:\n%s", w, help)
		}
	}
	vars := config.EnvVars()
	if len(vars) == 0 {
		t.Fatal("config.EnvVars() lists no variable")
	}
	for _, v := range vars {
		line := `(?m)^\s+` + v.Name + `\s+` + regexp.QuoteMeta(v.Key) + `\s+` + regexp.QuoteMeta(v.Kind()) + `$`
		if !regexp.MustCompile(line).MatchString(help) {
			t.Errorf("help has no line %q followed by key %q and %q:\n%s", v.Name, v.Key, v.Kind(), help)
		}
	}
}

// TestServeRefusesArguments: a mistyped command must not start a server.
func TestServeRefusesArguments(t *testing.T) {
	cases := []struct {
		args []string
		want string // "" for no error
	}{
		{nil, ""},
		{[]string{"-config", "x.json", "-init-schema"}, ""},
		{[]string{"migrat"}, `unknown command "migrat"`},
		{[]string{"-init-schema", "serve"}, `unknown command "serve"`},
	}
	for _, c := range cases {
		_, err := config.ParseServe(c.args, io.Discard, io.Discard)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("idalloc %q: got %v, want no error", c.args, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("idalloc %q: got %v, want an error saying %s", c.args, err, c.want)
		}
	}
}

// TestHelpGoesToStdout: the usage asked for goes to stdout, so that
// `idalloc -help | less` pages it; a flag error, and the usage after it,
// go to stderr. package migrate's test of the same name holds the commands to
// it.
func TestHelpGoesToStdout(t *testing.T) {
	flagtest.Run(t, []flagtest.Case{
		{Name: "idalloc -help", Parse: parseServeOnly, Args: []string{"-help"}, WantStdout: "Usage: idalloc [-config PATH]", WantStderr: ""},
		{Name: "idalloc -nope", Parse: parseServeOnly, Args: []string{"-nope"}, WantStdout: "", WantStderr: "flag provided but not defined: -nope\nUsage: idalloc"},
	})
}

// parseServeOnly is config.ParseServe with the signature of the cases.
func parseServeOnly(args []string, stdout, stderr io.Writer) error {
	_, err := config.ParseServe(args, stdout, stderr)
	return err
}

// TestConfigurationDocShowsTheHelp: docs/configuration.md shows `idalloc
// -help` as it is, so the two cannot drift apart.
func TestConfigurationDocShowsTheHelp(t *testing.T) {
	var out bytes.Buffer
	if _, err := config.ParseServe([]string{"-help"}, &out, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Fatalf("ParseServe(-help): got %v, want flag.ErrHelp", err)
	}
	doc, err := os.ReadFile("docs/configuration.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := "$ idalloc -help\n" + out.String(); !strings.Contains(string(doc), want) {
		t.Errorf("docs/configuration.md does not show idalloc -help as it prints today; paste this after its paragraph on -help:\n%s", want)
	}
}
