package helmchart_test

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// watchdogSlack is how long idalloc lets a stop outlast shutdown_timeout
// before it exits anyway (frontend/stop.go's stopWatchdogSlack).
const watchdogSlack = time.Second

// TestRenderedObjects: every values case renders objects that decode
// strictly into Kubernetes' own types and fit together: selectors select
// the pods, Service and probe ports name container ports, the config's
// addresses are those ports, Secrets hold the keys the env reads, every
// path idalloc writes is a volume, and the grace period covers the stop.
func TestRenderedObjects(t *testing.T) {
	for _, c := range valuesCases(t) {
		t.Run(c.name, func(t *testing.T) {
			r := renderCase(t, readValues(t, c.file))
			checkObjects(t, r)
		})
	}
}

// TestRenderedVariants: values no example file sets render objects that
// pass the same checks, and do what the value says.
func TestRenderedVariants(t *testing.T) {
	for _, c := range []struct {
		name  string
		sets  []string
		check func(*testing.T, *rendered)
	}{
		{"sqlite on an emptyDir", []string{"persistence.enabled=false"}, func(t *testing.T, r *rendered) {
			_, cfg := configFile(t, r)
			if v, _ := sqliteFile(t, r, cfg); v.EmptyDir == nil {
				t.Errorf("volume %s is not an emptyDir", v.Name)
			}
			if optional[corev1.PersistentVolumeClaim](t, r, "PersistentVolumeClaim") != nil {
				t.Errorf("a claim is rendered with persistence off")
			}
			if !strings.Contains(r.rel.Info.Notes, "WARNING: persistence.enabled is false") {
				t.Errorf("NOTES.txt does not warn of the emptyDir")
			}
		}},
		{"sqlite on a claim of one's own", []string{"persistence.existingClaim=ids-data"}, func(t *testing.T, r *rendered) {
			_, cfg := configFile(t, r)
			if v, _ := sqliteFile(t, r, cfg); v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "ids-data" {
				t.Errorf("volume %s is not claim ids-data", v.Name)
			}
			if optional[corev1.PersistentVolumeClaim](t, r, "PersistentVolumeClaim") != nil {
				t.Errorf("a claim is rendered beside existingClaim")
			}
		}},
		{"no preStop sleep", []string{"termination.preStopSleepSeconds=0"}, func(t *testing.T, r *rendered) {
			d, c := container(t, r)
			if c.Lifecycle != nil {
				t.Errorf("lifecycle %+v rendered with preStopSleepSeconds 0", c.Lifecycle)
			}
			if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 31 {
				t.Errorf("terminationGracePeriodSeconds %d, want 25 + 1 + 5", g)
			}
		}},
		{"durations of many units", []string{"config.shutdown_drain=1.5s", "config.shutdown_timeout=1m2.5s", "termination.marginSeconds=0"}, func(t *testing.T, r *rendered) {
			d, _ := container(t, r)
			if g := *d.Spec.Template.Spec.TerminationGracePeriodSeconds; g != 69 {
				t.Errorf("terminationGracePeriodSeconds %d, want ceil(5 + 62.5 + 1) = 69", g)
			}
		}},
		{"no admin token, a ServiceMonitor", []string{"serviceMonitor.enabled=true"}, func(t *testing.T, r *rendered) {
			sm := one[monitoringv1.ServiceMonitor](t, r, "ServiceMonitor")
			if sm.Spec.Endpoints[0].Authorization != nil {
				t.Errorf("the ServiceMonitor sends a token the pods do not have")
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := renderCase(t, withSets(t, map[string]any{}, c.sets...))
			checkObjects(t, r)
			c.check(t, r)
		})
	}
}

func checkObjects(t *testing.T, r *rendered) {
	d, c := container(t, r)
	_, cfg := configFile(t, r)
	pod := labels.Set(d.Spec.Template.Labels)

	seen := map[string]bool{}
	for _, o := range r.objs {
		m := o.typed.(metav1.Object)
		if seen[o.kind+"/"+m.GetName()] {
			t.Errorf("%s: a second %s named %s", o.source, o.kind, m.GetName())
		}
		seen[o.kind+"/"+m.GetName()] = true
		for _, l := range []string{"app.kubernetes.io/name", "app.kubernetes.io/instance", "app.kubernetes.io/version", "helm.sh/chart"} {
			if m.GetLabels()[l] == "" {
				t.Errorf("%s: %s %s has no label %s", o.source, o.kind, m.GetName(), l)
			}
		}
	}

	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil || sel.Empty() || !sel.Matches(pod) {
		t.Errorf("the Deployment's selector %v does not select its own pods %v (%v)", d.Spec.Selector, pod, err)
	}

	// The config's addresses are the container ports, by name.
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	for _, lk := range listenKeys {
		addr := cfg.addr(lk.key)
		got, named := ports[lk.port]
		switch {
		case addr == "" && named:
			t.Errorf("container port %s (%d) is open but config %s is empty: nothing listens there", lk.port, got, lk.key)
		case addr == "" && lk.key == "http_addr":
			t.Errorf("config http_addr is empty")
		case addr != "":
			want, err := addrPort(addr)
			if err != nil {
				t.Errorf("config %s %q: %v", lk.key, addr, err)
			} else if !named || got != want {
				t.Errorf("config %s %q listens on %d; container port %q is %d (named: %v)", lk.key, addr, want, lk.port, got, named)
			}
		}
	}
	if len(ports) != len(c.Ports) {
		t.Errorf("container ports %v: two share a name", c.Ports)
	}

	// The Service targets container ports that exist, and offers each.
	svc := one[corev1.Service](t, r, "Service")
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(pod) || len(svc.Spec.Selector) == 0 {
		t.Errorf("Service %s selects %v, not the pods %v", svc.Name, svc.Spec.Selector, pod)
	}
	targeted := map[string]bool{}
	for _, sp := range svc.Spec.Ports {
		if sp.TargetPort.StrVal == "" {
			t.Errorf("Service port %s targets %v: name the container port instead", sp.Name, sp.TargetPort)
			continue
		}
		if _, ok := ports[sp.TargetPort.StrVal]; !ok {
			t.Errorf("Service port %s targets %q, which no container port is named (%v)", sp.Name, sp.TargetPort.StrVal, slices.Sorted(maps.Keys(ports)))
		}
		targeted[sp.TargetPort.StrVal] = true
	}
	for name := range ports {
		if !targeted[name] {
			t.Errorf("container port %s has no Service port", name)
		}
	}

	// The env reads Secrets and keys that exist, and sets nothing of the config.
	env := podEnv(t, r)
	for name := range env {
		if strings.HasPrefix(name, "IDALLOC_") && !slices.Contains([]string{"IDALLOC_ADMIN_TOKEN", "IDALLOC_DSN", "IDALLOC_LEASE_DSN"}, name) {
			t.Errorf("env %s overrides a key of the config file: the chart derives ports and durations from the file", name)
		}
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e.Name, "IDALLOC_") && e.ValueFrom == nil {
			t.Errorf("env %s is a literal: secrets come from a Secret", e.Name)
		}
	}
	if (cfg.Driver == "mysql" || cfg.Driver == "postgres") != (env["IDALLOC_DSN"] != "") {
		t.Errorf("driver %s, IDALLOC_DSN set: %v", cfg.Driver, env["IDALLOC_DSN"] != "")
	}
	if (cfg.Lease.Driver == "redis" || cfg.Lease.Driver == "etcd") != (env["IDALLOC_LEASE_DSN"] != "") {
		t.Errorf("lease driver %s, IDALLOC_LEASE_DSN set: %v", cfg.Lease.Driver, env["IDALLOC_LEASE_DSN"] != "")
	}

	// Where idalloc writes: SQLite's directory and /tmp, each a volume.
	sc := c.SecurityContext
	if sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem ||
		sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Errorf("container securityContext %+v: want a read-only root filesystem and no privilege escalation", sc)
	}
	if psc := d.Spec.Template.Spec.SecurityContext; psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		t.Errorf("pod securityContext %+v: want runAsNonRoot", psc)
	}
	if _, _, err := volumeAt(d, c, "/tmp/x"); err != nil {
		t.Errorf("/tmp: %v", err)
	}
	if cfg.Driver == "sqlite" {
		v, _ := sqliteFile(t, r, cfg)
		if *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("sqlite: %d replicas, strategy %s; want 1, Recreate", *d.Spec.Replicas, d.Spec.Strategy.Type)
		}
		if pvc := optional[corev1.PersistentVolumeClaim](t, r, "PersistentVolumeClaim"); pvc != nil {
			if v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != pvc.Name {
				t.Errorf("the SQLite volume %s is not the rendered claim %s", v.Name, pvc.Name)
			}
			if pvc.Annotations["helm.sh/resource-policy"] != "keep" {
				t.Errorf("claim %s is deleted with the release: a new install would repeat IDs", pvc.Name)
			}
		}
	} else if *d.Spec.Replicas < 2 {
		t.Logf("%s: %d replica(s)", cfg.Driver, *d.Spec.Replicas)
	}

	// Probes: readiness on /health; the startup probe on gRPC's health
	// where gRPC is on; no liveness unless the values give one.
	rp := c.ReadinessProbe
	if rp == nil || rp.HTTPGet == nil || rp.HTTPGet.Path != "/health" || rp.HTTPGet.Port.StrVal != "http" {
		t.Errorf("readiness probe %+v: want httpGet /health on port http", rp)
	}
	sp := c.StartupProbe
	switch {
	case sp == nil:
		t.Errorf("no startup probe")
	case cfg.addr("grpc_addr") != "":
		if sp.GRPC == nil || sp.GRPC.Port != ports["grpc"] {
			t.Errorf("gRPC is on: startup probe %+v, want grpc on port %d", sp, ports["grpc"])
		}
	case sp.HTTPGet == nil || sp.HTTPGet.Path != "/health":
		t.Errorf("startup probe %+v: want httpGet /health", sp)
	}
	if lp := c.LivenessProbe; lp != nil && lp.HTTPGet != nil && lp.HTTPGet.Path == "/health" {
		t.Errorf("a liveness probe on /health restarts every pod in a database outage")
	}

	// The grace period covers preStop and the whole stop (shutdown_timeout
	// includes the drain), and the watchdog's second.
	drain, err1 := time.ParseDuration(cfg.ShutdownDrain)
	timeout, err2 := time.ParseDuration(cfg.ShutdownTimeout)
	if err1 != nil || err2 != nil {
		t.Fatalf("config shutdown_drain %q, shutdown_timeout %q: %v %v", cfg.ShutdownDrain, cfg.ShutdownTimeout, err1, err2)
	}
	if timeout <= drain {
		t.Errorf("shutdown_timeout %v does not exceed shutdown_drain %v", timeout, drain)
	}
	grace := time.Duration(*d.Spec.Template.Spec.TerminationGracePeriodSeconds) * time.Second
	need := preStopSleep(t, c) + timeout + watchdogSlack
	if grace < need {
		t.Errorf("terminationGracePeriodSeconds %v < preStop %v + shutdown_timeout %v + %v", grace, preStopSleep(t, c), timeout, watchdogSlack)
	}
	t.Logf("grace %v: preStop %v, drain %v, timeout %v", grace, preStopSleep(t, c), drain, timeout)
	if want := fmt.Sprintf("gets %d s (terminationGracePeriodSeconds)", int(grace.Seconds())); !strings.Contains(r.rel.Info.Notes, want) {
		t.Errorf("NOTES.txt does not say %q:\n%s", want, r.rel.Info.Notes)
	}

	if pdb := optional[policyv1.PodDisruptionBudget](t, r, "PodDisruptionBudget"); pdb != nil {
		if s, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector); err != nil || s.Empty() || !s.Matches(pod) {
			t.Errorf("PodDisruptionBudget %s does not select the pods (%v)", pdb.Name, err)
		}
		if pdb.Spec.MinAvailable != nil {
			t.Errorf("PodDisruptionBudget %s has minAvailable: with one replica it would block every node drain", pdb.Name)
		}
	}
	if np := optional[networkingv1.NetworkPolicy](t, r, "NetworkPolicy"); np != nil {
		if s, err := metav1.LabelSelectorAsSelector(&np.Spec.PodSelector); err != nil || s.Empty() || !s.Matches(pod) {
			t.Errorf("NetworkPolicy %s does not select the pods (%v)", np.Name, err)
		}
		open := map[string]bool{}
		for _, rule := range np.Spec.Ingress {
			for _, p := range rule.Ports {
				if p.Port == nil || p.Port.StrVal == "" {
					t.Errorf("NetworkPolicy %s: port %v, want a container port's name", np.Name, p.Port)
					continue
				}
				open[p.Port.StrVal] = true
			}
		}
		if !maps.Equal(open, targeted) {
			t.Errorf("NetworkPolicy %s opens %v, the Service %v", np.Name, open, targeted)
		}
	}
	if sm := optional[monitoringv1.ServiceMonitor](t, r, "ServiceMonitor"); sm != nil {
		checkServiceMonitor(t, r, sm, svc, c)
	}
}

