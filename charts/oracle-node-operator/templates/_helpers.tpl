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

{{/*
A policy scanner's skips for the operator's Deployment (checkov.io/skipN: <check>=<reason>; docs/security.md, "Policy
scanners"): each only while the value that satisfies its check is unset, so setting it lets the check run and pass.
*/}}
{{- define "ono.scannerSkips" -}}
{{- $skips := list -}}
{{- if not (dig "limits" "cpu" "" .Values.resources) -}}
{{- $skips = append $skips "CKV_K8S_11=no CPU limit by default as throttling delays reconciles and Lease renewals; resources.limits.cpu sets one" -}}
{{- end -}}
{{- if not .Values.image.digest -}}
{{- $skips = append $skips "CKV_K8S_43=the image is the release tag by default; image.digest pins it" -}}
{{- if ne .Values.image.pullPolicy "Always" -}}
{{- $skips = append $skips "CKV_K8S_15=IfNotPresent by default; an image pinned by digest (image.digest) passes this check" -}}
{{- end -}}
{{- end -}}
{{- $skips = append $skips "CKV_K8S_38=the operator works through the Kubernetes API: its pod needs its ServiceAccount token" -}}
{{- if not .Values.networkPolicy.operator.enabled -}}
{{- $skips = append $skips "CKV2_K8S_6=networkPolicy.operator.enabled adds its policy; off by default as the API server address is cluster specific" -}}
{{- end -}}
{{- range $i, $skip := $skips }}
checkov.io/skip{{ add1 $i }}: {{ $skip | quote }}
{{- end -}}
{{- end -}}
