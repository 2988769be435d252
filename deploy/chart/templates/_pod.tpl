{{/* What the scheduler pods of both modes share. */}}

{{/* One replica: the new pod starts (a standby, under leader election) before the old
one stops. More: one per node is required, so a surge pod would find no node on a cluster
of as many nodes; replace them one at a time, the standby taking over meanwhile. */}}
{{- define "kubesalvo.strategy" -}}
type: RollingUpdate
rollingUpdate:
{{- if gt (int .Values.replicas) 1 }}
  maxSurge: 0
  maxUnavailable: 1
{{- else }}
  maxSurge: 1
  maxUnavailable: 0
{{- end }}
{{- end -}}

{{- define "kubesalvo.podPlacement" -}}
serviceAccountName: kubesalvo
priorityClassName: system-cluster-critical
# SIGTERM drains the binds in flight, flushes events and releases the Lease.
terminationGracePeriodSeconds: 30
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile:
    type: RuntimeDefault
affinity:
  podAntiAffinity:
{{- if gt (int .Values.replicas) 1 }}
    requiredDuringSchedulingIgnoredDuringExecution:
    - topologyKey: kubernetes.io/hostname
      labelSelector:
        matchLabels:
          {{- include "kubesalvo.schedulerLabels" . | nindent 10 }}
{{- else }}
    preferredDuringSchedulingIgnoredDuringExecution:
    - weight: 100
      podAffinityTerm:
        topologyKey: kubernetes.io/hostname
        labelSelector:
          matchLabels:
            {{- include "kubesalvo.schedulerLabels" . | nindent 12 }}
{{- end }}
topologySpreadConstraints:
- maxSkew: 1
  topologyKey: topology.kubernetes.io/zone
  whenUnsatisfiable: ScheduleAnyway
  labelSelector:
    matchLabels:
      {{- include "kubesalvo.schedulerLabels" . | nindent 6 }}
tolerations:
# May run on control-plane nodes, as kube-scheduler does.
- key: node-role.kubernetes.io/control-plane
  operator: Exists
  effect: NoSchedule
{{- end -}}

{{- define "kubesalvo.containerSecurity" -}}
runAsNonRoot: true
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
capabilities:
  drop: [ALL]
seccompProfile:
  type: RuntimeDefault
{{- end -}}
