package helmchart_test

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/common"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"
	"helm.sh/helm/v4/pkg/chart/v2/loader"
	release "helm.sh/helm/v4/pkg/release/v1"
	releaseutil "helm.sh/helm/v4/pkg/release/v1/util"
	"helm.sh/helm/v4/pkg/strvals"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

const (
	chartDir    = "idalloc"
	releaseName = "idalloc"
	namespace   = "ids"
	// kubeVersion is the oldest Kubernetes the chart supports (Chart.yaml's
	// kubeVersion): rendering and linting as that version holds the claim.
	kubeVersion = "v1.30.0"
)

// existingSecrets are the Secrets that example values name in
// secret.existingSecret, which the chart does not make: the test supplies
// them as an operator would have made them.
var existingSecrets = map[string]map[string]string{
	"idalloc-postgres": {
		"admin-token": "example-admin-token-from-an-existing-secret",
		"dsn":         "postgres://idalloc:example-password@postgres.db.svc:5432/idalloc?sslmode=require",
	},
}

// valuesCase is one values file the chart is held to: "" is the chart's
// defaults alone.
type valuesCase struct{ name, file string }

// valuesCases are the defaults and every file of idalloc/ci/, the
// chart-testing convention (ct lint and ct install read the same files).
func valuesCases(t *testing.T) []valuesCase {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(chartDir, "ci", "*-values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 5 {
		t.Fatalf("idalloc/ci has %d values files, want at least 5 (mysql, postgres, the lease stores, everything on): %v", len(files), files)
	}
	cases := []valuesCase{{name: "default"}}
	for _, f := range files {
		cases = append(cases, valuesCase{name: strings.TrimSuffix(filepath.Base(f), "-values.yaml"), file: f})
	}
	return cases
}

// readValues reads a values file as helm -f does; "" is no file.
func readValues(t *testing.T, file string) map[string]any {
	t.Helper()
	if file == "" {
		return map[string]any{}
	}
	v, err := common.ReadValuesFile(file)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// withSets applies --set expressions to a copy of vals.
func withSets(t *testing.T, vals map[string]any, sets ...string) map[string]any {
	t.Helper()
	out := map[string]any{}
	b, err := yaml.Marshal(vals)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	for _, s := range sets {
		if err := strvals.ParseInto(s, out); err != nil {
			t.Fatalf("--set %s: %v", s, err)
		}
	}
	return out
}

// render is `helm template` (an install's client-side dry run, which
// validates the values against values.schema.json as install does).
func render(vals map[string]any) (*release.Release, error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, err
	}
	install := action.NewInstall(action.NewConfiguration())
	install.DryRunStrategy = action.DryRunClient
	install.ReleaseName = releaseName
	install.Namespace = namespace
	install.Replace = true
	kv, err := common.ParseKubeVersion(kubeVersion)
	if err != nil {
		return nil, err
	}
	install.KubeVersion = kv
	rel, err := install.Run(ch, vals)
	if err != nil {
		return nil, err
	}
	r, ok := rel.(*release.Release)
	if !ok {
		return nil, fmt.Errorf("install returned a %T, want *release.Release", rel)
	}
	return r, nil
}

// object is one rendered manifest decoded into its Kubernetes type.
type object struct {
	source string // the template it came from
	kind   string
	name   string
	typed  any
}

// kinds are the Go types of every kind the chart may render, with the
// apiVersion each must have. Another kind fails the test: a new template
// brings its type here.
var kinds = map[string]struct {
	apiVersion string
	new        func() any
}{
	"Deployment":            {"apps/v1", func() any { return new(appsv1.Deployment) }},
	"Service":               {"v1", func() any { return new(corev1.Service) }},
	"ConfigMap":             {"v1", func() any { return new(corev1.ConfigMap) }},
	"Secret":                {"v1", func() any { return new(corev1.Secret) }},
	"ServiceAccount":        {"v1", func() any { return new(corev1.ServiceAccount) }},
	"PersistentVolumeClaim": {"v1", func() any { return new(corev1.PersistentVolumeClaim) }},
	"PodDisruptionBudget":   {"policy/v1", func() any { return new(policyv1.PodDisruptionBudget) }},
	"NetworkPolicy":         {"networking.k8s.io/v1", func() any { return new(networkingv1.NetworkPolicy) }},
	"ServiceMonitor":        {"monitoring.coreos.com/v1", func() any { return new(monitoringv1.ServiceMonitor) }},
}

