// SPDX-License-Identifier: Apache-2.0

package deps

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/podrefs"
)

// copySelector selects the copies the agent made.
var copySelector = labels.SelectorFromSet(labels.Set{v1alpha1.LabelCopy: "true"}).String()

// listed is a local copy found by collect.
type listed struct {
	ref
	obj object
}

// collect deletes the copies that no member references any more, records
// the jobs of the others, and watches exactly the referenced hub objects.
// The copies are listed before the references are read, under the write
// lock, so that a copy created meanwhile is not taken for an orphan.
func (s *Syncer) collect(ctx context.Context) error {
	copies, err := s.listCopies(ctx)
	if err != nil {
		return err
	}
	s.writing.Lock()
	defer s.writing.Unlock()
	wanted, err := s.wanted()
	if err != nil {
		return err
	}
	s.syncWatches(ctx, wanted)
	var errs []error
	for _, c := range copies {
		jobs, ok := wanted[c.ref]
		switch {
		case !ok:
			errs = append(errs, s.remove(ctx, c))
		case c.obj.GetAnnotations()[v1alpha1.AnnotationCopyJobs] != joinJobs(jobs):
			errs = append(errs, s.setJobs(ctx, c, joinJobs(jobs)))
		}
	}
	return errors.Join(errs...)
}

// listCopies lists the local copies in every namespace Shoal manages (the
// only ones the agent may read ConfigMaps and Secrets in).
func (s *Syncer) listCopies(ctx context.Context) ([]listed, error) {
	nss, err := s.local.CoreV1().Namespaces().List(ctx, metav1.ListOptions{LabelSelector: managedSelector})
	if err != nil {
		return nil, fmt.Errorf("list the managed namespaces: %w", err)
	}
	var copies []listed
	for _, ns := range nss.Items {
		for kind, k := range kinds {
			l, err := k.list(ctx, s.local, ns.Name, metav1.ListOptions{LabelSelector: copySelector})
			if err != nil {
				return nil, fmt.Errorf("list local %s copies in %s: %w", kind, ns.Name, err)
			}
			for _, o := range l {
				r := ref{Namespace: o.GetNamespace(), Object: podrefs.Object{Kind: kind, Name: o.GetName()}}
				copies = append(copies, listed{r, o})
			}
		}
	}
	return copies, nil
}

var managedSelector = labels.SelectorFromSet(labels.Set{v1alpha1.LabelManaged: "true"}).String()

// wanted returns every object a claim or a managed local pod references,
// with the jobs that reference it.
func (s *Syncer) wanted() (map[ref]map[string]bool, error) {
	out := map[ref]map[string]bool{}
	add := func(r ref, job string) {
		if out[r] == nil {
			out[r] = map[string]bool{}
		}
		out[r][job] = true
	}
	s.mu.Lock()
	for _, c := range s.claims {
		for _, r := range c.refs {
			add(r, jobOf(c.hub))
		}
	}
	s.mu.Unlock()
	pods, err := s.cache.Pods().List(labels.SelectorFromSet(labels.Set{v1alpha1.LabelManaged: "true"}))
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		refs, _ := refsOf(p)
		for _, r := range refs {
			add(r, jobOf(p))
		}
	}
	return out, nil
}

// remove deletes a copy no member references (only that very object: an
// object recreated under the name since it was listed is kept).
func (s *Syncer) remove(ctx context.Context, c listed) error {
	uid := c.obj.GetUID()
	err := kinds[c.Kind].delete(ctx, s.local, c.Namespace, c.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("delete copy of %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
	}
	klog.FromContext(ctx).V(2).Info("Dependency copy deleted: no member references it", "kind", c.Kind, "object", klog.KRef(c.Namespace, c.Name))
	return nil
}

// setJobs records the jobs that reference a copy.
func (s *Syncer) setJobs(ctx context.Context, c listed, jobs string) error {
	o := c.obj.DeepCopyObject().(object)
	a := o.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[v1alpha1.AnnotationCopyJobs] = jobs
	o.SetAnnotations(a)
	_, err := kinds[c.Kind].update(ctx, s.local, o)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		s.wake() // changed meanwhile: look again
		return nil
	}
	if err != nil {
		return fmt.Errorf("record the jobs of copy %s %s/%s: %w", c.Kind, c.Namespace, c.Name, err)
	}
	return nil
}
