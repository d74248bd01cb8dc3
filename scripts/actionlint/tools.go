//go:build tools

// Package tools pins actionlint, the offline checker of .github/workflows/ that `make lint` runs.
package tools

import (
	_ "github.com/rhysd/actionlint/cmd/actionlint"
)
