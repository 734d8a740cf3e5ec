// SPDX-License-Identifier: Apache-2.0

package gitops

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	ssautils "github.com/fluxcd/pkg/ssa/utils"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// placeholderNamespace stands in, during validation, for a namespace the same
// revision creates: the API server validates the object there instead.
const placeholderNamespace = "default"

// validate dry-runs every object of a revision with server-side apply before
// anything is written, so a revision the API server rejects applies nothing.
// Objects of kinds that a CRD of the same revision defines cannot be checked
// before that CRD exists; they are checked when applied.
func (a *applier) validate(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	newNS, newKinds := definedBy(objs)
	existsNS := namespaceCache(c)
	var (
		mu   sync.Mutex
		errs []error
	)
	fail := func(err error) {
		mu.Lock()
		errs = append(errs, err)
		mu.Unlock()
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.validateWorkers)
	for _, o := range objs {
		g.Go(func() error {
			gvk := o.GroupVersionKind()
			m, err := c.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
			if meta.IsNoMatchError(err) && newKinds[gvk.GroupKind()] {
				return nil
			}
			if err != nil {
				fail(fmt.Errorf("%s: unknown kind: %w", ssautils.FmtUnstructured(o), err))
				return nil
			}
			dry := o.DeepCopy()
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ns := o.GetNamespace()
				if ns == "" {
					fail(fmt.Errorf("%s: namespace not set", ssautils.FmtUnstructured(o)))
					return nil
				}
				if newNS[ns] && !existsNS(gctx, ns) {
					dry.SetNamespace(placeholderNamespace)
				}
			}
			err = c.Apply(gctx, client.ApplyConfigurationFromUnstructured(dry), client.DryRunAll, client.FieldOwner(FieldManager), client.ForceOwnership)
			if err != nil {
				fail(fmt.Errorf("%s: %w", ssautils.FmtUnstructured(o), err))
			}
			return nil
		})
	}
	_ = g.Wait()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if len(errs) > 0 {
		return syncErr(v1alpha1.GitOpsReasonValidationFailed, "dry-run rejected %d of %d object(s), nothing applied: %w", len(errs), len(objs), joinFirst(errs, 5))
	}
	return nil
}

// definedBy returns the namespaces and custom kinds the objects create.
func definedBy(objs []*unstructured.Unstructured) (map[string]bool, map[schema.GroupKind]bool) {
	ns, kinds := map[string]bool{}, map[schema.GroupKind]bool{}
	for _, o := range objs {
		switch o.GroupVersionKind().GroupKind() {
		case schema.GroupKind{Kind: "Namespace"}:
			ns[o.GetName()] = true
		case schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}:
			group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
			kinds[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	return ns, kinds
}

// namespaceCache answers "does this namespace exist" once per namespace.
func namespaceCache(c client.Client) func(context.Context, string) bool {
	var mu sync.Mutex
	seen := map[string]bool{}
	return func(ctx context.Context, name string) bool {
		mu.Lock()
		defer mu.Unlock()
		if v, ok := seen[name]; ok {
			return v
		}
		err := c.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})
		seen[name] = !apierrors.IsNotFound(err)
		return seen[name]
	}
}
