# make soak: the controller runtime's bounded soak (default 10 minutes) against the test control plane. Not part
# of `make test` or CI. SOAK_DURATION_MS, SOAK_WIDGETS and SOAK_EDIT_INTERVAL_MS tune it.
SOAK_DURATION_MS ?= 600000

.PHONY: soak
soak: install cluster-up ## Bounded soak of the controller runtime (10 min of edits; zero missed events, flat heap)
	KUBECONFIG=$${KUBECONFIG:-$(CLUSTER_RUN_DIR)/admin.kubeconfig} SOAK_DURATION_MS=$(SOAK_DURATION_MS) \
	  $(BIN)/mocha --timeout 0 test/soak/soak.test.ts
