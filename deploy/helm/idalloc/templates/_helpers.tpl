{{/*
Names and labels, as `helm create` makes them.
*/}}
{{- define "idalloc.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "idalloc.fullname" -}}
{{- if contains .Chart.Name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}

{{- define "idalloc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "idalloc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "idalloc.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "idalloc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "idalloc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "idalloc.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "idalloc.image" -}}
{{- printf "%s:%s" .Values.image.repository (default (printf "v%s" .Chart.AppVersion) .Values.image.tag) }}
{{- end }}

{{/*
The Secret the env comes from: the user's, or the chart's.
*/}}
{{- define "idalloc.secretName" -}}
{{- default (include "idalloc.fullname" .) .Values.secret.existingSecret }}
{{- end }}

{{- define "idalloc.sqlStore" -}}
{{- if has .Values.config.driver (list "mysql" "postgres") }}true{{ end }}
{{- end }}

{{- define "idalloc.leaseDsnNeeded" -}}
{{- if has .Values.config.lease.driver (list "redis" "etcd") }}true{{ end }}
{{- end }}

{{- define "idalloc.adminTokenEnv" -}}
{{- if .Values.secret.existingSecret }}{{ if .Values.secret.keys.adminToken }}true{{ end }}
{{- else if .Values.secret.adminToken }}true{{ end }}
{{- end }}

{{- define "idalloc.replicas" -}}
{{- if kindIs "invalid" .Values.replicaCount }}
{{- if include "idalloc.sqlStore" . }}2{{ else }}1{{ end }}
{{- else }}
{{- .Values.replicaCount | int }}
{{- end }}
{{- end }}

{{/*
idalloc.port: the port of a listen address (":8880", "0.0.0.0:8880",
"[::]:8880"), given as (list "key" address).
*/}}
{{- define "idalloc.port" -}}
{{- $key := index . 0 }}{{ $addr := index . 1 | toString }}
{{- $port := regexFind "[0-9]+$" $addr }}
{{- if or (not (regexMatch "^(\\[[0-9A-Fa-f:.]*\\]|[^:\\[\\]]*):[0-9]+$" $addr)) (lt ($port | int) 1) (gt ($port | int) 65535) }}
{{- fail (printf "config.%s %q: the chart needs an address with a port from 1 to 65535 (\":8880\"), the container port it opens" $key $addr) }}
{{- end }}
{{- $port }}
{{- end }}

{{/*
idalloc.seconds: a Go duration ("25s", "1m30s", "500ms") in seconds, given
as (list "key" duration). idalloc reads the same strings with Go's
time.ParseDuration; negative ones are not durations it accepts here.
*/}}
{{- define "idalloc.seconds" -}}
{{- $key := index . 0 }}{{ $d := index . 1 | toString }}
{{- $num := "([0-9]+(\\.[0-9]*)?|\\.[0-9]+)" }}
{{- $unit := "(ns|us|µs|μs|ms|s|m|h)" }}
{{- if not (or (eq $d "0") (regexMatch (printf "^(%s%s)+$" $num $unit) $d)) }}
{{- fail (printf "config.%s %q is not a duration: write it as Go does, \"25s\", \"1m30s\", \"500ms\"" $key $d) }}
{{- end }}
{{- $per := dict "ns" 0.000000001 "us" 0.000001 "µs" 0.000001 "μs" 0.000001 "ms" 0.001 "s" 1.0 "m" 60.0 "h" 3600.0 }}
{{- $total := 0.0 }}
{{- range regexFindAll (printf "%s%s" $num $unit) $d -1 }}
{{- $n := regexFind (printf "^%s" $num) . }}
{{- $total = addf $total (mulf ($n | float64) (get $per (trimPrefix $n .))) }}
{{- end }}
{{- $total }}
{{- end }}

{{/*
idalloc.grace: terminationGracePeriodSeconds. After SIGTERM idalloc drains
for shutdown_drain, shuts down and hands back within shutdown_timeout, which
includes the drain, and its watchdog exits 1 s after that at the latest
(frontend/stop.go); preStop runs before the SIGTERM, inside the same period.
*/}}
{{- define "idalloc.grace" -}}
{{- $timeout := include "idalloc.seconds" (list "shutdown_timeout" .Values.config.shutdown_timeout) | float64 }}
{{- $t := .Values.termination }}
{{- addf ($t.preStopSleepSeconds | float64) $timeout 1 ($t.marginSeconds | float64) | ceil | int }}
{{- end }}

{{/*
idalloc.validate: the rules between values that the schema cannot say,
each refused with what to do instead. Included by every template that
depends on them.
*/}}
{{- define "idalloc.validate" -}}
{{- $c := .Values.config }}
{{- $s := .Values.secret }}
{{- $replicas := include "idalloc.replicas" . | int }}
{{- if and (eq $c.driver "sqlite") (gt $replicas 1) }}
{{- fail (printf "replicaCount %d: the sqlite store serves one instance only; for more replicas set config.driver to mysql or postgres, with secret.dsn (ci/mysql-values.yaml)" $replicas) }}
{{- end }}
{{- if hasKey $c "admin_token" }}
{{- fail "config.admin_token: the admin token never goes into the ConfigMap; set secret.adminToken, or a key of secret.existingSecret" }}
{{- end }}
{{- if hasKey $c.lease "dsn" }}
{{- fail "config.lease.dsn: the lease store's DSN comes from the Secret; set secret.leaseDsn, or a key of secret.existingSecret" }}
{{- end }}
{{- if include "idalloc.sqlStore" . }}
{{- if $s.existingSecret }}
{{- if not $s.keys.dsn }}
{{- fail (printf "config.driver %s reads its DSN from secret.existingSecret %q: secret.keys.dsn must name its key" $c.driver $s.existingSecret) }}
{{- end }}
{{- else if not $s.dsn }}
{{- fail (printf "config.driver %s needs a DSN: set secret.dsn (%s), or secret.existingSecret naming a Secret with the key secret.keys.dsn" $c.driver (ternary "user:pass@tcp(host:3306)/idalloc" "postgres://user:pass@host:5432/idalloc" (eq $c.driver "mysql"))) }}
{{- end }}
{{- else }}
{{- if $s.dsn }}
{{- fail "secret.dsn is set but config.driver is sqlite, whose file is config.dsn: set config.driver to mysql or postgres, or leave secret.dsn empty" }}
{{- end }}
{{- if not (isAbs $c.dsn) }}
{{- fail (printf "config.dsn %q: on sqlite the chart needs the file's absolute path; its directory is the data volume (/var/lib/idalloc/idalloc.db)" $c.dsn) }}
{{- end }}
{{- end }}
{{- if include "idalloc.leaseDsnNeeded" . }}
{{- if $s.existingSecret }}
{{- if not $s.keys.leaseDsn }}
{{- fail (printf "config.lease.driver %s reads its DSN from secret.existingSecret %q: secret.keys.leaseDsn must name its key" $c.lease.driver $s.existingSecret) }}
{{- end }}
{{- else if not $s.leaseDsn }}
{{- fail (printf "config.lease.driver %s needs secret.leaseDsn (%s), or secret.existingSecret naming a Secret with the key secret.keys.leaseDsn" $c.lease.driver (ternary "redis://:password@redis:6379/0" "http://etcd-0.etcd:2379,http://etcd-1.etcd:2379" (eq $c.lease.driver "redis"))) }}
{{- end }}
{{- else if $s.leaseDsn }}
{{- fail "secret.leaseDsn is set but config.lease.driver is sql (the main store): set config.lease.driver to redis or etcd, or leave secret.leaseDsn empty" }}
{{- end }}
{{- if and $s.existingSecret (or $s.adminToken $s.dsn $s.leaseDsn) }}
{{- fail (printf "secret.existingSecret %q is where the admin token and the DSNs come from: put them in that Secret, and leave secret.adminToken, secret.dsn and secret.leaseDsn empty" $s.existingSecret) }}
{{- end }}
{{- $drain := include "idalloc.seconds" (list "shutdown_drain" $c.shutdown_drain) | float64 }}
{{- $timeout := include "idalloc.seconds" (list "shutdown_timeout" $c.shutdown_timeout) | float64 }}
{{- if le $timeout $drain }}
{{- fail (printf "config.shutdown_timeout %s must exceed config.shutdown_drain %s: it bounds the whole stop, the drain included" $c.shutdown_timeout $c.shutdown_drain) }}
{{- end }}
{{- $ports := dict }}
{{- range $key := list "http_addr" "resp_addr" "grpc_addr" }}
{{- $addr := get $c $key }}
{{- if or (eq $key "http_addr") $addr }}
{{- $port := include "idalloc.port" (list $key $addr) }}
{{- if hasKey $ports $port }}
{{- fail (printf "config.%s and config.%s both use port %s" (get $ports $port) $key $port) }}
{{- end }}
{{- $_ := set $ports $port $key }}
{{- end }}
{{- end }}
{{- end }}

{{/*
idalloc.env: the container's environment: the secrets as IDALLOC_*
variables (each from the Secret, never a literal), then extraEnv.
*/}}
{{- define "idalloc.env" -}}
{{- if include "idalloc.adminTokenEnv" . }}
- name: IDALLOC_ADMIN_TOKEN
  valueFrom:
    secretKeyRef:
      name: {{ include "idalloc.secretName" . }}
      key: {{ .Values.secret.keys.adminToken }}
{{- end }}
{{- if include "idalloc.sqlStore" . }}
- name: IDALLOC_DSN
  valueFrom:
    secretKeyRef:
      name: {{ include "idalloc.secretName" . }}
      key: {{ .Values.secret.keys.dsn }}
{{- end }}
{{- if include "idalloc.leaseDsnNeeded" . }}
- name: IDALLOC_LEASE_DSN
  valueFrom:
    secretKeyRef:
      name: {{ include "idalloc.secretName" . }}
      key: {{ .Values.secret.keys.leaseDsn }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}