func checkServiceMonitor(t *testing.T, r *rendered, sm *monitoringv1.ServiceMonitor, svc *corev1.Service, c *corev1.Container) {
	t.Helper()
	if s, err := metav1.LabelSelectorAsSelector(&sm.Spec.Selector); err != nil || s.Empty() || !s.Matches(labels.Set(svc.Labels)) {
		t.Errorf("ServiceMonitor %s does not select Service %s (%v)", sm.Name, svc.Name, err)
	}
	var token *corev1.SecretKeySelector
	for _, e := range c.Env {
		if e.Name == "IDALLOC_ADMIN_TOKEN" {
			token = e.ValueFrom.SecretKeyRef
		}
	}
	for _, ep := range sm.Spec.Endpoints {
		if !slices.ContainsFunc(svc.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == ep.Port }) {
			t.Errorf("ServiceMonitor endpoint port %q is no port of Service %s", ep.Port, svc.Name)
		}
		if ep.Path != "/metrics" {
			t.Errorf("ServiceMonitor endpoint path %q, want /metrics", ep.Path)
		}
		var cred *corev1.SecretKeySelector
		if ep.Authorization != nil {
			cred = ep.Authorization.Credentials
		}
		switch {
		case token == nil && cred != nil:
			t.Errorf("ServiceMonitor sends a token from %v, but the pods have no admin token", cred)
		case token != nil && (cred == nil || cred.Name != token.Name || cred.Key != token.Key):
			t.Errorf("ServiceMonitor sends %v, the pods' admin token is %v: /metrics would answer 401", cred, token)
		}
		if cred != nil {
			if _, err := secretValue(t, r, cred); err != nil {
				t.Errorf("ServiceMonitor token: %v", err)
			}
		}
	}
}
