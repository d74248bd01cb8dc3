# Test control plane: etcd + kube-apiserver + kube-controller-manager + kube-scheduler + kwok on 127.0.0.1,
# built from the Go modules pinned under test/cluster/ (see docs/development.md).
# Included by the top-level Makefile, which defines SHELL, BIN and the install target.

CLUSTER_DIR := $(CURDIR)/test/cluster
CLUSTER_BIN_DIR ?= $(CURDIR)/.cache/cluster/bin
CLUSTER_RUN_DIR ?= $(CURDIR)/.cache/cluster/run
export CLUSTER_BIN_DIR CLUSTER_RUN_DIR

# Set USE_EXISTING_CLUSTER=1 to run test-integration against the cluster KUBECONFIG points at
# (kind, k3d, a real one, or one started with `make cluster-up`) without starting or stopping anything.
USE_EXISTING_CLUSTER ?=
INTEGRATION_SPEC ?= test/integration/**/*.test.ts
# The whole tier runs as two mocha processes side by side (test/cluster/integration.sh); INTEGRATION_SERIAL=1 runs one.

.PHONY: cluster-bins
cluster-bins: ## Build kube-apiserver, kcm, scheduler, kubectl, etcd, kwok, helm into .cache/cluster/bin (skips up-to-date ones)
	@$(CLUSTER_DIR)/build.sh all

# NODE=real: a real node (containerd + runc + kubelet) in place of kwok's fake one, in its own run dir
# (.cache/cluster/real); see test/cluster/real-node.sh and docs/real-pods.md.
NODE ?= kwok
CLUSTER_SH = $(if $(filter real,$(NODE)),$(CLUSTER_DIR)/real-node.sh,$(CLUSTER_DIR)/cluster.sh)

.PHONY: cluster-up
cluster-up: cluster-bins ## Start (or reuse) the test control plane on 127.0.0.1 and print `export KUBECONFIG=...` (NODE=real: a real node)
	@$(CLUSTER_SH) up

.PHONY: cluster-down
cluster-down: ## Stop the test control plane's recorded processes and remove its state (NODE=real: the real-node one)
	@$(CLUSTER_SH) down

.PHONY: cluster-status
cluster-status: ## Show whether each test control plane process is running
	@$(CLUSTER_SH) status

.PHONY: test-integration
test-integration: install ## Integration tests: cluster-up, mocha on test/integration, cluster-down (USE_EXISTING_CLUSTER=1 to reuse KUBECONFIG's)
	@if [ -n "$(USE_EXISTING_CLUSTER)" ]; then \
	  [ -n "$${KUBECONFIG:-}" ] || { echo "USE_EXISTING_CLUSTER=1 needs KUBECONFIG" >&2; exit 1; }; \
	  echo "integration: using the existing cluster of KUBECONFIG=$$KUBECONFIG"; \
	  exec $(CLUSTER_DIR)/integration.sh $(BIN)/mocha '$(INTEGRATION_SPEC)'; \
	fi; \
	if $(CLUSTER_DIR)/cluster.sh status >/dev/null 2>&1; then \
	  echo "integration: reusing the test control plane that is already running (left running afterwards)"; \
	  export KUBECONFIG=$(CLUSTER_RUN_DIR)/admin.kubeconfig CLUSTER_RESTRICTED_KUBECONFIG=$(CLUSTER_RUN_DIR)/restricted.kubeconfig; \
	  exec $(CLUSTER_DIR)/integration.sh $(BIN)/mocha '$(INTEGRATION_SPEC)'; \
	fi; \
	$(CLUSTER_DIR)/build.sh k8s etcd kwok; \
	trap '$(CLUSTER_DIR)/cluster.sh down' EXIT; trap 'exit 130' INT TERM; \
	$(CLUSTER_DIR)/cluster.sh up; \
	export KUBECONFIG=$(CLUSTER_RUN_DIR)/admin.kubeconfig CLUSTER_RESTRICTED_KUBECONFIG=$(CLUSTER_RUN_DIR)/restricted.kubeconfig; \
	rc=0; INTEGRATION_BUILD='$(CLUSTER_DIR)/build.sh all prometheus' \
	  $(CLUSTER_DIR)/integration.sh $(BIN)/mocha '$(INTEGRATION_SPEC)' || rc=$$?; \
	exit $$rc
