// SPDX-License-Identifier: Apache-2.0

// Package charts renders and lints Shoal's Helm charts (deploy/charts) with
// the Helm library, without a helm binary: make generate writes the
// kustomize bases deploy/hub and deploy/agent from them (hack/chartgen), and
// test/integration/deploy installs what they render and runs the binaries
// with exactly the flags, environment and rights they give.
package charts
