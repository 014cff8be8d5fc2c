package deploy_test

// scripts/release.sh, run as a release runs it, for this machine's
// platform only: its build flags are the Dockerfile's (CGO_ENABLED=0,
// -trimpath), so after dockerfileBinary the build costs a link.

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"fmt"
	"github.com/idalloc/idalloc/internal/tier"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReleaseScript: scripts/release.sh refuses a version that is not
// vX.Y.Z[-pre]; given one, it makes the archive (the binary, LICENSE,
// NOTICE, README.md, config.json in one directory), SHA256SUMS over it in
// sha256sum's format, and a binary whose -version names the version and
// this commit.
func TestReleaseScript(t *testing.T) {
	root := repoRoot(t)
	script := filepath.Join(root, "scripts", "release.sh")
	head, err := runErr(10*time.Second, root, os.Environ(), nil, "git", "rev-parse", "HEAD")
	if err != nil {
		t.Skipf("no git checkout to release from (git rev-parse HEAD: %v)", err)
	}
	head = strings.TrimSpace(head)
	dist := t.TempDir()
	env := append(os.Environ(), "DIST="+dist, "ALLOW_DIRTY=1", "TARGETS="+runtime.GOOS+"/"+runtime.GOARCH)

	t.Run("refuses a version not vX.Y.Z[-pre]", func(t *testing.T) {
		for _, v := range []string{"0.1.0", "v1.2", "v1.2.3.4", "v01.2.3", "v1.2.3-", "v1.2.3+build.5", "latest", ""} {
			out, err := runErr(30*time.Second, root, env, nil, "bash", script, v)
			if err == nil || !strings.Contains(out, `is not vX.Y.Z or vX.Y.Z-pre`) {
				t.Errorf("release.sh %q: %v, %q; want a refusal naming the form", v, err, out)
			}
		}
		if out, err := runErr(30*time.Second, root, env, nil, "bash", script); err == nil || !strings.Contains(out, "usage:") {
			t.Errorf("release.sh without a version: %v, %q; want the usage", err, out)
		}
	})

	t.Run("makes the archive and its checksum", func(t *testing.T) {
		tier.Full(t, "builds the release binary")
		const version = "v0.0.0-test.1"
		name := "idalloc_" + version + "_" + runtime.GOOS + "_" + runtime.GOARCH
		out := run(t, 10*time.Minute, root, env, nil, "bash", script, version)
		if !strings.Contains(out, name+".tar.gz") || !strings.Contains(out, "SHA256SUMS") {
			t.Errorf("release.sh does not say what it made:\n%s", out)
		}

		archive := filepath.Join(dist, name+".tar.gz")
		files := tarFiles(t, archive)
		want := []string{name + "/LICENSE", name + "/NOTICE", name + "/README.md", name + "/config.json", name + "/idalloc"}
		if !slices.Equal(files, want) {
			t.Errorf("%s holds %v, want %v", filepath.Base(archive), files, want)
		}

		data, err := os.ReadFile(archive)
		if err != nil {
			t.Fatal(err)
		}
		if got, want := readFile(t, filepath.Join(dist, "SHA256SUMS")), fmt.Sprintf("%x  %s\n", sha256.Sum256(data), name+".tar.gz"); got != want {
			t.Errorf("SHA256SUMS is %q, want %q", got, want)
		}

		v := run(t, 30*time.Second, dist, nil, nil, filepath.Join(dist, name, "idalloc"), "-version")
		if want := "idalloc " + version + " (revision " + head; !strings.HasPrefix(v, want) {
			t.Errorf("the released binary's -version says %q, want it to begin %q", v, want)
		}
	})
}

// tarFiles lists the regular files of a .tar.gz, sorted.
func tarFiles(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var files []string
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			files = append(files, h.Name)
		}
	}
	slices.Sort(files)
	return files
}
