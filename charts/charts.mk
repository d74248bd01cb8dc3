# The Helm chart and the kubectl install manifest rendered from it. The chart's CRD template is written by
# scripts/generate-crd.ts (make generate, checked by check-generated); its README comes from values.schema.json, its
# samples/ are copies of manifests/samples/, and manifests/install.yaml is `helm template` output: check-manifests
# fails CI when any of them is out of sync.
CHART_DIR := charts/oracle-node-operator
HELM := $(CLUSTER_BIN_DIR)/helm
INSTALL_NAMESPACE := oracle-node-system

$(HELM):
	$(MAKE) --no-print-directory cluster-bins

.PHONY: manifests
manifests: $(HELM) ## Write the chart's README and samples/, render manifests/install.yaml from the chart
	@mkdir -p $(CHART_DIR)/samples manifests
	rm -f $(CHART_DIR)/samples/*.yaml && cp manifests/samples/*.yaml $(CHART_DIR)/samples/
	node --import tsx scripts/generate-chart-readme.ts
	bash charts/render-install.sh $(HELM) $(CHART_DIR) $(INSTALL_NAMESPACE) > manifests/install.yaml

.PHONY: check-manifests
check-manifests: $(HELM) ## helm lint, and fail when the chart's README/samples or manifests/install.yaml is out of sync
	$(HELM) lint --strict $(CHART_DIR)
	$(HELM) lint --strict $(CHART_DIR) --set watchNamespaces='{team-a,team-b}' --set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true --set grafana.dashboard.enabled=true --set networkPolicy.operator.enabled=true --set networkPolicy.workloads.enabled=true
	$(HELM) lint --strict $(CHART_DIR) --set crds.enabled=false
	$(HELM) lint --strict $(CHART_DIR) --set webhook.certManager.enabled=true --set webhook.failurePolicy=Ignore
	@diff -r manifests/samples $(CHART_DIR)/samples >/dev/null || \
	  { echo "charts/oracle-node-operator/samples differs from manifests/samples: run make manifests" >&2; exit 1; }
	@node --import tsx scripts/generate-chart-readme.ts --check
	@bash charts/render-install.sh $(HELM) $(CHART_DIR) $(INSTALL_NAMESPACE) | cmp -s - manifests/install.yaml || \
	  { echo "manifests/install.yaml is out of date: run make manifests" >&2; exit 1; }
	@echo "chart and install manifest are in sync"

# The alert rules as Prometheus evaluates them: promtool (built by test/cluster/build.sh prometheus, cached like the
# control plane's binaries) runs the unit tests of test/alerts/ against the chart's rendered PrometheusRule; both go
# into .cache/alerts/, as promtool reads a test's rule_files relative to the test file.
PROMTOOL := $(CLUSTER_BIN_DIR)/promtool
ALERT_RULES := .cache/alerts/oracle-node-operator.rules.yaml

.PHONY: test-alerts
test-alerts: install $(HELM) ## promtool test rules: the chart's alert rules against the cases in test/alerts/
	@$(CLUSTER_DIR)/build.sh prometheus
	@mkdir -p $(dir $(ALERT_RULES))
	$(HELM) template ono $(CHART_DIR) --set metrics.prometheusRule.enabled=true \
	  --show-only templates/prometheusrule.yaml | node --import tsx scripts/prometheus-rules.ts > $(ALERT_RULES)
	$(PROMTOOL) check rules $(ALERT_RULES)
	@cp test/alerts/*.test.yaml $(dir $(ALERT_RULES))
	cd $(dir $(ALERT_RULES)) && $(PROMTOOL) test rules *.test.yaml
