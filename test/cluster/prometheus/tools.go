//go:build tools

// Package tools pins promtool (the alert rule unit tests, `promtool test rules`) and the Prometheus server (the
// scrape of the operator's /metrics with the chart's ServiceMonitor settings).
package tools

import (
	_ "github.com/prometheus/prometheus/cmd/prometheus"
	_ "github.com/prometheus/prometheus/cmd/promtool"
)
