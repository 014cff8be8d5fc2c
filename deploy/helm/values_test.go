package helmchart_test

import (
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestBadValuesRefused: values that would not run, or would run wrong,
// are refused by helm install and helm template with a message naming the
// value and what to do; values.schema.json catches types, names and
// ranges, the templates (_helpers.tpl, idalloc.validate) the rules
// between values.
func TestBadValuesRefused(t *testing.T) {
	mysql := filepath.Join(chartDir, "ci", "mysql-values.yaml")
	postgres := filepath.Join(chartDir, "ci", "postgres-values.yaml")
	for _, c := range []struct {
		name string
		file string
		sets []string
		want string
	}{
		{"many replicas on sqlite", "", []string{"replicaCount=2"},
			"replicaCount 2: the sqlite store serves one instance only; for more replicas set config.driver to mysql or postgres"},
		{"mysql without a dsn", "", []string{"config.driver=mysql"},
			"config.driver mysql needs a DSN: set secret.dsn (user:pass@tcp(host:3306)/idalloc)"},
		{"postgres without a dsn", "", []string{"config.driver=postgres"},
			"config.driver postgres needs a DSN: set secret.dsn (postgres://user:pass@host:5432/idalloc)"},
		{"existing secret without its dsn key", postgres, []string{"secret.keys.dsn="},
			`reads its DSN from secret.existingSecret "idalloc-postgres": secret.keys.dsn must name its key`},
		{"existing secret and a token in values", postgres, []string{"secret.adminToken=x"},
			`secret.existingSecret "idalloc-postgres" is where the admin token and the DSNs come from`},
		{"redis leases without a dsn", mysql, []string{"config.lease.driver=redis"},
			"config.lease.driver redis needs secret.leaseDsn"},
		{"etcd leases without a dsn", mysql, []string{"config.lease.driver=etcd"},
			"config.lease.driver etcd needs secret.leaseDsn"},
		{"a lease dsn for sql leases", mysql, []string{"secret.leaseDsn=redis://r:6379/0"},
			"secret.leaseDsn is set but config.lease.driver is sql"},
		{"a dsn for sqlite", "", []string{"secret.dsn=root@tcp(db:3306)/ids"},
			"secret.dsn is set but config.driver is sqlite"},
		{"the admin token in the config", "", []string{"config.admin_token=secret"},
			"config.admin_token: the admin token never goes into the ConfigMap; set secret.adminToken"},
		{"the lease dsn in the config", mysql, []string{"config.lease.dsn=redis://r:6379/0"},
			"config.lease.dsn: the lease store's DSN comes from the Secret"},
		{"a relative sqlite file", "", []string{"config.dsn=idalloc.db"},
			`config.dsn "idalloc.db": on sqlite the chart needs the file's absolute path`},
		{"drain as long as the timeout", "", []string{"config.shutdown_drain=25s"},
			"config.shutdown_timeout 25s must exceed config.shutdown_drain 25s"},
		{"a timeout that is no duration", "", []string{"config.shutdown_timeout=25 seconds"},
			"at '/config/shutdown_timeout': '25 seconds' does not match pattern"},
		{"a drain in bare seconds", "", []string{"config.shutdown_drain=5"},
			"at '/config/shutdown_drain': got number, want string"},
		{"two front ends on one port", "", []string{"config.resp_addr=:8880"},
			"config.http_addr and config.resp_addr both use port 8880"},
		{"an address without a port", "", []string{"config.http_addr=0.0.0.0"},
			"at '/config/http_addr': '0.0.0.0' does not match pattern"},
		{"a port out of range", "", []string{"config.grpc_addr=:70000"},
			`config.grpc_addr ":70000": the chart needs an address with a port from 1 to 65535`},
		{"an unknown driver", "", []string{"config.driver=oracle"},
			"at '/config/driver': value must be one of 'sqlite', 'mysql', 'postgres'"},
		{"a misspelt config key", "", []string{"config.max_bach=10"},
			"at '/config': additional properties 'max_bach' not allowed"},
		{"a misspelt top-level key", "", []string{"replicas=3"},
			"additional properties 'replicas' not allowed"},
		{"a config key out of range", "", []string{"config.max_batch=0"},
			"at '/config/max_batch': minimum: got 0, want 1"},
		{"an IDALLOC_ variable in extraEnv", "", []string{"extraEnv[0].name=IDALLOC_SHUTDOWN_TIMEOUT", "extraEnv[0].value=1h"},
			"at '/extraEnv/0/name': 'not' failed"},
		{"a negative preStop sleep", "", []string{"termination.preStopSleepSeconds=-1"},
			"at '/termination/preStopSleepSeconds': minimum: got -1, want 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			vals := withSets(t, readValues(t, c.file), c.sets...)
			_, err := render(vals)
			if err == nil {
				t.Fatalf("%s %v rendered; want an error with %q", c.file, c.sets, c.want)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("%s %v: error\n%v\nwant it to contain %q", c.file, c.sets, err, c.want)
			}
		})
	}
}

