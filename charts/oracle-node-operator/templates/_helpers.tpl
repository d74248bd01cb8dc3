{{- define "ono.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "ono.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains (include "ono.name" .) .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name (include "ono.name" .) | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "ono.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ono.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "ono.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{ include "ono.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: operator
{{- end -}}

{{- define "ono.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "ono.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "ono.image" -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* NetworkPolicy pieces shared by the operator's and the workloads' policies. */}}
{{- define "ono.networkPolicy.metricsFrom" -}}
{{- with .Values.networkPolicy.metricsNamespace -}}
from:
  - namespaceSelector:
      matchLabels:
        kubernetes.io/metadata.name: {{ . }}
{{- end -}}
{{- end -}}

{{- define "ono.networkPolicy.dnsEgress" -}}
- to:
    - namespaceSelector: {}
      podSelector:
        matchLabels:
          k8s-app: kube-dns
  ports:
    - port: 53
      protocol: UDP
    - port: 53
      protocol: TCP
{{- end -}}

{{- define "ono.networkPolicy.apiServerEgress" -}}
- ports:
    {{- range .Values.networkPolicy.apiServer.ports }}
    - port: {{ . }}
      protocol: TCP
    {{- end }}
  {{- with .Values.networkPolicy.apiServer.cidrs }}
  to:
    {{- range . }}
    - ipBlock:
        cidr: {{ . }}
    {{- end }}
  {{- end }}
{{- end -}}