// decode splits a release's manifest and decodes each document strictly:
// an unknown or duplicated field, a wrong type, an unknown kind or a kind
// at another apiVersion is an error naming the template.
func decode(manifest string) ([]object, error) {
	docs := releaseutil.SplitManifests(manifest)
	keys := make([]string, 0, len(docs))
	for k := range docs {
		keys = append(keys, k)
	}
	sort.Sort(releaseutil.BySplitManifestsOrder(keys))
	var objs []object
	for _, k := range keys {
		doc := docs[k]
		source := "?"
		if _, rest, ok := strings.Cut(doc, "# Source: "); ok {
			source, _, _ = strings.Cut(rest, "\n")
		}
		var tm metav1.TypeMeta
		if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
			return nil, fmt.Errorf("%s: %v", source, err)
		}
		if tm.Kind == "" {
			continue // a template that rendered nothing but comments
		}
		k, ok := kinds[tm.Kind]
		if !ok {
			return nil, fmt.Errorf("%s: kind %q has no Go type in this test", source, tm.Kind)
		}
		if tm.APIVersion != k.apiVersion {
			return nil, fmt.Errorf("%s: %s is apiVersion %q, want %q", source, tm.Kind, tm.APIVersion, k.apiVersion)
		}
		typed := k.new()
		if err := yaml.UnmarshalStrict([]byte(doc), typed); err != nil {
			return nil, fmt.Errorf("%s: %s does not decode strictly: %v", source, tm.Kind, err)
		}
		name := typed.(metav1.Object).GetName()
		objs = append(objs, object{source: source, kind: tm.Kind, name: name, typed: typed})
	}
	return objs, nil
}

// rendered is one values case's objects, by kind.
type rendered struct {
	vals  map[string]any
	rel   *release.Release
	objs  []object
	byKnd map[string][]any
}

func renderCase(t *testing.T, vals map[string]any) *rendered {
	t.Helper()
	rel, err := render(vals)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	objs, err := decode(rel.Manifest)
	if err != nil {
		t.Fatalf("%v\n%s", err, rel.Manifest)
	}
	r := &rendered{vals: vals, rel: rel, objs: objs, byKnd: map[string][]any{}}
	for _, o := range objs {
		r.byKnd[o.kind] = append(r.byKnd[o.kind], o.typed)
	}
	return r
}

// one returns the only object of a kind, failing unless there is exactly one.
func one[T any](t *testing.T, r *rendered, kind string) *T {
	t.Helper()
	if n := len(r.byKnd[kind]); n != 1 {
		t.Fatalf("%d objects of kind %s rendered, want 1", n, kind)
	}
	return r.byKnd[kind][0].(*T)
}

// optional returns the object of a kind, or nil when none was rendered.
func optional[T any](t *testing.T, r *rendered, kind string) *T {
	t.Helper()
	switch len(r.byKnd[kind]) {
	case 0:
		return nil
	case 1:
		return r.byKnd[kind][0].(*T)
	}
	t.Fatalf("%d objects of kind %s rendered, want at most 1", len(r.byKnd[kind]), kind)
	return nil
}

// TestLint: helm lint --strict over every values case: any warning or
// error fails (an INFO, such as the icon Chart.yaml lacks, is logged).
func TestLint(t *testing.T) {
	for _, c := range valuesCases(t) {
		t.Run(c.name, func(t *testing.T) {
			l := action.NewLint()
			l.Strict = true
			l.Namespace = namespace
			kv, err := common.ParseKubeVersion(kubeVersion)
			if err != nil {
				t.Fatal(err)
			}
			l.KubeVersion = kv
			res := l.Run([]string{chartDir}, readValues(t, c.file))
			for _, m := range res.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("lint: %s", m)
				} else {
					t.Logf("lint: %s", m)
				}
			}
			for _, err := range res.Errors {
				t.Errorf("lint: %v", err)
			}
			if res.TotalChartsLinted != 1 {
				t.Errorf("lint: %d charts linted, want 1", res.TotalChartsLinted)
			}
		})
	}
}

// chartFile reads a file of the chart.
func chartFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chartDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
