//go:build tools

// Package tools pins the etcd server this module builds (go build go.etcd.io/etcd/server/v3).
package tools

import _ "go.etcd.io/etcd/server/v3"
