// SPDX-License-Identifier: Apache-2.0

package deps

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/podrefs"
)

// object is a ConfigMap, Secret or ServiceAccount.
type object interface {
	metav1.Object
	runtime.Object
}

// ops are the API calls and the copy rule of one kind.
type ops struct {
	newObj func() object
	get    func(ctx context.Context, c kubernetes.Interface, ns, name string) (object, error)
	create func(ctx context.Context, c kubernetes.Interface, o object) (object, error)
	update func(ctx context.Context, c kubernetes.Interface, o object) (object, error)
	delete func(ctx context.Context, c kubernetes.Interface, ns, name string, opts metav1.DeleteOptions) error
	list   func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) ([]object, error)
	watch  func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (watch.Interface, error)
	listRT func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error)
	// copyOf is the local copy of a hub object (metadata left to stamp).
	copyOf func(src object) object
}

var kinds = map[podrefs.Kind]ops{
	podrefs.ConfigMap: {
		newObj: func() object { return &corev1.ConfigMap{} },
		get: func(ctx context.Context, c kubernetes.Interface, ns, name string) (object, error) {
			return c.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, c kubernetes.Interface, o object) (object, error) {
			return c.CoreV1().ConfigMaps(o.GetNamespace()).Create(ctx, o.(*corev1.ConfigMap), metav1.CreateOptions{FieldManager: fieldManager})
		},
		update: func(ctx context.Context, c kubernetes.Interface, o object) (object, error) {
			return c.CoreV1().ConfigMaps(o.GetNamespace()).Update(ctx, o.(*corev1.ConfigMap), metav1.UpdateOptions{FieldManager: fieldManager})
		},
		delete: func(ctx context.Context, c kubernetes.Interface, ns, name string, opts metav1.DeleteOptions) error {
			return c.CoreV1().ConfigMaps(ns).Delete(ctx, name, opts)
		},
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) ([]object, error) {
			l, err := c.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return items(l.Items), nil
		},
		listRT: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().ConfigMaps(ns).List(ctx, opts)
		},
		watch: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().ConfigMaps(ns).Watch(ctx, opts)
		},
		copyOf: func(src object) object {
			s := src.(*corev1.ConfigMap)
			return &corev1.ConfigMap{Data: maps.Clone(s.Data), BinaryData: maps.Clone(s.BinaryData), Immutable: s.Immutable}
		},
	},
	podrefs.Secret: {
		newObj: func() object { return &corev1.Secret{} },
		get: func(ctx context.Context, c kubernetes.Interface, ns, name string) (object, error) {
			return c.CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, c kubernetes.Interface, o object) (object, error) {
			return c.CoreV1().Secrets(o.GetNamespace()).Create(ctx, o.(*corev1.Secret), metav1.CreateOptions{FieldManager: fieldManager})
		},
		update: func(ctx context.Context, c kubernetes.Interface, o object) (object, error) {
			return c.CoreV1().Secrets(o.GetNamespace()).Update(ctx, o.(*corev1.Secret), metav1.UpdateOptions{FieldManager: fieldManager})
		},
		delete: func(ctx context.Context, c kubernetes.Interface, ns, name string, opts metav1.DeleteOptions) error {
			return c.CoreV1().Secrets(ns).Delete(ctx, name, opts)
		},
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) ([]object, error) {
			l, err := c.CoreV1().Secrets(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return items(l.Items), nil
		},
		listRT: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().Secrets(ns).List(ctx, opts)
		},
		watch: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().Secrets(ns).Watch(ctx, opts)
		},
		copyOf: func(src object) object {
			s := src.(*corev1.Secret)
			return &corev1.Secret{Type: s.Type, Data: maps.Clone(s.Data), Immutable: s.Immutable}
		},
	},
	podrefs.ServiceAccount: {
		newObj: func() object { return &corev1.ServiceAccount{} },
		get: func(ctx context.Context, c kubernetes.Interface, ns, name string) (object, error) {
			return c.CoreV1().ServiceAccounts(ns).Get(ctx, name, metav1.GetOptions{})
		},
		create: func(ctx context.Context, c kubernetes.Interface, o object) (object, error) {
			return c.CoreV1().ServiceAccounts(o.GetNamespace()).Create(ctx, o.(*corev1.ServiceAccount), metav1.CreateOptions{FieldManager: fieldManager})
		},
		update: func(ctx context.Context, c kubernetes.Interface, o object) (object, error) {
			return c.CoreV1().ServiceAccounts(o.GetNamespace()).Update(ctx, o.(*corev1.ServiceAccount), metav1.UpdateOptions{FieldManager: fieldManager})
		},
		delete: func(ctx context.Context, c kubernetes.Interface, ns, name string, opts metav1.DeleteOptions) error {
			return c.CoreV1().ServiceAccounts(ns).Delete(ctx, name, opts)
		},
		list: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) ([]object, error) {
			l, err := c.CoreV1().ServiceAccounts(ns).List(ctx, opts)
			if err != nil {
				return nil, err
			}
			return items(l.Items), nil
		},
		listRT: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (runtime.Object, error) {
			return c.CoreV1().ServiceAccounts(ns).List(ctx, opts)
		},
		watch: func(ctx context.Context, c kubernetes.Interface, ns string, opts metav1.ListOptions) (watch.Interface, error) {
			return c.CoreV1().ServiceAccounts(ns).Watch(ctx, opts)
		},
		// A plain ServiceAccount: the hub's token secrets and pull secrets
		// stay there (the member's pod spec carries its pull secrets).
		copyOf: func(src object) object {
			return &corev1.ServiceAccount{AutomountServiceAccountToken: src.(*corev1.ServiceAccount).AutomountServiceAccountToken}
		},
	},
}

// items returns pointers to the elements of l.
func items[T any, P interface {
	*T
	object
}](l []T) []object {
	out := make([]object, len(l))
	for i := range l {
		out[i] = P(&l[i])
	}
	return out
}

// fieldManager owns the copies' fields.
const fieldManager = "shoal-agent"

// stamp sets the name, namespace (ns, of the workload cluster), labels and
// annotations of copy cp of src, owned by jobs.
func stamp(cp, src object, ns, jobs string) {
	cp.SetName(src.GetName())
	cp.SetNamespace(ns)
	cp.SetLabels(map[string]string{v1alpha1.LabelCopy: "true", v1alpha1.ManagedByLabel: v1alpha1.ManagedByAgent})
	cp.SetAnnotations(map[string]string{
		v1alpha1.AnnotationSourceUID:     string(src.GetUID()),
		v1alpha1.AnnotationSourceVersion: src.GetResourceVersion(),
		v1alpha1.AnnotationCopyJobs:      jobs,
		v1alpha1.AnnotationHubNamespace:  src.GetNamespace(),
	})
}

// isCopy reports whether a local object is one the agent created.
func isCopy(o metav1.Object) bool { return o.GetLabels()[v1alpha1.LabelCopy] == "true" }

// upToDate reports whether copy cp was written from src as it is now.
func upToDate(cp, src object) bool {
	a := cp.GetAnnotations()
	return a[v1alpha1.AnnotationSourceUID] == string(src.GetUID()) && a[v1alpha1.AnnotationSourceVersion] == src.GetResourceVersion()
}

// kindOf returns the ops of k.
func kindOf(k podrefs.Kind) (ops, error) {
	o, ok := kinds[k]
	if !ok {
		return ops{}, fmt.Errorf("unknown reference kind %q", k)
	}
	return o, nil
}