// secretConfigKeys are config.json's keys that the chart takes from the
// Secret instead of values.yaml's config.
var secretConfigKeys = []string{"admin_token", "lease.dsn"}

// TestValuesFollowConfigJSON: values.yaml's config has every key of the
// repository's config.json at the same default, but for the secrets and
// the SQLite file (an absolute path on the data volume), and the schema
// describes exactly those keys; so a key added to idalloc is added here.
func TestValuesFollowConfigJSON(t *testing.T) {
	root := repoRoot(t)
	var shipped map[string]any
	b, err := os.ReadFile(filepath.Join(root, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &shipped); err != nil {
		t.Fatal(err)
	}
	var values struct {
		Config map[string]any `json:"config"`
	}
	if err := yaml.Unmarshal(chartFile(t, "values.yaml"), &values); err != nil {
		t.Fatal(err)
	}
	want := flatten("", shipped)
	got := flatten("", values.Config)
	for _, k := range secretConfigKeys {
		if _, ok := want[k]; !ok {
			t.Errorf("config.json has no key %s any more: update secretConfigKeys and the chart", k)
		}
		delete(want, k)
	}
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("values.yaml config has no %s (config.json: %v)", k, w)
		case k == "dsn":
			if s, _ := g.(string); !filepath.IsAbs(s) {
				t.Errorf("values.yaml config.dsn %v: want the SQLite file's absolute path", g)
			}
		case !reflect.DeepEqual(g, w):
			t.Errorf("values.yaml config.%s is %v, config.json's default %v", k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("values.yaml config.%s is no key of config.json", k)
		}
	}

	var schema struct {
		Properties struct {
			Config schemaObject `json:"config"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(chartFile(t, "values.schema.json"), &schema); err != nil {
		t.Fatal(err)
	}
	described := schema.Properties.Config.keys("")
	all := slices.Sorted(maps.Keys(flatten("", shipped)))
	if !slices.Equal(described, all) {
		t.Errorf("values.schema.json describes config keys\n%v\nconfig.json has\n%v", described, all)
	}
	if schema.Properties.Config.AdditionalProperties == nil || *schema.Properties.Config.AdditionalProperties {
		t.Errorf("values.schema.json: config must refuse unknown keys, as idalloc does")
	}
}

type schemaObject struct {
	Properties           map[string]schemaObject `json:"properties"`
	AdditionalProperties *bool                   `json:"additionalProperties"`
}

func (s schemaObject) keys(prefix string) []string {
	var out []string
	for k, v := range s.Properties {
		if v.Properties != nil {
			out = append(out, v.keys(prefix+k+".")...)
		} else {
			out = append(out, prefix+k)
		}
	}
	slices.Sort(out)
	return out
}

// flatten turns nested objects into dotted keys.
func flatten(prefix string, m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if sub, ok := v.(map[string]any); ok {
			maps.Copy(out, flatten(prefix+k+".", sub))
			continue
		}
		out[prefix+k] = v
	}
	return out
}

// TestAppVersionIsTheRelease: Chart.yaml's appVersion, which the default
// image tag follows, is the newest release of CHANGELOG.md.
func TestAppVersionIsTheRelease(t *testing.T) {
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(chartFile(t, "Chart.yaml"), &chart); err != nil {
		t.Fatal(err)
	}
	changelog, err := os.ReadFile(filepath.Join(repoRoot(t), "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^## \[(\d+\.\d+\.\d+[^\]]*)\]`).FindSubmatch(changelog)
	if m == nil {
		t.Fatal("CHANGELOG.md names no release (## [x.y.z])")
	}
	if chart.AppVersion != string(m[1]) {
		t.Errorf("Chart.yaml appVersion %q; the newest release in CHANGELOG.md is %s", chart.AppVersion, m[1])
	}
}
