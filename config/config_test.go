package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func writeConfig(tb testing.TB, body string) string {
	tb.Helper()
	p := filepath.Join(tb.TempDir(), "config.json")
	if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
		tb.Fatal(err)
	}
	return p
}

// noEnv is an environment with no IDALLOC_* variable set.
var noEnv []string

// environ is m in os.Environ's form.
func environ(m map[string]string) []string {
	var out []string
	for k, v := range m {
		out = append(out, k+"="+v)
	}
	return out
}

// TestShippedConfigIsTheDefault: the repository's config.json (which the
// image bakes in) sets every key, each to its default, so that it shows a
// reader every setting there is.
func TestShippedConfigIsTheDefault(t *testing.T) {
	const path = "../config.json"
	got, err := Load(path, true, noEnv)
	if err != nil {
		t.Fatal(err)
	}
	def, err := Default().Validate()
	if err != nil {
		t.Fatal(err)
	}
	want := def.Effective()
	for i, st := range got.Effective() {
		if st.Source != path {
			t.Errorf("config.json does not set key %q", st.Key)
		}
		if st.Value != want[i].Value {
			t.Errorf("config.json: key %q is %s, want the default %s", st.Key, st.Value, want[i].Value)
		}
	}
}

func TestBadConfigNamesTheKey(t *testing.T) {
	cases := []struct{ body, key string }{
		{`{"driver":"postgresql"}`, `"driver"`},
		{`{"dsn":""}`, `"dsn"`},
		{`{"http_addr":""}`, `"http_addr"`},
		{`{"max_batch":0}`, `"max_batch"`},
		{`{"max_batch":"ten"}`, `"max_batch"`},
		{`{"max_range":0}`, `"max_range"`},
		{`{"max_range":100000001}`, `"max_range"`},
		{`{"shutdown_drain":"soon"}`, `"shutdown_drain"`},
		{`{"max_conns":0}`, `"max_conns"`},
		{`{"max_conns":1000001}`, `"max_conns"`},
		{`{"max_conns":"many"}`, `"max_conns"`},
		{`{"resp_max_conns":0}`, `"resp_max_conns"`},
		{`{"resp_max_conns":1000001}`, `"resp_max_conns"`},
		{`{"resp_idle_timeout":"forever"}`, `"resp_idle_timeout"`},
		{`{"resp_idle_timeout":"10ms"}`, `"resp_idle_timeout"`},
		{`{"resp_command_timeout":"soon"}`, `"resp_command_timeout"`},
		{`{"resp_command_timeout":"500ms"}`, `"resp_command_timeout"`},
		{`{"resp_max_pending":0}`, `"resp_max_pending"`},
		{`{"resp_max_pending":262143}`, `"resp_max_pending"`},
		{`{"resp_max_pending":1073741825}`, `"resp_max_pending"`},
		{`{"resp_max_pending":"8MiB"}`, `"resp_max_pending"`},
		{`{"resp_max_pending_total":0}`, `"resp_max_pending_total"`},
		{`{"resp_max_pending_total":8388607}`, `"resp_max_pending_total"`}, // below the default resp_max_pending
		{`{"resp_max_pending":1048576,"resp_max_pending_total":1048575}`, `"resp_max_pending_total"`},
		{`{"resp_max_pending_total":1099511627777}`, `"resp_max_pending_total"`},
		{`{"resp_max_pending_total":"64MiB"}`, `"resp_max_pending_total"`},
		{`{"resp_max_pending_total":-1}`, `"resp_max_pending_total"`},
		{`{"resp_addr":":8880"}`, `"resp_addr"`}, // the default http_addr
		{`{"resp_addr":6380}`, `"resp_addr"`},
		{`{"grpc_addr":":8880"}`, `"grpc_addr"`}, // the default http_addr
		{`{"resp_addr":":6380","grpc_addr":":6380"}`, `"grpc_addr"`},
		{`{"grpc_max_conns":0}`, `"grpc_max_conns"`},
		{`{"grpc_max_conns":1000001}`, `"grpc_max_conns"`},
		{`{"grpc_max_streams":0}`, `"grpc_max_streams"`},
		{`{"grpc_max_streams":10001}`, `"grpc_max_streams"`},
		{`{"shutdown_timeout":"soon"}`, `"shutdown_timeout"`},
		{`{"shutdown_timeout":"5s"}`, `"shutdown_timeout"`}, // not above the default drain
		{`{"shutdown_drain":"30s"}`, `"shutdown_timeout"`},  // above the default timeout
		{`{"shutdown_drain":"2s","shutdown_timeout":"1s"}`, `"shutdown_timeout"`},
		{`{"lease":{"driver":"zookeeper"}}`, `"lease.driver"`},
		{`{"lease":{"driver":"redis"}}`, `"lease.dsn"`},
		{`{"lease":{"driver":"etcd","dsn":""}}`, `"lease.dsn"`},
		{`{"lease":{"driver":"sql","dsn":"redis://127.0.0.1:6379"}}`, `"lease.dsn"`},
		{`{"segment":{"maxstep":5}}`, `"segment.maxstep"`},
		{`{"snowflake":{"enabled":true,"worker_bitz":3}}`, `"snowflake.worker_bitz"`},
		{`{"segment":{"max_step":0}}`, `"segment.max_step"`},
		{`{"segment":{"tag_refresh":"1ms"}}`, `"segment.tag_refresh"`},
		{`{"segment":{"max_step":"big"}}`, `"segment.max_step"`},
		{`{"snowflake":{"worker_bits":22}}`, `"snowflake.worker_bits"`},
		{`{"snowflake":{"epoch":"yesterday"}}`, `"snowflake.epoch"`},
		{`{"snowflake":{"cluster":"a b"}}`, `"snowflake.cluster"`},
		{`{"snowflake":{"lease_ttl":"10ms"}}`, `"snowflake.lease_ttl"`},
		{`{"snowflake":{"max_drift_block":"2s","max_drift_error":"1s"}}`, `"snowflake.max_drift_error"`},
		{`{"snowflake":{"max_drift_block":"0s"}}`, `"snowflake.max_drift_block"`},
		{`{"snowflake":{"max_drift_block":"5ms","max_drift_error":"0s"}}`, `"snowflake.max_drift_error"`},
		{`{"snowflake":{"epoch":"2999-01-01T00:00:00Z"}}`, `"snowflake.epoch"`},
		{`{"snowflake":{"epoch":"1950-01-01T00:00:00Z"}}`, `"snowflake.epoch"`},
		{`{"snowflake":{"random_sequence_start":"yes"}}`, `"snowflake.random_sequence_start"`},
		{`{"metrics":{"max_tag_series":0}}`, `"metrics.max_tag_series"`},
		{`{"metrics":{"max_tag_series":100001}}`, `"metrics.max_tag_series"`},
		{`{"metrics":{"max_tag_series":"all"}}`, `"metrics.max_tag_series"`},
		{`{"metrics":{"max_series":10}}`, `"metrics.max_series"`},
		{`{"alloc_auth":"yes"}`, `"alloc_auth"`},
		{`{"alloc_auth":1}`, `"alloc_auth"`},
		{`{"dated":{"max_clock_skew":"soon"}}`, `"dated.max_clock_skew"`},
		{`{"dated":{"max_clock_skew":"0s"}}`, `"dated.max_clock_skew"`}, // 0 would read as the default
		{`{"dated":{"max_clock_skew":"99ms"}}`, `"dated.max_clock_skew"`},
		{`{"dated":{"max_clock_skew":"-1s"}}`, `"dated.max_clock_skew"`},
		{`{"dated":{"max_clock_skew":1}}`, `"dated.max_clock_skew"`},
		{`{"dated":{"max_skew":"1s"}}`, `"dated.max_skew"`},
		{`{"region":{"count":0}}`, `key "region.count": 0 must be from 1 to 1024`},
		{`{"region":{"count":-1}}`, `key "region.count": -1 must be from 1 to 1024`},
		{`{"region":{"count":1025}}`, `key "region.count": 1025 must be from 1 to 1024`},
		{`{"region":{"count":"two"}}`, `"region.count"`},
		{`{"region":{"count":2,"id":2}}`, `key "region.id": 2 must be from 0 to region.count − 1`},
		{`{"region":{"count":2,"id":-1}}`, `key "region.id": -1`},
		{`{"region":{"id":1}}`, `key "region.id": 1`}, // one region by default
		{`{"region":{"count":5},"snowflake":{"worker_bits":2}}`, `key "region.count": 5 regions, 4 worker IDs`},
		{`{"region":{"name":"eu"}}`, `"region.name"`},
		{`{"no_such_key":1}`, `"no_such_key"`},
		{`{"driver":"sqlite"} {}`, `trailing`},
		{`{`, `unexpected EOF`},
	}
	for _, c := range cases {
		_, err := Load(writeConfig(t, c.body), true, noEnv)
		if err == nil || !strings.Contains(err.Error(), c.key) {
			t.Errorf("config %s: got error %v, want one naming %s", c.body, err, c.key)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("config %s: error spans lines: %q", c.body, err)
		}
	}
}

