//go:build tools

// Package tools pins the Helm 3 command used by the chart tests.
package tools

import (
	_ "helm.sh/helm/v3/cmd/helm"
)
