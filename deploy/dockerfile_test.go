package deploy_test

// The Dockerfile, checked without a Docker engine: its stages against the
// repo, and its build line run as it stands (dockerfileBinary), which also
// makes the binary the service tests start.

import (
	"debug/elf"
	"encoding/json"
	"github.com/idalloc/idalloc/internal/tier"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// dockerfileBuildLine is the one RUN line the image builds idalloc with.
var dockerfileBuildLine = regexp.MustCompile(`(?m)^RUN (CGO_ENABLED=0 go build .*)$`)

func TestDockerfile(t *testing.T) {
	root := repoRoot(t)
	df := readFile(t, "Dockerfile")

	t.Run("builder matches go.mod", func(t *testing.T) {
		mod := readFile(t, filepath.Join(root, "go.mod"))
		m := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindStringSubmatch(mod)
		if m == nil {
			t.Fatal("go.mod has no go directive")
		}
		if want := "FROM golang:" + m[1] + " "; !strings.Contains(df, want) {
			t.Errorf("go.mod says go %s; the Dockerfile has no %q stage", m[1], strings.TrimSpace(want))
		}
	})

	t.Run("final stage", func(t *testing.T) {
		final := df[strings.LastIndex(df, "\nFROM "):]
		user := regexp.MustCompile(`(?m)^USER (\S+)`).FindStringSubmatch(final)
		if user == nil || user[1] == "root" || strings.HasPrefix(user[1], "0") {
			t.Errorf("the final stage must switch to a non-root USER, has %v", user)
		}
		if !regexp.MustCompile(`(?m)^EXPOSE 8880$`).MatchString(final) {
			t.Error("no EXPOSE 8880 in the final stage")
		}
		if !regexp.MustCompile(`(?ms)^HEALTHCHECK .*/health`).MatchString(final) {
			t.Error("no HEALTHCHECK on /health in the final stage")
		}
		if !regexp.MustCompile(`(?m)^ARG VERSION$`).MatchString(final) ||
			!strings.Contains(final, `org.opencontainers.image.version="${VERSION}"`) {
			t.Error("the final stage does not label the image with its version (ARG VERSION, LABEL org.opencontainers.image.version)")
		}
		// Apache-2.0 §4: the license and the NOTICE travel with the binary.
		if !regexp.MustCompile(`(?m)^COPY (\S+ )*LICENSE (\S+ )*NOTICE \S+$`).MatchString(final) {
			t.Error("the final stage does not COPY LICENSE and NOTICE into the image")
		}
	})

	// A release binary and an image of one commit say the same in -version.
	t.Run("stamped as a release is", func(t *testing.T) {
		script := readFile(t, filepath.Join(root, "scripts", "release.sh"))
		for _, x := range []string{"-X main.version=", "-X main.revision="} {
			if !strings.Contains(df, x) || !strings.Contains(script, x) {
				t.Errorf("%s… is not in both the Dockerfile's build line and scripts/release.sh", x)
			}
		}
	})

	t.Run("COPY sources exist in the build context", func(t *testing.T) {
		for _, m := range regexp.MustCompile(`(?m)^COPY (.+)$`).FindAllStringSubmatch(df, -1) {
			f := strings.Fields(m[1])
			if strings.HasPrefix(f[0], "--from=") {
				continue
			}
			for _, p := range f[:len(f)-1] {
				if strings.HasPrefix(p, "--") {
					continue
				}
				if _, err := os.Stat(filepath.Join(root, p)); err != nil {
					t.Errorf("COPY %s: %v", p, err)
				}
			}
		}
	})

	t.Run("no secret in the baked-in config.json", func(t *testing.T) {
		var c struct {
			AdminToken string `json:"admin_token"`
			DSN        string `json:"dsn"`
		}
		if err := json.Unmarshal([]byte(readFile(t, filepath.Join(root, "config.json"))), &c); err != nil {
			t.Fatal(err)
		}
		if c.AdminToken != "" || strings.Contains(c.DSN, "@") {
			t.Error("config.json, copied into the image, holds an admin_token or a DSN with credentials; pass them as IDALLOC_* variables")
		}
	})

	t.Run("build line makes a static binary", func(t *testing.T) {
		bin := dockerfileBinary(t)
		f, err := elf.Open(bin)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		for _, p := range f.Progs {
			if p.Type == elf.PT_INTERP {
				t.Error("the binary has a PT_INTERP program header: it is dynamically linked and will not run on a libc-less image")
			}
		}
		if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
			t.Errorf("the binary needs shared libraries %v", libs)
		}
	})
}

// dockerfileBinary runs the Dockerfile's build line from the repo root, as
// `COPY . .` + `RUN` do in /src, with only its -o redirected into
// t.TempDir(), and returns the binary: the service tests run exactly what
// the image would. A second call costs a link; the compiles are cached.
func dockerfileBinary(t *testing.T) string {
	t.Helper()
	tier.Full(t, "runs the Dockerfile's build line")
	root := repoRoot(t)
	lines := dockerfileBuildLine.FindAllStringSubmatch(readFile(t, "Dockerfile"), -1)
	if len(lines) != 1 {
		t.Fatalf("want exactly one Dockerfile line starting %q, found %d", "RUN CGO_ENABLED=0 go build", len(lines))
	}
	line := lines[0][1]
	out := regexp.MustCompile(`(\s-o\s+)(\S+)`)
	if len(out.FindAllString(line, -1)) != 1 {
		t.Fatalf("the build line needs exactly one -o <path>: %s", line)
	}
	// -X: the build context has no .git to stamp the version from.
	for _, flag := range []string{"-trimpath", `-ldflags="-s -w `, "-X main.version=${VERSION}", "-X main.revision=${REVISION}"} {
		if !strings.Contains(line, flag) {
			t.Fatalf("the build line lacks %s: %s", flag, line)
		}
	}
	bin := filepath.Join(t.TempDir(), "idalloc")
	cmd := out.ReplaceAllLiteralString(line, " -o "+shellQuote(bin))
	start := time.Now()
	// /bin/sh -c, as Docker runs a shell-form RUN. With a cold build cache
	// (modernc.org/sqlite is large) this takes a minute or two.
	outp, err := runErr(5*time.Minute, root, os.Environ(), nil, "sh", "-c", cmd)
	switch {
	case err != nil && strings.Contains(outp, "function main is undeclared"):
		t.Skip("no main function at the repo root yet (main.go missing), so there is no idalloc binary to build")
	case err != nil:
		t.Fatalf("%s: %v\n%s", cmd, err, outp)
	}
	t.Logf("built in %s: %s", time.Since(start).Round(time.Millisecond), cmd)
	return bin
}
