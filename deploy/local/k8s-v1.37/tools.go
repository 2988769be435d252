//go:build tools

// Package controlplane only pins the upstream commands that `kubesalvo cluster build`
// compiles; nothing here is kubesalvo code.
package controlplane137

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
