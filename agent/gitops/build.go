// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/fluxcd/pkg/kustomize"
	ssautils "github.com/fluxcd/pkg/ssa/utils"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/konfig"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// build runs kustomize on path inside the checkout root and returns the
// objects. A directory without a kustomization file gets one generated over
// its YAML files (as Flux does), removed again after the build.
func build(root, path string) ([]*unstructured.Unstructured, error) {
	dir := filepath.Join(root, filepath.Clean("/"+path))
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, syncErr(v1alpha1.GitOpsReasonBuildFailed, "path %q not found in the repository", path)
	}
	if !hasKustomization(dir) {
		gen := kustomize.NewGenerator(root, unstructured.Unstructured{Object: map[string]any{}})
		action, err := gen.WriteFile(dir)
		if err != nil {
			return nil, syncErr(v1alpha1.GitOpsReasonBuildFailed, "generate kustomization for %q: %w", path, err)
		}
		defer func() { _ = kustomize.CleanDirectory(dir, action) }()
	}
	res, err := kustomize.SecureBuild(root, dir, false)
	if err != nil {
		return nil, syncErr(v1alpha1.GitOpsReasonBuildFailed, "kustomize build %q: %w", path, err)
	}
	yml, err := res.AsYaml()
	if err != nil {
		return nil, syncErr(v1alpha1.GitOpsReasonBuildFailed, "kustomize build %q: %w", path, err)
	}
	objs, err := ssautils.ReadObjects(bytes.NewReader(yml))
	if err != nil {
		return nil, syncErr(v1alpha1.GitOpsReasonBuildFailed, "read built objects of %q: %w", path, err)
	}
	return objs, nil
}

func hasKustomization(dir string) bool {
	for _, name := range konfig.RecognizedKustomizationFileNames() {
		if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
			return true
		}
	}
	return false
}

// buildCache keeps the objects of the last build, so a sync whose checkout
// did not change (the usual drift-correction pass) skips kustomize.
type buildCache struct {
	dir, path string
	objs      []*unstructured.Unstructured
}

// build returns deep copies of the cached objects for the same checkout and
// path, or builds them.
func (c *buildCache) build(co *checkout, path string) ([]*unstructured.Unstructured, error) {
	if c.objs == nil || c.dir != co.Dir || c.path != path {
		objs, err := build(co.Dir, path)
		if err != nil {
			return nil, err
		}
		c.dir, c.path, c.objs = co.Dir, path, objs
	}
	out := make([]*unstructured.Unstructured, len(c.objs))
	for i, o := range c.objs {
		out[i] = o.DeepCopy()
	}
	return out, nil
}
