// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/podrefs"
)

// copyCache caches the objects jobs reference in the users' namespace
// (sources) and the hub's copies of them in the cluster namespaces
// (docs/dependencies.md): each agent reads the copies of its own cluster's
// namespace only, never the users' namespace.
type copyCache struct {
	hub     kubernetes.Interface
	source  string
	sources informers.SharedInformerFactory
	copies  informers.SharedInformerFactory
	kinds   map[podrefs.Kind]copyKind
	synced  func() bool
}

// copySelector selects the hub's copies.
var copySelector = labels.SelectorFromSet(labels.Set{v1alpha1.LabelCopy: "true",
	v1alpha1.ManagedByLabel: v1alpha1.ManagedByHub}).String()

func newCopyCache(hub kubernetes.Interface, source string) *copyCache {
	src := informers.NewSharedInformerFactoryWithOptions(hub, 0, informers.WithNamespace(source))
	cps := informers.NewSharedInformerFactoryWithOptions(hub, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = copySelector }))
	c := &copyCache{hub: hub, source: source, sources: src, copies: cps, kinds: copyKinds(hub, source, src, cps)}
	var syncs []cache.InformerSynced
	for _, f := range []informers.SharedInformerFactory{src, cps} {
		syncs = append(syncs, f.Core().V1().ConfigMaps().Informer().HasSynced,
			f.Core().V1().Secrets().Informer().HasSynced, f.Core().V1().ServiceAccounts().Informer().HasSynced)
	}
	c.synced = func() bool {
		for _, s := range syncs {
			if !s() {
				return false
			}
		}
		return true
	}
	return c
}

func (c *copyCache) start(ctx context.Context) {
	c.sources.Start(ctx.Done())
	c.copies.Start(ctx.Done())
}

// jobRefs are the distinct objects the templates of r's members reference.
func jobRefs(s *scope) []podrefs.Object {
	var refs []podrefs.Ref
	seen := map[*corev1.PodTemplateSpec]bool{}
	for _, m := range s.res.Members {
		t := memberTemplate(s.job.Object, m)
		if seen[t] {
			continue
		}
		seen[t] = true
		refs = append(refs, podrefs.References(&t.Spec, field.NewPath("spec"))...)
	}
	objs, _ := podrefs.Objects(refs)
	return objs
}

// syncCopies keeps, in the namespace of every cluster that holds a member
// of the job, a copy of each object its templates reference, written from
// the users' namespace: created, updated when the source changed, the job
// added to its jobs, deleted when the source is gone (the agents then keep
// their local copies for running members and refuse new ones). A
// service-account token Secret is never copied.
func (d *Dispatcher) syncCopies(ctx context.Context, s *scope) error {
	objs := jobRefs(s)
	if len(objs) == 0 {
		return nil
	}
	cc := d.pods.copies
	var errs []error
	for _, ns := range clusterNamespaces(s.res) {
		for _, o := range objs {
			if err := cc.kinds[o.Kind].sync(ctx, cc.source, ns, o.Name, s.name); err != nil {
				errs = append(errs, fmt.Errorf("copy of %s %q in %s: %w", o.Kind, o.Name, ns, err))
			}
		}
	}
	return errors.Join(errs...)
}

// sweepCopies deletes the copies none of whose jobs is live (has a
// reservation or a member pod) and drops the jobs that ended from the
// others.
func (d *Dispatcher) sweepCopies(ctx context.Context, live func(job string) bool) error {
	var errs []error
	cc := d.pods.copies
	for _, k := range cc.kinds {
		objs, err := k.list()
		if err != nil {
			return err
		}
		for _, o := range objs {
			if !cc.isCopy(o) {
				continue
			}
			jobs := splitJobs(o.GetAnnotations()[v1alpha1.AnnotationCopyJobs])
			keep := slices.DeleteFunc(slices.Clone(jobs), func(j string) bool { return !live(j) })
			switch {
			case len(keep) == 0:
				errs = append(errs, k.remove(ctx, o))
			case len(keep) < len(jobs):
				errs = append(errs, k.setJobs(ctx, o, keep))
			}
		}
	}
	return errors.Join(errs...)
}

// isCopy says whether o is one of the hub's copies: labelled so, and not in
// the users' namespace (the originals are never deleted or rewritten, even
// by a cache that did not filter by label).
func (c *copyCache) isCopy(o metav1.Object) bool {
	return o.GetNamespace() != c.source && v1alpha1.IsClusterNamespace(o.GetNamespace()) && isCopyLabelled(o)
}

// isCopyLabelled says whether o carries the labels of a hub copy.
func isCopyLabelled(o metav1.Object) bool {
	l := o.GetLabels()
	return l[v1alpha1.LabelCopy] == "true" && l[v1alpha1.ManagedByLabel] == v1alpha1.ManagedByHub
}

