//go:build tools

// Package tools pins the JobSet controller this module builds (go build sigs.k8s.io/jobset).
package tools

import _ "sigs.k8s.io/jobset"
