package migrate

import (
	"io"
	"testing"

	"github.com/idalloc/idalloc/internal/flagtest"
)

// TestHelpGoesToStdout: the usage asked for goes to stdout, so that
// `idalloc migrate -help | less` pages it; a flag error, and the usage
// after it, go to stderr (the root's test of the same name holds idalloc
// itself to it).
func TestHelpGoesToStdout(t *testing.T) {
	flagtest.Run(t, []flagtest.Case{
		{Name: "idalloc migrate -help", Parse: runMigrate, Args: []string{"-help"}, WantStdout: "Usage: idalloc migrate", WantStderr: ""},
		{Name: "idalloc migrate -nope", Parse: runMigrate, Args: []string{"-nope"}, WantStdout: "", WantStderr: "flag provided but not defined: -nope\nUsage: idalloc migrate"},
		{Name: "idalloc advance -h", Parse: advanceNoEnv, Args: []string{"-h"}, WantStdout: "Usage: idalloc advance", WantStderr: ""},
		{Name: "idalloc advance -by x", Parse: advanceNoEnv, Args: []string{"-by", "x"}, WantStdout: "", WantStderr: `invalid value "x" for flag -by`},
	})
}

// advanceNoEnv is runAdvance without IDALLOC_* variables.
func advanceNoEnv(args []string, stdout, stderr io.Writer) error {
	return runAdvance(args, stdout, stderr, noEnv, sqlLeases)
}