// TestRegionKeys: region.count and region.id reach the settings as given;
// without them an instance is the single region of a deployment without
// regions.
func TestRegionKeys(t *testing.T) {
	cases := []struct {
		body string
		want RegionConfig
	}{
		{`{}`, RegionConfig{Count: 1}},
		{`{"region":{"count":2,"id":1}}`, RegionConfig{Count: 2, ID: 1}},
		{`{"region":{"count":1024,"id":1023}}`, RegionConfig{Count: 1024, ID: 1023}},
		{`{"region":{"count":4},"snowflake":{"worker_bits":2}}`, RegionConfig{Count: 4}},
	}
	for _, c := range cases {
		s, err := Load(writeConfig(t, c.body), true, noEnv)
		if err != nil || s.Region != c.want {
			t.Errorf("config %s: region %+v, %v; want %+v", c.body, s.Region, err, c.want)
		}
	}
}

// TestUnknownNestedKeyNamesItsPath: encoding/json alone says
// `unknown field "maxstep"`, which leaves the reader to guess the object.
func TestUnknownNestedKeyNamesItsPath(t *testing.T) {
	cases := []struct{ body, want string }{
		{`{"segment":{"maxstep":5}}`, `key "segment.maxstep": unknown key; the keys there are max_step, tag_refresh`},
		{`{"snowflake":{"cluster":"a","zz":1,"aa":2}}`, `key "snowflake.aa": unknown key; the keys there are enabled, cluster, layout, epoch, worker_bits, lease_ttl, max_drift_block, max_drift_error, random_sequence_start`},
		{`{"maxconns":5}`, `key "maxconns": unknown key; the keys there are http_addr, driver, dsn, admin_token, alloc_auth, max_batch, max_range, max_conns, resp_addr, resp_max_conns, resp_idle_timeout, resp_command_timeout, resp_max_pending, resp_max_pending_total, grpc_addr, grpc_max_conns, grpc_max_streams, shutdown_drain, shutdown_timeout, segment, snowflake, lease, dated, region, metrics`},
	}
	for _, c := range cases {
		_, err := Load(writeConfig(t, c.body), true, noEnv)
		if err == nil || !strings.HasSuffix(err.Error(), c.want) {
			t.Errorf("config %s: got error %v, want one ending %s", c.body, err, c.want)
		}
	}
	// Keys match regardless of case, as encoding/json matches them.
	if _, err := Load(writeConfig(t, `{"Segment":{"Max_Step":5}}`), true, noEnv); err != nil {
		t.Errorf("keys in another case: got %v, want them accepted", err)
	}
}

