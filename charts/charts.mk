# The Helm chart and the kubectl install manifest rendered from it. The chart's CRD is a copy of crds/ and
# manifests/install.yaml is `helm template` output; check-manifests fails CI when either is out of sync.
CHART_DIR := charts/oracle-node-operator
HELM := $(CLUSTER_BIN_DIR)/helm
INSTALL_NAMESPACE := oracle-node-system

$(HELM):
	$(MAKE) --no-print-directory cluster-bins

.PHONY: manifests
manifests: $(HELM) ## Copy the CRD into the chart and render manifests/install.yaml from it
	@mkdir -p $(CHART_DIR)/crds manifests
	cp crds/oracle-node.io_oraclenodes.yaml $(CHART_DIR)/crds/
	bash charts/render-install.sh $(HELM) $(CHART_DIR) $(INSTALL_NAMESPACE) > manifests/install.yaml

.PHONY: check-manifests
check-manifests: $(HELM) ## helm lint, and fail when the chart's CRD or manifests/install.yaml is out of sync
	$(HELM) lint --strict $(CHART_DIR)
	$(HELM) lint --strict $(CHART_DIR) --set watchNamespaces='{team-a,team-b}' --set metrics.serviceMonitor.enabled=true --set metrics.prometheusRule.enabled=true --set grafana.dashboard.enabled=true
	$(HELM) lint --strict $(CHART_DIR) --set webhook.certManager.enabled=true --set webhook.failurePolicy=Ignore
	@cmp -s crds/oracle-node.io_oraclenodes.yaml $(CHART_DIR)/crds/oracle-node.io_oraclenodes.yaml || \
	  { echo "charts/oracle-node-operator/crds differs from crds/: run make manifests" >&2; exit 1; }
	@bash charts/render-install.sh $(HELM) $(CHART_DIR) $(INSTALL_NAMESPACE) | cmp -s - manifests/install.yaml || \
	  { echo "manifests/install.yaml is out of date: run make manifests" >&2; exit 1; }
	@echo "chart and install manifest are in sync"
