//go:build tools

// Package tools pins the kwok controller that simulates the fake Node and its pods.
package tools

import (
	_ "sigs.k8s.io/kwok/cmd/kwok"
)