func TestEnvironmentOverrides(t *testing.T) {
	env := map[string]string{
		"IDALLOC_HTTP_ADDR": "127.0.0.1:9999", "IDALLOC_RESP_ADDR": ":6380", "IDALLOC_DRIVER": "mysql",
		"IDALLOC_DSN": "u:p@tcp(db:3306)/ids", "IDALLOC_ADMIN_TOKEN": "s3cret",
		"IDALLOC_LEASE_DRIVER": "etcd", "IDALLOC_LEASE_DSN": "http://127.0.0.1:2379",
		"IDALLOC_RESP_COMMAND_TIMEOUT": "10s", "IDALLOC_GRPC_ADDR": ":9090",
	}
	got, err := Load(writeConfig(t, `{"shutdown_drain":"1s"}`), true, environ(env))
	if err != nil {
		t.Fatal(err)
	}
	if got.HTTPAddr != env["IDALLOC_HTTP_ADDR"] || got.RespAddr != ":6380" || got.GRPCAddr != ":9090" || got.Driver != "mysql" || got.DSN != env["IDALLOC_DSN"] ||
		got.AdminToken != "s3cret" || got.ShutdownDrain.Duration() != time.Second || got.RespCommandTimeout.Duration() != 10*time.Second ||
		got.Lease != (LeaseConfig{Driver: "etcd", DSN: "http://127.0.0.1:2379"}) {
		t.Fatalf("got %+v, want the environment's values and drain 1s", got.Config)
	}
}

