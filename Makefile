# Shoal – make help lists the targets.
SHELL := /usr/bin/env bash
SHOAL_CACHE ?= $(or $(XDG_CACHE_HOME),$(HOME)/.cache)/shoal
export SHOAL_CACHE
TOOLS := $(SHOAL_CACHE)/tools/bin
export PATH := $(TOOLS):$(PATH)
BIN := bin
GO_TEST_FLAGS ?= -count=1
# Integration suites start API servers; two at a time fits two cores.
TEST_PARALLEL ?= 2

.DEFAULT_GOAL := help

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z0-9_-]+:.*## / {printf "  %-18s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: build
build: ## Build every program under cmd/ into bin/ (static: some run inside images on real nodes).
	CGO_ENABLED=0 go build -o $(BIN)/ ./cmd/...

.PHONY: images
images: ## Build and verify multi-arch (amd64, arm64) OCI images of shoal-hub and shoal-agent into _output/images (no Docker).
	@hack/images.sh

.PHONY: host-deps
host-deps: ## Install the Debian packages real nodes need (runc, CNI plugins), python3 (Python client tests) and chromium (browser test), once.
	@hack/host-deps.sh

.PHONY: tools
tools: ## Install golangci-lint, protoc and the protoc plugins (pinned, cached).
	@hack/tools.sh

.PHONY: lint-tool
lint-tool: ## Install golangci-lint only (the lint-rule tests run it).
	@hack/tools.sh lint

.PHONY: k8s-bin
k8s-bin: ## Build kube-apiserver/scheduler/controller-manager/kubelet v1.37.2, etcd, kwok, containerd and CoreDNS into $(SHOAL_CACHE)/bin (cached).
	@hack/k8s-bin.sh

.PHONY: test
test: k8s-bin host-deps lint-tool ## Run every test: unit, integration and end to end (what CI runs).
	@hack/test.sh $(GO_TEST_FLAGS) -p $(TEST_PARALLEL) ./...

.PHONY: test-unit
test-unit: ## Run the unit tests only (no API servers).
	go test $(GO_TEST_FLAGS) -short ./...

.PHONY: test-integration
test-integration: k8s-bin host-deps ## Run the integration and end-to-end tests under test/.
	@hack/test.sh $(GO_TEST_FLAGS) -p $(TEST_PARALLEL) ./test/...

.PHONY: screenshots
screenshots: k8s-bin host-deps ## Run the web fleet view's browser test on a demo-like fleet and write its pages into docs/images.
	go test $(GO_TEST_FLAGS) -run TestFleetView ./test/e2e/webui -args -screenshots=$(CURDIR)/docs/images

.PHONY: fuzz
fuzz: ## Run every Go fuzz target for FUZZTIME (default 30s) each; fails on a crash.
	@hack/fuzz.sh

.PHONY: generate
generate: tools ## Regenerate the gRPC/protobuf Go code, the API deepcopy functions and the kustomize bases (deploy/hub, deploy/agent) from the Helm charts.
	@hack/generate.sh

.PHONY: verify
verify: tools ## gofmt, golangci-lint (with import-direction rules), go vet, generated code unchanged.
	@hack/verify.sh

.PHONY: demo
demo: k8s-bin host-deps build ## Bring up a local fleet and run the main job end to end.
	@hack/demo.sh

.PHONY: bench
bench: ## Run the decision benchmarks and the fleet simulator; JSON under bench/results/.
	@hack/bench.sh

# Knobs of bench-scale (test/scale FromEnv; defaults: F-XL, 100 clusters x
# 1,000 hgx-h100 nodes x 8 GPUs, 100,000 queued jobs of an hour).
SCALE_CLUSTERS ?= 100
SCALE_NODES ?= 1000
SCALE_JOBS ?= 100000
SCALE_RATE ?= 0
SCALE_HOLD ?= 2m
SCALE_RUN_MIN ?= 1h
SCALE_RUN_MAX ?= 1h
SCALE_PROFILES ?= hgx-h100

.PHONY: bench-scale
bench-scale: k8s-bin ## Run the hub load harness (test/scale, docs/scale.md): real shoal-hub, simulated clusters; JSON under bench/results/.
	SCALE_OUT=$(CURDIR)/bench/results SCALE_CLUSTERS=$(SCALE_CLUSTERS) SCALE_NODES=$(SCALE_NODES) SCALE_JOBS=$(SCALE_JOBS) \
	SCALE_RATE=$(SCALE_RATE) SCALE_HOLD=$(SCALE_HOLD) SCALE_RUN_MIN=$(SCALE_RUN_MIN) SCALE_RUN_MAX=$(SCALE_RUN_MAX) \
	SCALE_PROFILES=$(SCALE_PROFILES) go test ./test/scale -run '^TestBenchScale$$' -count=1 -timeout 0 -v

.PHONY: bench-intake
bench-intake: ## Measure job intake through the real shoal-hub (single, batched and streamed, as the store grows); JSON under bench/results/.
	@hack/bench-intake.sh

.PHONY: clean
clean: ## Stop any local fleet and remove build outputs (keeps the binary cache).
	-@[ -x $(BIN)/shoal ] && $(BIN)/shoal dev down >/dev/null 2>&1 || true
	rm -rf $(BIN) _output bench/results/*.tmp
