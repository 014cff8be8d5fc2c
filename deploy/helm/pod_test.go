package helmchart_test

import (
	"encoding/json"
	"fmt"
	"net"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// The pod as the kubelet would run it, read from the rendered objects.

// listenKeys are the config keys whose address is a container port, with
// the port's name.
var listenKeys = []struct{ key, port string }{
	{"http_addr", "http"}, {"resp_addr", "resp"}, {"grpc_addr", "grpc"},
}

// idallocConfig is what the tests read of the rendered config file; the
// rest of it is idalloc's to check when it starts on it.
type idallocConfig struct {
	raw             map[string]any
	Driver          string `json:"driver"`
	DSN             string `json:"dsn"`
	ShutdownDrain   string `json:"shutdown_drain"`
	ShutdownTimeout string `json:"shutdown_timeout"`
	Lease           struct {
		Driver string `json:"driver"`
	} `json:"lease"`
}

func (c idallocConfig) addr(key string) string {
	s, _ := c.raw[key].(string)
	return s
}

// container is the Deployment's only container.
func container(t *testing.T, r *rendered) (*appsv1.Deployment, *corev1.Container) {
	t.Helper()
	d := one[appsv1.Deployment](t, r, "Deployment")
	if n := len(d.Spec.Template.Spec.Containers); n != 1 {
		t.Fatalf("the Deployment has %d containers, want 1", n)
	}
	return d, &d.Spec.Template.Spec.Containers[0]
}

// flagValue is the value of a flag in args (-flag value or -flag=value).
func flagValue(args []string, flag string) (string, bool) {
	for i, a := range args {
		if a == flag && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, flag+"="); ok {
			return v, true
		}
	}
	return "", false
}

// volumeAt is the volume whose mount holds file, and the file's path inside it.
func volumeAt(d *appsv1.Deployment, c *corev1.Container, file string) (*corev1.Volume, string, error) {
	var best *corev1.VolumeMount
	for i, m := range c.VolumeMounts {
		if strings.HasPrefix(file, strings.TrimSuffix(m.MountPath, "/")+"/") && (best == nil || len(m.MountPath) > len(best.MountPath)) {
			best = &c.VolumeMounts[i]
		}
	}
	if best == nil {
		return nil, "", fmt.Errorf("%s is on no mounted volume (the root filesystem is read-only)", file)
	}
	if best.SubPath != "" {
		return nil, "", fmt.Errorf("volume %s is mounted with a subPath, which this test does not follow", best.Name)
	}
	for i, v := range d.Spec.Template.Spec.Volumes {
		if v.Name == best.Name {
			return &d.Spec.Template.Spec.Volumes[i], strings.TrimPrefix(file, strings.TrimSuffix(best.MountPath, "/")+"/"), nil
		}
	}
	return nil, "", fmt.Errorf("mount %s names no volume of the pod", best.Name)
}

// configFile follows the container's -config to the ConfigMap key mounted
// there and returns the file's text.
func configFile(t *testing.T, r *rendered) (string, idallocConfig) {
	t.Helper()
	d, c := container(t, r)
	args := append(append([]string{}, c.Command...), c.Args...)
	file, ok := flagValue(args, "-config")
	if !ok {
		t.Fatalf("the container's command %q has no -config", args)
	}
	v, key, err := volumeAt(d, c, file)
	if err != nil {
		t.Fatalf("-config %s: %v", file, err)
	}
	if v.ConfigMap == nil {
		t.Fatalf("-config %s: volume %s is not a ConfigMap", file, v.Name)
	}
	cm := one[corev1.ConfigMap](t, r, "ConfigMap")
	if v.ConfigMap.Name != cm.Name {
		t.Fatalf("-config %s: volume %s names ConfigMap %q; the chart renders %q", file, v.Name, v.ConfigMap.Name, cm.Name)
	}
	text, ok := cm.Data[key]
	if !ok {
		t.Fatalf("-config %s: ConfigMap %s has no key %q", file, cm.Name, key)
	}
	var cfg idallocConfig
	if err := json.Unmarshal([]byte(text), &cfg); err != nil {
		t.Fatalf("ConfigMap %s key %s: %v", cm.Name, key, err)
	}
	if err := json.Unmarshal([]byte(text), &cfg.raw); err != nil {
		t.Fatal(err)
	}
	return text, cfg
}

// addrPort is the port of a listen address.
func addrPort(addr string) (int32, error) {
	_, p, err := net.SplitHostPort(addr)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseInt(p, 10, 32)
	return int32(n), err
}

// containerPort resolves a probe's or Service's port (a number or a name)
// to a container port.
func containerPort(c *corev1.Container, p intstr.IntOrString) (int32, error) {
	if p.Type == intstr.Int {
		return p.IntVal, nil
	}
	for _, cp := range c.Ports {
		if cp.Name == p.StrVal {
			return cp.ContainerPort, nil
		}
	}
	return 0, fmt.Errorf("no container port is named %q", p.StrVal)
}

// secretValue is a key of a Secret: the one the chart renders, or one of
// existingSecrets.
func secretValue(t *testing.T, r *rendered, ref *corev1.SecretKeySelector) (string, error) {
	t.Helper()
	if s := optional[corev1.Secret](t, r, "Secret"); s != nil && s.Name == ref.Name {
		v, ok := s.Data[ref.Key]
		if !ok {
			return "", fmt.Errorf("the rendered Secret %s has no key %q", ref.Name, ref.Key)
		}
		return string(v), nil
	}
	if s, ok := existingSecrets[ref.Name]; ok {
		v, ok := s[ref.Key]
		if !ok {
			return "", fmt.Errorf("existing Secret %s has no key %q", ref.Name, ref.Key)
		}
		return v, nil
	}
	return "", fmt.Errorf("Secret %q is neither rendered nor one the test supplies", ref.Name)
}

// podEnv is the container's environment as the kubelet sets it.
func podEnv(t *testing.T, r *rendered) map[string]string {
	t.Helper()
	_, c := container(t, r)
	if len(c.EnvFrom) > 0 {
		t.Fatalf("envFrom is not followed by this test")
	}
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			v, err := secretValue(t, r, e.ValueFrom.SecretKeyRef)
			if err != nil {
				t.Fatalf("env %s: %v", e.Name, err)
			}
			env[e.Name] = v
		default:
			t.Fatalf("env %s: only values and secretKeyRef are followed by this test", e.Name)
		}
	}
	return env
}

// preStopSleep is the preStop hook's sleep, 0 without one.
func preStopSleep(t *testing.T, c *corev1.Container) time.Duration {
	t.Helper()
	if c.Lifecycle == nil || c.Lifecycle.PreStop == nil {
		return 0
	}
	if c.Lifecycle.PreStop.Sleep == nil {
		t.Fatalf("preStop is not a sleep action: %+v", c.Lifecycle.PreStop)
	}
	return time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
}

// sqliteFile is the SQLite file's volume path, when the config's driver is sqlite.
func sqliteFile(t *testing.T, r *rendered, cfg idallocConfig) (*corev1.Volume, string) {
	t.Helper()
	d, c := container(t, r)
	if !path.IsAbs(cfg.DSN) {
		t.Fatalf("the sqlite dsn %q is not an absolute path", cfg.DSN)
	}
	v, rel, err := volumeAt(d, c, cfg.DSN)
	if err != nil {
		t.Fatalf("the sqlite file: %v", err)
	}
	return v, rel
}
