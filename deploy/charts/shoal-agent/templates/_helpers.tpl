{{/* Names are fixed: the admission policy, the agent's own RoleBindings and docs name them. */}}
{{- define "shoal-agent.labels" -}}
app.kubernetes.io/name: shoal-agent
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: shoal
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
{{- end -}}

{{- define "shoal-agent.selector" -}}
app.kubernetes.io/name: shoal-agent
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "shoal-agent.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}
{{- end -}}

{{/* The agent's user name in the workload cluster, which the policy matches. */}}
{{- define "shoal-agent.username" -}}
system:serviceaccount:{{ .Release.Namespace }}:shoal-agent
{{- end -}}

{{- define "shoal-agent.joinSecret" -}}
{{- .Values.join.existingSecret | default "shoal-agent-join" -}}
{{- end -}}
