{{/* Names, labels and the pod spec shared by the three roles. */}}

{{- define "svc.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Release-qualified name; role suffixes (-api, -dispatcher) must still fit in 63. */}}
{{- define "svc.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 50 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 50 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "svc.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "svc.selectorLabels" -}}
app.kubernetes.io/name: {{ include "svc.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "svc.labels" -}}
helm.sh/chart: {{ include "svc.chart" . }}
{{ include "svc.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels of one role; call with (dict "root" $ "role" "api"). */}}
{{- define "svc.roleLabels" -}}
{{ include "svc.labels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "svc.roleSelectorLabels" -}}
{{ include "svc.selectorLabels" .root }}
app.kubernetes.io/component: {{ .role }}
{{- end }}

{{- define "svc.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "svc.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding SVC_AMQP_URL and SVC_REDIS_URL: an existing one or the chart's. */}}
{{- define "svc.secretName" -}}
{{- if .Values.secrets.existingSecret }}
{{- .Values.secrets.existingSecret }}
{{- else }}
{{- printf "%s-secrets" (include "svc.fullname" .) }}
{{- end }}
{{- end }}

{{/* The Secret and key holding SVC_DATABASE_URL: an existing one or the chart's. */}}
{{- define "svc.databaseSecretName" -}}
{{- if .Values.database.existingSecret }}
{{- .Values.database.existingSecret }}
{{- else }}
{{- printf "%s-database" (include "svc.fullname" .) }}
{{- end }}
{{- end }}

{{- define "svc.databaseSecretKey" -}}
{{- if .Values.database.existingSecret }}
{{- .Values.database.existingSecretKey | default "url" }}
{{- else }}
{{- "url" }}
{{- end }}
{{- end }}

{{/* The Secret and key holding SVC_SECRET_KEY: an existing one or the chart's. */}}
{{- define "svc.secretKeySecretName" -}}
{{- if .Values.secretKey.existingSecret }}
{{- .Values.secretKey.existingSecret }}
{{- else }}
{{- printf "%s-secret-key" (include "svc.fullname" .) }}
{{- end }}
{{- end }}

{{- define "svc.secretKeySecretKey" -}}
{{- if .Values.secretKey.existingSecret }}
{{- .Values.secretKey.existingSecretKey | default "secret-key" }}
{{- else }}
{{- "secret-key" }}
{{- end }}
{{- end }}

{{/* SVC_SECRET_KEY of the chart's own key Secret: secretKey.value when given, else the key that
Secret already holds in the cluster (so upgrades and reinstalls keep it), else a new random
KEYID:KEY on the first install. The chart never ships a key: keys published with its earlier
versions or with deploy/compose.yaml fail the render as the first, encrypting key (still
accepted after a new first key, to decrypt what they encrypted until `svc secrets
reencrypt`). */}}
{{- define "svc.secretKey" -}}
{{- $key := .Values.secretKey.value | default "" | toString | trim }}
{{- if not $key }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "svc.secretKeySecretName" .) }}
{{- if and $existing (hasKey $existing "data") }}
{{- $key = index $existing.data "secret-key" | default "" | b64dec }}
{{- end }}
{{- end }}
{{- if not $key }}
{{- $key = printf "k%s:%s" (now | date "20060102150405") (randBytes 32 | replace "+" "-" | replace "/" "_" | trimSuffix "=") }}
{{- end }}
{{- $first := splitList "," $key | first | trim | splitList ":" | last | trimSuffix "=" }}
{{- if has $first (list "IGIECoN6M8Bhf8Y0I3zQQW3rnp0G2RxWiOrjlHrCrYI" "b123JFXBcdN3N-Qy32DWLfIlMSxF-I6IqJFSfSVM68s") }}
{{- fail "SVC_SECRET_KEY's first key is a published development key: anyone can read the signing secrets it encrypts. Put a new key first in secretKey.value, in a values file (KEYID:KEY items hold commas), and keep the old one after it until `svc secrets reencrypt` has run: helm/svc/README.md, Rotating the secret key" }}
{{- end }}
{{- $key }}
{{- end }}

{{/* True (non-empty) when the chart itself makes the Secret of the database URL or the key. */}}
{{- define "svc.chartMakesHookSecrets" -}}
{{- if or (not .Values.database.existingSecret) (not .Values.secretKey.existingSecret) }}true{{ end }}
{{- end }}

{{/* SVC_DATABASE_URL and SVC_SECRET_KEY of every container, straight from their Secrets, and
the SMTP password and the egress proxy's URL when they come from Secrets. */}}
{{- define "svc.secretEnv" -}}
- name: SVC_DATABASE_URL
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.databaseSecretName" . }}
      key: {{ include "svc.databaseSecretKey" . }}
- name: SVC_SECRET_KEY
  valueFrom:
    secretKeyRef:
      name: {{ include "svc.secretKeySecretName" . }}
      key: {{ include "svc.secretKeySecretKey" . }}
{{- if .Values.smtpPassword.existingSecret }}
- name: SVC_SMTP_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ .Values.smtpPassword.existingSecret }}
      key: {{ .Values.smtpPassword.existingSecretKey }}
{{- end }}
{{- if .Values.egressProxy.existingSecret }}
- name: SVC_EGRESS_PROXY
  valueFrom:
    secretKeyRef:
      name: {{ .Values.egressProxy.existingSecret }}
      key: {{ .Values.egressProxy.existingSecretKey }}
{{- end }}
{{- end }}

{{/* The account of the migration Job. The chart's own ServiceAccount is an ordinary resource:
on a first install it is created only after the pre-install hooks have run, so the Job cannot
use it then and runs as the namespace's "default" account (no token is mounted either way). */}}
{{- define "svc.migrationServiceAccountName" -}}
{{- if .Values.migration.serviceAccountName }}
{{- .Values.migration.serviceAccountName }}
{{- else if .Values.serviceAccount.create }}
{{- "default" }}
{{- else }}
{{- include "svc.serviceAccountName" . }}
{{- end }}
{{- end }}

{{- define "svc.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- end }}

{{/* The RabbitMQ queue the dispatchers consume, as SVC_NAMESPACE names it. */}}
{{- define "svc.fanoutQueue" -}}
{{- printf "%s.fanout" (.Values.config.namespace | toString) }}
{{- end }}

{{- define "svc.deliveriesQueue" -}}
{{- printf "%s.deliveries" (.Values.config.namespace | toString) }}
{{- end }}
