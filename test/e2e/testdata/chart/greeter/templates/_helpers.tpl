{{/* The labels of everything the release makes. */}}
{{- define "greeter.labels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end }}

{{/* The selector labels of one component. */}}
{{- define "greeter.selector" -}}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* The webhooks' cluster-scoped configurations are per release and namespace. */}}
{{- define "greeter.webhookConfigName" -}}
{{ .Release.Name }}-{{ .Release.Namespace }}
{{- end }}