// splitJobs parses an AnnotationCopyJobs value.
func splitJobs(v string) []string {
	if v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// joinJobs is the AnnotationCopyJobs value of jobs (sorted, distinct).
func joinJobs(jobs []string) string {
	out := slices.Clone(jobs)
	sort.Strings(out)
	return strings.Join(slices.Compact(out), ",")
}

// stampCopy names and labels the copy of src in namespace ns for jobs.
func stampCopy(cp, src metav1.Object, ns string, jobs []string) {
	cp.SetName(src.GetName())
	cp.SetNamespace(ns)
	cp.SetLabels(map[string]string{v1alpha1.LabelCopy: "true", v1alpha1.ManagedByLabel: v1alpha1.ManagedByHub})
	cp.SetAnnotations(map[string]string{
		v1alpha1.AnnotationSourceUID:     string(src.GetUID()),
		v1alpha1.AnnotationSourceVersion: src.GetResourceVersion(),
		v1alpha1.AnnotationCopyJobs:      joinJobs(jobs),
	})
}

// copyKind is what syncCopies needs of one kind.
type copyKind struct {
	// source and copyIn read the cache; NotFound when absent.
	source func(name string) (metav1.Object, error)
	copyIn func(ns, name string) (metav1.Object, error)
	list   func() ([]metav1.Object, error)
	// build is the copy of src (content only).
	build          func(src metav1.Object) metav1.Object
	create, update func(ctx context.Context, o metav1.Object) error
	del            func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error
	// refuse says why src is never copied ("" when it may be).
	refuse func(src metav1.Object) string
}

// sync makes the copy of source/name in ns current and lists job on it.
func (k copyKind) sync(ctx context.Context, source, ns, name, job string) error {
	src, err := k.source(name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	cur, cerr := k.copyIn(ns, name)
	if cerr != nil && !apierrors.IsNotFound(cerr) {
		return cerr
	}
	if cur != nil && !isCopyLabelled(cur) {
		return fmt.Errorf("%s/%s exists and is not the hub's copy", ns, name)
	}
	if err != nil || k.refuse(src) != "" { // gone, or never carried: no copy
		if src != nil {
			klog.FromContext(ctx).V(2).Info("Dependency not copied", "object", klog.KRef(source, name), "reason", k.refuse(src))
		}
		if cur != nil {
			return k.remove(ctx, cur)
		}
		return nil
	}
	var jobs []string
	if cur != nil {
		jobs = splitJobs(cur.GetAnnotations()[v1alpha1.AnnotationCopyJobs])
		a := cur.GetAnnotations()
		if slices.Contains(jobs, job) && a[v1alpha1.AnnotationSourceUID] == string(src.GetUID()) &&
			a[v1alpha1.AnnotationSourceVersion] == src.GetResourceVersion() {
			return nil
		}
	}
	want := k.build(src)
	stampCopy(want, src, ns, append(jobs, job))
	if cur == nil {
		err := k.create(ctx, want)
		if apierrors.IsAlreadyExists(err) {
			return nil // the cache had not seen it yet: compared next pass
		}
		return err
	}
	want.SetResourceVersion(cur.GetResourceVersion())
	err = k.update(ctx, want)
	switch {
	case apierrors.IsConflict(err) || isNotFound(err):
		return nil // the next pass reads the newer one
	case apierrors.IsInvalid(err): // immutable, or a Secret whose type changed
		if err := k.remove(ctx, cur); err != nil {
			return err
		}
		want.SetResourceVersion("")
		return k.create(ctx, want)
	}
	return err
}

// remove deletes the copy o (only that very object).
func (k copyKind) remove(ctx context.Context, o metav1.Object) error {
	uid := o.GetUID()
	err := k.del(ctx, o.GetNamespace(), o.GetName(), metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid}})
	if err != nil && !isNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete copy %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// setJobs rewrites the jobs of copy o.
func (k copyKind) setJobs(ctx context.Context, o metav1.Object, jobs []string) error {
	src, err := k.source(o.GetName())
	if err != nil {
		if isNotFound(err) {
			return k.remove(ctx, o)
		}
		return err
	}
	want := k.build(src)
	stampCopy(want, src, o.GetNamespace(), jobs)
	want.SetResourceVersion(o.GetResourceVersion())
	if err := k.update(ctx, want); err != nil && !apierrors.IsConflict(err) && !isNotFound(err) {
		return fmt.Errorf("update copy %s/%s: %w", o.GetNamespace(), o.GetName(), err)
	}
	return nil
}

// hubFieldManager owns the copies' fields.
const hubFieldManager = "shoal-hub"

func copyKinds(hub kubernetes.Interface, source string, src, cps informers.SharedInformerFactory) map[podrefs.Kind]copyKind {
	core := hub.CoreV1()
	cm, scm := cps.Core().V1().ConfigMaps().Lister(), src.Core().V1().ConfigMaps().Lister()
	sec, ssec := cps.Core().V1().Secrets().Lister(), src.Core().V1().Secrets().Lister()
	sa, ssa := cps.Core().V1().ServiceAccounts().Lister(), src.Core().V1().ServiceAccounts().Lister()
	create := metav1.CreateOptions{FieldManager: hubFieldManager}
	update := metav1.UpdateOptions{FieldManager: hubFieldManager}
	never := func(metav1.Object) string { return "" }
	return map[podrefs.Kind]copyKind{
		podrefs.ConfigMap: {
			source: func(name string) (metav1.Object, error) { return got(scm.ConfigMaps(source).Get(name)) },
			copyIn: func(ns, name string) (metav1.Object, error) { return got(cm.ConfigMaps(ns).Get(name)) },
			list:   func() ([]metav1.Object, error) { return objects(cm.List(labels.Everything())) },
			build: func(o metav1.Object) metav1.Object {
				s := o.(*corev1.ConfigMap)
				return &corev1.ConfigMap{Data: s.Data, BinaryData: s.BinaryData, Immutable: s.Immutable}
			},
			create: func(ctx context.Context, o metav1.Object) error {
				_, err := core.ConfigMaps(o.GetNamespace()).Create(ctx, o.(*corev1.ConfigMap), create)
				return err
			},
			update: func(ctx context.Context, o metav1.Object) error {
				_, err := core.ConfigMaps(o.GetNamespace()).Update(ctx, o.(*corev1.ConfigMap), update)
				return err
			},
			del: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
				return core.ConfigMaps(ns).Delete(ctx, name, opts)
			},
			refuse: never,
		},
		podrefs.Secret: {
			source: func(name string) (metav1.Object, error) { return got(ssec.Secrets(source).Get(name)) },
			copyIn: func(ns, name string) (metav1.Object, error) { return got(sec.Secrets(ns).Get(name)) },
			list:   func() ([]metav1.Object, error) { return objects(sec.List(labels.Everything())) },
			build: func(o metav1.Object) metav1.Object {
				s := o.(*corev1.Secret)
				return &corev1.Secret{Type: s.Type, Data: s.Data, Immutable: s.Immutable}
			},
			create: func(ctx context.Context, o metav1.Object) error {
				_, err := core.Secrets(o.GetNamespace()).Create(ctx, o.(*corev1.Secret), create)
				return err
			},
			update: func(ctx context.Context, o metav1.Object) error {
				_, err := core.Secrets(o.GetNamespace()).Update(ctx, o.(*corev1.Secret), update)
				return err
			},
			del: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
				return core.Secrets(ns).Delete(ctx, name, opts)
			},
			refuse: func(o metav1.Object) string {
				if err := podrefs.CheckSecret(o.(*corev1.Secret)); err != nil {
					return err.Error()
				}
				return ""
			},
		},
		podrefs.ServiceAccount: {
			source: func(name string) (metav1.Object, error) { return got(ssa.ServiceAccounts(source).Get(name)) },
			copyIn: func(ns, name string) (metav1.Object, error) { return got(sa.ServiceAccounts(ns).Get(name)) },
			list:   func() ([]metav1.Object, error) { return objects(sa.List(labels.Everything())) },
			// A plain ServiceAccount: the users' token secrets and pull
			// secrets stay where they are.
			build: func(o metav1.Object) metav1.Object {
				return &corev1.ServiceAccount{AutomountServiceAccountToken: o.(*corev1.ServiceAccount).AutomountServiceAccountToken}
			},
			create: func(ctx context.Context, o metav1.Object) error {
				_, err := core.ServiceAccounts(o.GetNamespace()).Create(ctx, o.(*corev1.ServiceAccount), create)
				return err
			},
			update: func(ctx context.Context, o metav1.Object) error {
				_, err := core.ServiceAccounts(o.GetNamespace()).Update(ctx, o.(*corev1.ServiceAccount), update)
				return err
			},
			del: func(ctx context.Context, ns, name string, opts metav1.DeleteOptions) error {
				return core.ServiceAccounts(ns).Delete(ctx, name, opts)
			},
			refuse: never,
		},
	}
}

// got returns o as a metav1.Object, nil (not a typed nil) with an error.
func got[T metav1.Object](o T, err error) (metav1.Object, error) {
	if err != nil {
		return nil, err
	}
	return o, nil
}

// objects returns l as metav1.Objects.
func objects[T metav1.Object](l []T, err error) ([]metav1.Object, error) {
	if err != nil {
		return nil, err
	}
	out := make([]metav1.Object, len(l))
	for i := range l {
		out[i] = l[i]
	}
	return out, nil
}
