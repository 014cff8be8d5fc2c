package deploy_test

// What the nginx installed here can load of nginx.conf, and copies of the
// file adapted to it and pointed at the test's instances. The file itself
// is written for the compose image (nginx 1.28, stream module built in);
// Debian 12's nginx is 1.22 with the stream module as a separate package.

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// nginxHere describes the nginx binary the tests run.
type nginxHere struct {
	bin, version string
	// resolves: it takes the resolve parameter of upstream servers
	// (1.27.3 and later).
	resolves bool
	// loadStream is the load_module line its stream module needs when it is
	// a dynamic module, "" when built in.
	loadStream string
	// noStream says why the stream block cannot load here; "" when it can.
	noStream string
}

// findNginx finds nginx and what it can load, or skips t when it is
// missing.
func findNginx(t *testing.T) nginxHere {
	t.Helper()
	n := nginxHere{bin: tool(t, "nginx")}
	out := run(t, 10*time.Second, "", nil, nil, n.bin, "-V")
	m := regexp.MustCompile(`nginx/(\d+)\.(\d+)\.(\d+)`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("nginx -V: no version in %q", out)
	}
	n.version = m[0]
	v := make([]int, 3)
	for i := range v {
		v[i], _ = strconv.Atoi(m[i+1])
	}
	n.resolves = slices.Compare(v, []int{1, 27, 3}) >= 0
	args := strings.Fields(out)
	switch {
	case slices.Contains(args, "--with-stream"):
	case slices.Contains(args, "--with-stream=dynamic"):
		dir := "modules"
		for _, a := range args {
			if p, ok := strings.CutPrefix(a, "--modules-path="); ok {
				dir = p
			}
		}
		so := filepath.Join(dir, "ngx_stream_module.so")
		if _, err := os.Stat(so); err != nil {
			n.noStream = fmt.Sprintf("%s has its stream module as a separate package, not installed (apt-get install -y libnginx-mod-stream)", n.version)
		}
		n.loadStream = "load_module " + so + ";"
	default:
		n.noStream = n.version + " is built without the stream module"
	}
	return n
}

var upstreamServerRe = regexp.MustCompile(`server (idalloc\d):(8880|6380) resolve `)

// adapt returns nginx.conf's text s as this nginx can load it, and what was
// changed: no resolve parameters where it predates them, the stream module
// loaded where it is dynamic, no stream block where it is missing.
func (n nginxHere) adapt(t *testing.T, s string) (string, []string) {
	t.Helper()
	var notes []string
	if !n.resolves {
		s = upstreamServerRe.ReplaceAllString(s, "server $1:$2 ")
		notes = append(notes, n.version+" predates the resolve parameter of upstream servers (1.27.3): removed")
	}
	switch {
	case n.noStream != "":
		i := strings.Index(s, "\nstream {")
		if i < 0 {
			t.Fatal("nginx.conf has no stream block")
		}
		s = s[:i+1]
		notes = append(notes, "stream block removed: "+n.noStream)
	case n.loadStream != "":
		s = n.loadStream + "\n" + s
		notes = append(notes, "dynamic stream module loaded: "+n.loadStream)
	}
	return s, notes
}

// nginxAddrs are what a copy of nginx.conf points at instead of the compose
// services: each instance's HTTP and RESP address, and nginx's own
// listeners ("" keeps the file's).
type nginxAddrs struct {
	http, resp         [2]string
	listen, respListen string
}

// nginxConfCopy writes dir/nginx.conf, a copy of the nginx config src
// adapted to n, with the upstream servers idalloc1/idalloc2 replaced by the
// addresses in a (without the resolve parameter: there are no names left
// to look up), the listeners moved where a says, and the temp directories
// moved under dir, and returns its path.
func nginxConfCopy(t *testing.T, n nginxHere, src, dir string, a nginxAddrs) string {
	t.Helper()
	s, _ := n.adapt(t, readFile(t, src))
	for i, up := range []string{"idalloc1", "idalloc2"} {
		s = replaceServer(t, s, up+":8880", a.http[i])
		if n.noStream == "" {
			s = replaceServer(t, s, up+":6380", a.resp[i])
		}
	}
	if a.listen != "" {
		s = replaceOnce(t, s, "listen 8880;", "listen "+a.listen+";")
	}
	if a.respListen != "" && n.noStream == "" {
		s = replaceOnce(t, s, "listen 6380;", "listen "+a.respListen+";")
	}
	s = replaceOnce(t, s, "http {", "http {\n"+tempPaths(dir))
	conf := filepath.Join(dir, "nginx.conf")
	writeFile(t, conf, s)
	return conf
}

// replaceServer replaces the upstream server name, with or without its
// resolve parameter, by addr; it must occur exactly once.
func replaceServer(t *testing.T, s, name, addr string) string {
	t.Helper()
	re := regexp.MustCompile(`server ` + regexp.QuoteMeta(name) + `( resolve)? `)
	if n := len(re.FindAllStringIndex(s, -1)); n != 1 {
		t.Fatalf("expected upstream server %s exactly once in nginx.conf, found it %d times", name, n)
	}
	return re.ReplaceAllLiteralString(s, "server "+addr+" ")
}

// tempPaths moves nginx's temp directories under dir, so that a copy of the
// config runs without root-owned paths.
func tempPaths(dir string) string {
	var b strings.Builder
	for _, d := range []string{"client_body", "proxy", "fastcgi", "uwsgi", "scgi"} {
		fmt.Fprintf(&b, "    %s_temp_path %s;\n", d, filepath.Join(dir, d))
	}
	return b.String()
}
