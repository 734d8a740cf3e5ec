{{/* Names are fixed: shoal-hub's code and the agents' credentials name them. */}}
{{- define "shoal-hub.checks" -}}
{{- if ne .Release.Namespace "shoal-system" -}}
{{- fail "shoal-hub installs into namespace shoal-system only: the hub keeps the agents' ServiceAccounts there (hub/hubcluster)" -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (empty .Values.etcd.endpoints) -}}
{{- fail "replicas > 1 needs external etcd: set etcd.endpoints" -}}
{{- end -}}
{{- $key := .Values.pki.encryptionKey -}}
{{- if and $key.existingSecret $key.value -}}
{{- fail "pki.encryptionKey: set existingSecret or value, not both" -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not (include "shoal-hub.pkiKeySecret" .)) -}}
{{- fail "replicas > 1 needs the key that seals the shared hub CA: set pki.encryptionKey.existingSecret (a Secret holding a base64 32-byte key) or pki.encryptionKey.value (docs/high-availability.md)" -}}
{{- end -}}
{{- if and (include "shoal-hub.pkiKeySecret" .) (empty .Values.etcd.endpoints) -}}
{{- fail "pki.encryptionKey shares the hub CA through an external etcd: set etcd.endpoints" -}}
{{- end -}}
{{- if and .Values.tracing.insecure .Values.tracing.caSecretName -}}
{{- fail "tracing.insecure and tracing.caSecretName exclude each other" -}}
{{- end -}}
{{- if and (empty .Values.tracing.endpoint) (or .Values.tracing.insecure .Values.tracing.caSecretName) -}}
{{- fail "tracing.insecure and tracing.caSecretName need tracing.endpoint" -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding the PKI encryption key ("": none). */}}
{{- define "shoal-hub.pkiKeySecret" -}}
{{- if .Values.pki.encryptionKey.existingSecret -}}
{{ .Values.pki.encryptionKey.existingSecret }}
{{- else if .Values.pki.encryptionKey.value -}}
shoal-hub-pki-key
{{- end -}}
{{- end -}}

{{/* The Service's DNS name (--service-name). */}}
{{- define "shoal-hub.serviceName" -}}
{{- printf "shoal-hub.%s.svc" .Release.Namespace -}}
{{- end -}}

{{/* Every replica's stable DNS name through the headless Service (--peers). */}}
{{- define "shoal-hub.peers" -}}
{{- $peers := list -}}
{{- range $i := until (int .Values.replicas) -}}
{{- $peers = append $peers (printf "shoal-hub-%d.shoal-hub-peers.%s.svc:%d" $i $.Release.Namespace (int $.Values.ports.grpc)) -}}
{{- end -}}
{{- join "," $peers -}}
{{- end -}}

{{- define "shoal-hub.labels" -}}
app.kubernetes.io/name: shoal-hub
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: shoal
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
{{- end -}}

{{- define "shoal-hub.selector" -}}
app.kubernetes.io/name: shoal-hub
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "shoal-hub.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{- define "shoal-hub.advertiseAddress" -}}
{{- .Values.advertiseAddress | default (printf "%s:%d" (include "shoal-hub.serviceName" .) (int .Values.ports.grpc)) -}}
{{- end -}}
