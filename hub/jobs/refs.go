// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/podrefs"
	"github.com/shoal-dev/shoal/hub/errs"
)

// ReferenceChecker checks that the objects a job's pod template references
// (federation/podrefs, optional ones left out) exist in the users' namespace
// of the hub cluster, from which the dispatcher copies them into the
// namespace of each cluster that holds a member, and the agents on into
// their workload clusters (docs/dependencies.md). It returns a field error per reference
// that cannot be met, at the reference's path, or the error that kept it
// from checking (errs.ErrUnavailable when the hub cluster cannot answer).
type ReferenceChecker interface {
	Check(ctx context.Context, refs []podrefs.Ref) (field.ErrorList, error)
}

// KubeReferenceChecker is the ReferenceChecker that reads the hub cluster.
type KubeReferenceChecker struct {
	client    kubernetes.Interface
	namespace string
}

// NewKubeReferenceChecker checks references in namespace (default
// v1alpha1.MemberNamespace: until tenancy, the users' namespace on the hub)
// of the cluster cs reaches. The identity needs "get" on configmaps,
// secrets and serviceaccounts there.
func NewKubeReferenceChecker(cs kubernetes.Interface, namespace string) *KubeReferenceChecker {
	return &KubeReferenceChecker{client: cs, namespace: memberNamespace(namespace)}
}

// Check gets each referenced object once and reports every reference to
// one that is missing or that is never carried to workload clusters.
func (c *KubeReferenceChecker) Check(ctx context.Context, refs []podrefs.Ref) (field.ErrorList, error) {
	objs, _ := podrefs.Objects(refs)
	problem := make(map[podrefs.Object]string, len(objs))
	for _, o := range objs {
		msg, err := c.check(ctx, o)
		if err != nil {
			if ctx.Err() == nil && unavailable(err) {
				return nil, errs.Unavailable("the hub cluster", fmt.Errorf("get %s %q in namespace %q: %w", o.Kind, o.Name, c.namespace, err))
			}
			return nil, fmt.Errorf("get %s %q in namespace %q of the hub cluster: %w", o.Kind, o.Name, c.namespace, err)
		}
		if msg != "" {
			problem[o] = msg
		}
	}
	var out field.ErrorList
	for _, r := range refs {
		msg, bad := problem[r.Object()]
		switch {
		case !bad:
		case msg == msgMissing:
			out = append(out, &field.Error{Type: field.ErrorTypeNotFound, Field: r.Path.String(), BadValue: field.OmitValueType{},
				Detail: fmt.Sprintf("%s %q not found in namespace %s of the hub cluster: create it there before submitting, or mark the reference optional",
					r.Kind, r.Name, c.namespace)})
		default:
			out = append(out, field.Forbidden(r.Path, msg))
		}
	}
	return out, nil
}

// msgMissing is check's message for a missing object.
const msgMissing = "not found"

// memberNamespace is namespace, or v1alpha1.MemberNamespace when empty.
func memberNamespace(namespace string) string {
	if namespace == "" {
		return v1alpha1.MemberNamespace
	}
	return namespace
}

// check returns "" when o may be carried, msgMissing when it is missing and
// why it is refused otherwise.
func (c *KubeReferenceChecker) check(ctx context.Context, o podrefs.Object) (string, error) {
	var err error
	get := metav1.GetOptions{}
	switch o.Kind {
	case podrefs.ConfigMap:
		_, err = c.client.CoreV1().ConfigMaps(c.namespace).Get(ctx, o.Name, get)
	case podrefs.ServiceAccount:
		_, err = c.client.CoreV1().ServiceAccounts(c.namespace).Get(ctx, o.Name, get)
	case podrefs.Secret:
		var s *corev1.Secret
		if s, err = c.client.CoreV1().Secrets(c.namespace).Get(ctx, o.Name, get); err == nil {
			if cerr := podrefs.CheckSecret(s); cerr != nil {
				return cerr.Error(), nil
			}
		}
	default:
		return "", fmt.Errorf("unknown reference kind %q", o.Kind)
	}
	if apierrors.IsNotFound(err) {
		return msgMissing, nil
	}
	return "", err
}