// TestAllocAuth: alloc_auth is off unless the file turns it on (docs/api.md
// §12).
func TestAllocAuth(t *testing.T) {
	for body, want := range map[string]bool{`{}`: false, `{"alloc_auth":false}`: false, `{"alloc_auth":true}`: true} {
		s, err := Load(writeConfig(t, body), true, noEnv)
		if err != nil || s.AllocAuth != want {
			t.Errorf("config %s: alloc_auth %v (%v), want %v", body, s.AllocAuth, err, want)
		}
	}
}

// TestDatedMaxClockSkew: dated.max_clock_skew is 1s by default, as
// docs/api.md §11 has it, and takes any duration from its minimum up.
// TestMaxTagSeries: metrics.max_tag_series is 1,000 unless the file says.
func TestMaxTagSeries(t *testing.T) {
	for body, want := range map[string]int{`{}`: 1000, `{"metrics":{}}`: 1000, `{"metrics":{"max_tag_series":1}}`: 1,
		`{"metrics":{"max_tag_series":100000}}`: 100_000} {
		s, err := Load(writeConfig(t, body), true, noEnv)
		if err != nil || s.Metrics.MaxTagSeries != want {
			t.Errorf("config %s: max_tag_series %d (%v), want %d", body, s.Metrics.MaxTagSeries, err, want)
		}
	}
}

func TestDatedMaxClockSkew(t *testing.T) {
	for _, c := range []struct {
		body string
		want time.Duration
	}{
		{`{}`, time.Second},
		{`{"dated":{}}`, time.Second},
		{`{"dated":{"max_clock_skew":"100ms"}}`, 100 * time.Millisecond},
		{`{"dated":{"max_clock_skew":"5s"}}`, 5 * time.Second},
	} {
		s, err := Load(writeConfig(t, c.body), true, noEnv)
		if err != nil || s.Dated.MaxClockSkew.Duration() != c.want {
			t.Errorf("config %s: dated.max_clock_skew %v, %v; want %v", c.body, s.Dated.MaxClockSkew.Duration(), err, c.want)
		}
	}
}

func TestMissingConfig(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "none.json")
	if _, err := Load(missing, false, noEnv); err != nil {
		t.Fatalf("implicit config.json absent: got %v, want the defaults", err)
	}
	if _, err := Load(missing, true, noEnv); err == nil {
		t.Fatal("explicit -config absent: got no error")
	}
}

