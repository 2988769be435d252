//go:build tools

// Package metricsserver only pins the upstream command that the metrics-server build
// compiles; nothing here is kubesalvo code.
package metricsserver

import (
	_ "sigs.k8s.io/metrics-server/cmd/metrics-server"
)
