package config

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"text/tabwriter"
)

// serveUsage heads `idalloc -help`: the commands, then the flags and the
// environment variables, which ServeFlags prints from their definitions
// (fs.PrintDefaults, EnvVars) so that the help cannot fall behind
// them.
const serveUsage = `Usage: idalloc [-config PATH] [-init-schema] [-print-config] [-version]
       idalloc migrate -to-dsn DSN [flags]
       idalloc advance (-by COUNT | -for DURATION) [flags]

idalloc hands out unique IDs over HTTP (and over the Redis protocol when
resp_addr is set, gRPC when grpc_addr is set): segment IDs per tag, and
snowflake IDs under a leased worker ID. With no command it serves, with the store and settings of the
config file (config.json in the working directory by default; without
one, the defaults: SQLite in idalloc.db, HTTP on :8880).

Commands:
  (none)   serve until SIGTERM or SIGINT, then drain and hand back what
           this instance holds
  migrate  carry every tag, layout and lease from one store to another so
           that no ID repeats (idalloc migrate -help)
  advance  move every tag and worker lease forward after a restore or a
           failover that may have lost writes (idalloc advance -help)

Flags:
`

// ServeFlags are the flags of `idalloc` serving.
type ServeFlags struct {
	ConfigPath     string
	ConfigRequired bool // -config was given: its file must exist
	InitSchema     bool
	PrintConfig    bool
	Version        bool
}

// ParseFlags parses args with fs. The usage asked for (-help, -h) goes to
// stdout, so that `idalloc -help | less` pages it; a flag error, with the
// usage after it, goes to stderr. It returns fs.Parse's error, flag.ErrHelp
// for the usage asked for.
func ParseFlags(fs *flag.FlagSet, args []string, stdout, stderr io.Writer) error {
	var printed bytes.Buffer
	fs.SetOutput(&printed)
	err := fs.Parse(args)
	fs.SetOutput(stderr)
	out := stderr
	if errors.Is(err, flag.ErrHelp) {
		out = stdout
	}
	_, _ = printed.WriteTo(out) // a terminal or pipe gone: nothing to tell
	return err
}

// ParseServe reads the flags of `idalloc` serving. -help and -h print the
// usage to stdout and return flag.ErrHelp; a flag error prints it to
// stderr. An argument left over is refused: a mistyped command ("idalloc
// migrat") must not start a server.
func ParseServe(args []string, stdout, stderr io.Writer) (ServeFlags, error) {
	var f ServeFlags
	fs := flag.NewFlagSet("idalloc", flag.ContinueOnError)
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), serveUsage)
		fs.PrintDefaults()
		printEnvironment(fs.Output())
	}
	fs.StringVar(&f.ConfigPath, "config", "config.json", "config file (JSON); named with -config, it must exist")
	fs.BoolVar(&f.InitSchema, "init-schema", false, "apply the schema to the MySQL or PostgreSQL database before serving (schema.sql, schema_postgres.sql: create missing tables, add missing columns), and turn MySQL TIMESTAMP columns left by an older schema into DATETIME(3); logs what it changed")
	fs.BoolVar(&f.PrintConfig, "print-config", false, "print every key's value after the config file and the IDALLOC_* variables, and where each came from (default, the file, the variable), admin_token only as set or not and DSN passwords as ***; then exit, opening no store (a bad value is reported as a start reports it)")
	fs.BoolVar(&f.Version, "version", false, "print the version and exit")
	if err := ParseFlags(fs, args, stdout, stderr); err != nil {
		return f, err
	}
	if fs.NArg() > 0 {
		return f, fmt.Errorf("unknown command %q: the commands are migrate and advance (idalloc -help)", fs.Arg(0))
	}
	fs.Visit(func(fl *flag.Flag) { f.ConfigRequired = f.ConfigRequired || fl.Name == "config" })
	return f, nil
}

// printEnvironment lists the IDALLOC_* variables and the key each replaces.
func printEnvironment(out io.Writer) {
	fmt.Fprintf(out, "\nEnvironment (each, when set and not empty, replaces a key of the config file; any\n"+
		"other %s* variable stops the start, except %s*, which are the tests'):\n", envPrefix, TestEnvPrefix)
	tw := tabwriter.NewWriter(out, 0, 0, 2, ' ', 0)
	for _, e := range envVars {
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", e.Name, e.Key, e.Kind())
	}
	tw.Flush()
	fmt.Fprint(out, "\nGOGC, when set, replaces idalloc's own pace of 400 (a small heap) to 100 (from 12 MB live).\n")
}
