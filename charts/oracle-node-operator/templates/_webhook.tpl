{{- define "ono.webhookSecretName" -}}
{{- printf "%s-webhook-cert" (include "ono.fullname" .) -}}
{{- end -}}

{{- define "ono.webhookConfigurationName" -}}
{{- default (include "ono.fullname" .) .Values.webhook.configurationName -}}
{{- end -}}

{{/*
The operator's webhook flags: they point its ValidatingWebhookConfiguration at the chart's Service. The coordinator
fence is kept with or without the webhook; the chart's webhook ClusterRole owns what either creates.
*/}}
{{- define "ono.webhookArgs" -}}
{{- if .Values.webhook.enabled }}
- --webhook-port={{ .Values.webhook.port }}
- --webhook-service={{ .Release.Namespace }}/{{ include "ono.fullname" . }}-webhook:{{ .Values.webhook.service.port }}
- --webhook-configuration={{ include "ono.webhookConfigurationName" . }}
- --webhook-secret={{ include "ono.webhookSecretName" . }}
- --webhook-certificates={{ if .Values.webhook.certManager.enabled }}external{{ else }}self{{ end }}
- --webhook-failure-policy={{ .Values.webhook.failurePolicy }}
- --webhook-timeout-seconds={{ .Values.webhook.timeoutSeconds }}
{{- end }}
{{- if and .Values.rbac.create (or .Values.webhook.enabled .Values.webhook.coordinatorFence) }}
- --webhook-owner-clusterrole={{ include "ono.fullname" . }}-webhook
{{- end }}
- --coordinator-fence={{ .Values.webhook.coordinatorFence }}
{{- end -}}

{{- define "ono.webhookPort" -}}
{{- if .Values.webhook.enabled -}}
- name: webhook
  containerPort: {{ .Values.webhook.port }}
  protocol: TCP
{{- end -}}
{{- end -}}
