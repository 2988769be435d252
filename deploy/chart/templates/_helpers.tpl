{{/* The namespace of every namespaced object. */}}
{{- define "kubesalvo.namespace" -}}
{{- .Values.namespace.name | default .Release.Namespace -}}
{{- end -}}

{{/* The label every object carries (as deploy/base's kustomization adds it). */}}
{{- define "kubesalvo.partOf" -}}
app.kubernetes.io/part-of: kubesalvo
{{- end -}}

{{/* The scheduler pods' labels (selectors of the Service, PDB, NetworkPolicy). */}}
{{- define "kubesalvo.schedulerLabels" -}}
app.kubernetes.io/name: kubesalvo
app.kubernetes.io/component: scheduler
{{- end -}}

{{- define "kubesalvo.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Refuses values that cannot work together, at render time. */}}
{{- define "kubesalvo.validate" -}}
{{- if not (has .Values.mode (list "scheduler" "extender")) -}}
{{- fail (printf "mode must be \"scheduler\" or \"extender\", not %q" .Values.mode) -}}
{{- end -}}
{{- if lt (int .Values.replicas) 1 -}}
{{- fail "replicas must be at least 1" -}}
{{- end -}}
{{- if and (gt (int .Values.replicas) 1) (not .Values.leaderElection.enabled) -}}
{{- fail "replicas > 1 needs leaderElection.enabled: two schedulers would bind the same pods" -}}
{{- end -}}
{{- end -}}

{{/* The profiles: the given ones (schedulerName filled in where missing), else one. */}}
{{- define "kubesalvo.profiles" -}}
{{- $profiles := list -}}
{{- range .Values.profiles -}}
{{- $profiles = append $profiles (merge (deepCopy .) (dict "schedulerName" $.Values.schedulerName)) -}}
{{- end -}}
{{- if not $profiles -}}
{{- $profiles = list (dict "schedulerName" .Values.schedulerName) -}}
{{- end -}}
{{- toYaml $profiles -}}
{{- end -}}

{{- define "kubesalvo.leaderElection" -}}
{{- if .Values.leaderElection.enabled -}}
leaderElect: true
resourceLock: leases
resourceName: {{ .Values.leaderElection.leaseName }}
resourceNamespace: {{ include "kubesalvo.namespace" . }}
{{- else -}}
leaderElect: false
{{- end -}}
{{- end -}}

{{/* The KubeSchedulerConfiguration `kubesalvo run` reads (scheduler mode). */}}
{{- define "kubesalvo.schedulerConfig" -}}
{{- $config := dict
  "apiVersion" "kubescheduler.config.k8s.io/v1"
  "kind" "KubeSchedulerConfiguration"
  "clientConnection" (dict "kubeconfig" "" "qps" .Values.clientConnection.qps "burst" .Values.clientConnection.burst)
  "leaderElection" (include "kubesalvo.leaderElection" . | fromYaml)
  "profiles" (include "kubesalvo.profiles" . | fromYamlArray) -}}
{{- toYaml (merge $config (deepCopy .Values.extraConfig)) -}}
{{- end -}}

{{/* kube-scheduler's configuration in extender mode: it calls the extender on loopback. */}}
{{- define "kubesalvo.kubeSchedulerConfig" -}}
{{- $extender := dict
  "urlPrefix" (printf "http://127.0.0.1:%d" (int .Values.extender.port))
  "filterVerb" "filter" "prioritizeVerb" "prioritize" "preemptVerb" "preempt" "bindVerb" "bind"
  "weight" 1 "nodeCacheCapable" true "enableHTTPS" false "httpTimeout" "5s" "ignorable" false -}}
{{- $config := dict
  "apiVersion" "kubescheduler.config.k8s.io/v1"
  "kind" "KubeSchedulerConfiguration"
  "clientConnection" (dict "kubeconfig" "")
  "leaderElection" (include "kubesalvo.leaderElection" . | fromYaml)
  "profiles" (include "kubesalvo.profiles" . | fromYamlArray)
  "extenders" (list $extender) -}}
{{- toYaml (merge $config (deepCopy .Values.extraConfig)) -}}
{{- end -}}

{{/* A ConfigMap's name with a hash of its data, as kustomize's configMapGenerator names
it: changed contents give a new name, which rolls the pods that mount it. */}}
{{- define "kubesalvo.hashedName" -}}
{{ .name }}-{{ .data | sha256sum | trunc 10 }}
{{- end -}}