// TestConfigErrorsNameTheSource: an error names where the bad value came
// from (the environment variable, the file and key, the -config flag), a
// syntax error its line and column, and a wrong type in words.
func TestConfigErrorsNameTheSource(t *testing.T) {
	cases := []struct {
		name     string
		body     string // config.json; "-" for none at the path -config names
		env      map[string]string
		want     string // the error after the file's path
		wantFrom string // "env", "file" or "flag"
	}{
		{"typo in IDALLOC_DRIVER", `{}`, map[string]string{"IDALLOC_DRIVER": "mysq"},
			`IDALLOC_DRIVER (key "driver"): "mysq" is not "sqlite", "mysql" or "postgres"`, "env"},
		{"typo in IDALLOC_LEASE_DRIVER", `{}`, map[string]string{"IDALLOC_LEASE_DRIVER": "zk"},
			`IDALLOC_LEASE_DRIVER (key "lease.driver"): "zk" is not "sql", "redis" or "etcd"`, "env"},
		{"typo in the file", `{"driver":"mysq"}`, nil, `key "driver": "mysq" is not "sqlite", "mysql" or "postgres"`, "file"},
		{"the file's value, overridden", `{"driver":"mysq"}`, map[string]string{"IDALLOC_DRIVER": "sqlite"}, "", ""},
		{"syntax error", "{\n  \"driver\": \"sqlite\",\n  x\n}", nil,
			`line 3, column 3: invalid character 'x' looking for beginning of object key string`, "file"},
		{"trailing comma", "{\"driver\": \"sqlite\",}", nil, `line 1, column 21: invalid character '}'`, "file"},
		{"unclosed object", "{\n", nil, `line 2, column 1: unexpected EOF`, "file"},
		{"a string for an integer", `{"max_batch":"ten"}`, nil, `key "max_batch": want an integer, got a string`, "file"},
		{"a fraction for an integer", `{"segment":{"max_step":1.5}}`, nil, `key "segment.max_step": want an integer, got 1.5`, "file"},
		{"a string for a bool", `{"snowflake":{"random_sequence_start":"yes"}}`, nil,
			`key "snowflake.random_sequence_start": want true or false, got a string`, "file"},
		{"a number for a string", `{"resp_addr":6380}`, nil, `key "resp_addr": want a string, got a number`, "file"},
		{"an array for the config", `[]`, nil, `want a JSON object, got an array`, "file"},
		{"no file at -config", "-", nil, `no such file or directory`, "flag"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "missing.json")
			if c.body != "-" {
				path = writeConfig(t, c.body)
			}
			_, err := Load(path, true, environ(c.env))
			if c.want == "" {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want %s", c.want)
			}
			var prefix string
			switch c.wantFrom {
			case "env":
				prefix = "" // the file had no part in it
			case "file":
				prefix = "config " + path + ": "
			case "flag":
				prefix = "flag -config: "
			}
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || !strings.Contains(msg, c.want) ||
				c.wantFrom == "env" && strings.Contains(msg, path) {
				t.Errorf("got %q, want %q%s", msg, prefix, c.want)
			}
		})
	}
}

// TestSnowflakeLayout: snowflake.layout picks the layout, and worker_bits
// defaults to the layout's own (10 of 22 bits, 6 of js53's 12) unless the
// file or the environment sets it.
func TestSnowflakeLayout(t *testing.T) {
	cases := []struct {
		body       string
		env        map[string]string
		workerBits int
		idBits     int
		wantErr    string
	}{
		{`{}`, nil, 10, 63, ""},
		{`{"snowflake":{"layout":"default"}}`, nil, 10, 63, ""},
		{`{"snowflake":{"layout":"js53"}}`, nil, 6, 53, ""},
		{`{"snowflake":{"layout":"js53","worker_bits":8}}`, nil, 8, 53, ""},
		{`{"snowflake":{"layout":"js53","worker_bits":10}}`, nil, 10, 53, ""},
		{`{}`, map[string]string{"IDALLOC_SNOWFLAKE_LAYOUT": "js53"}, 6, 53, ""},
		{`{"snowflake":{"layout":"js53"}}`, map[string]string{"IDALLOC_SNOWFLAKE_WORKER_BITS": "11"}, 11, 53, ""},
		{`{"snowflake":{"layout":"js53","worker_bits":12}}`, nil, 0, 0, `key "snowflake.worker_bits": 12 is outside 1..11`},
		{`{"snowflake":{"layout":"JS53"}}`, nil, 0, 0, `key "snowflake.layout": "JS53" is neither "default" nor "js53"`},
		{`{"snowflake":{"layout":""}}`, nil, 0, 0, `key "snowflake.layout"`},
	}
	for _, c := range cases {
		got, err := Load(writeConfig(t, c.body), true, environ(c.env))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) {
				t.Errorf("%s %v: error %v, want one with %s", c.body, c.env, err, c.wantErr)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s %v: %v", c.body, c.env, err)
			continue
		}
		if got.Snowflake.WorkerBits != c.workerBits || got.Layout.WorkerBits != c.workerBits || got.Layout.IDBits() != c.idBits {
			t.Errorf("%s %v: worker_bits %d, layout %+v, want %d worker bits of %d-bit IDs",
				c.body, c.env, got.Snowflake.WorkerBits, got.Layout, c.workerBits, c.idBits)
		}
	}
}
