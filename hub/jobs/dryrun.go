// SPDX-License-Identifier: Apache-2.0

package jobs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/errs"
)

// DryRunValidator checks pod templates with the real Kubernetes validator:
// it creates a PodTemplate with dryRun=All in a namespace of the hub
// management cluster, so nothing is stored and no admission side effect
// happens. A PodTemplate is validated exactly like a pod's template, without
// the service-account and scheduling admission a Pod would meet.
type DryRunValidator struct {
	client    kubernetes.Interface
	namespace string
}

// NewDryRunValidator validates in namespace (default "default", which every
// API server has) of the cluster cs reaches. The identity needs "create" on
// podtemplates there.
func NewDryRunValidator(cs kubernetes.Interface, namespace string) *DryRunValidator {
	if namespace == "" {
		namespace = metav1.NamespaceDefault
	}
	return &DryRunValidator{client: cs, namespace: namespace}
}

// Validate returns a *v1alpha1.InvalidError with paths relative to the
// template ("spec.containers[0].image") when the API server rejects it, and
// an errs.ErrUnavailable with the cause when the hub cluster could not judge
// the template (unreachable, refusing the hub's identity, overloaded).
func (v *DryRunValidator) Validate(ctx context.Context, t *corev1.PodTemplateSpec) error {
	pt := &corev1.PodTemplate{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "shoal-dry-run-", Namespace: v.namespace},
		Template:   *t.DeepCopy(),
	}
	_, err := v.client.CoreV1().PodTemplates(v.namespace).Create(ctx, pt, metav1.CreateOptions{
		DryRun: []string{metav1.DryRunAll}, FieldManager: "shoal-hub"})
	if err == nil {
		return nil
	}
	if ctx.Err() == nil && unavailable(err) {
		return errs.Unavailable("the hub cluster", fmt.Errorf("dry-run of the pod template in namespace %q: %w", v.namespace, err))
	}
	var se *apierrors.StatusError
	if !apierrors.IsInvalid(err) || !errors.As(err, &se) {
		return fmt.Errorf("dry-run on the hub cluster: %w", err)
	}
	return v1alpha1.NewInvalidError("PodTemplate", "", causes(se))
}

// unavailable reports whether a failed dry-run says nothing about the
// template: the request never got an answer (a transport error: connection
// refused, DNS, TLS), or the API server refused the hub's identity
// (Unauthorized, Forbidden: its RBAC on the hub cluster) or was too busy to
// answer (ServiceUnavailable, TooManyRequests, timeouts).
func unavailable(err error) bool {
	switch {
	case apierrors.IsUnauthorized(err), apierrors.IsForbidden(err),
		apierrors.IsServiceUnavailable(err), apierrors.IsTooManyRequests(err),
		apierrors.IsServerTimeout(err), apierrors.IsTimeout(err):
		return true
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return false // the API server answered, about something else
	}
	var ue *url.Error
	var ne net.Error
	return errors.As(err, &ue) || errors.As(err, &ne)
}

// causes converts the API server's causes to field errors under the template.
func causes(se *apierrors.StatusError) field.ErrorList {
	var out field.ErrorList
	if d := se.ErrStatus.Details; d != nil {
		for _, c := range d.Causes {
			path := strings.TrimPrefix(strings.TrimPrefix(c.Field, "template"), ".")
			typ := field.ErrorType(c.Type)
			msg := strings.TrimPrefix(c.Message, typ.String()+": ")
			out = append(out, &field.Error{Type: typ, Field: path, BadValue: field.OmitValueType{}, Detail: msg})
		}
	}
	if len(out) == 0 {
		out = append(out, field.Invalid(field.NewPath("spec"), nil, se.ErrStatus.Message))
	}
	return out
}
