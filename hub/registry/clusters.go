// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/store"
)

// GetCluster returns a cluster record, its lease applied (lease.go), with
// the record's revision.
func (r *Registry) GetCluster(ctx context.Context, name string) (*v1alpha1.Cluster, int64, error) {
	lc, err := r.getLeased(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, 0, fmt.Errorf("%w: cluster %q (shoal cluster list shows the registered ones)", ErrNotFound, name)
	}
	if err != nil {
		return nil, 0, err
	}
	return lc.c, lc.rev, nil
}

// ClusterList is one page of clusters.
type ClusterList struct {
	Items    []*v1alpha1.Cluster
	Revs     []int64
	Continue string
	Revision int64
}

// ListClusters returns a page of clusters whose labels match selector
// (Kubernetes label-selector syntax; "" matches all), their leases
// applied.
func (r *Registry) ListClusters(ctx context.Context, opts store.ListOptions, selector string) (*ClusterList, error) {
	sel, err := labels.Parse(selector)
	if err != nil {
		return nil, fmt.Errorf("%w: selector %q: %w", ErrInvalid, selector, err)
	}
	leases, err := r.leaseMap(ctx)
	if err != nil {
		return nil, err
	}
	res, err := r.clusters.List(ctx, opts)
	if err != nil {
		return nil, err
	}
	out := &ClusterList{Continue: res.Continue, Revision: res.Revision}
	for _, it := range res.Items {
		if sel.Matches(labels.Set(it.Object.Labels)) {
			leases[it.Name].Object.Apply(it.Object)
			out.Items = append(out.Items, it.Object)
			out.Revs = append(out.Revs, it.Revision)
		}
	}
	return out, nil
}

// Cordon sets or clears spec.unschedulable and re-evaluates the state;
// uncordoning also ends a drain (spec.drain; drained nodes stay drained).
func (r *Registry) Cordon(ctx context.Context, name string, cordon bool) (*v1alpha1.Cluster, int64, error) {
	return r.changeSpec(ctx, name, func(c *v1alpha1.Cluster) {
		c.Spec.Unschedulable = cordon
		if !cordon {
			c.Spec.Drain = false
		}
	})
}

// Remove revokes the cluster's hub-cluster credentials and deletes its
// records; its agent certificate is refused from then on.
func (r *Registry) Remove(ctx context.Context, name string) error {
	cl, rev, err := r.GetCluster(ctx, name)
	if err != nil {
		return err
	}
	if r.cfg.Credentials != nil {
		if err := r.cfg.Credentials.Revoke(ctx, name); err != nil {
			return fmt.Errorf("%w: revoke credentials of cluster %q: %w", ErrHubCluster, name, err)
		}
	}
	names, namesRev, err := r.loadNames(ctx)
	if err != nil {
		return err
	}
	_, err = r.store.Txn(ctx).
		If(r.clusters.RevIs(name, rev), r.names.RevIs(allNames, namesRev)).
		Then(r.clusters.DeleteOp(name), r.uids.DeleteOp(cl.Spec.UID), r.inventories.DeleteOp(name), r.leases.DeleteOp(name),
			r.names.PutOp(allNames, names.without(name))).
		Commit()
	if errors.Is(err, store.ErrConflict) {
		return r.Remove(ctx, name) // changed (a heartbeat, a registration): read again
	}
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Cluster removed", "cluster", name, "serial", cl.Annotations[v1alpha1.AnnotationCertificateSerial])
	return nil
}

// AuthorizeAgent checks that serial is the current agent certificate of a
// registered cluster. The first call with a renewed certificate (the
// cluster's next serial, see Renew) makes it the current one, which
// revokes the certificate before it.
func (r *Registry) AuthorizeAgent(ctx context.Context, cluster, serial string) error {
	cl, _, err := r.clusters.Get(ctx, cluster)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: cluster %q is not registered (removed?): register again with a new join token",
			ErrCertificateRevoked, cluster)
	}
	if err != nil {
		return err
	}
	switch serial {
	case cl.Annotations[v1alpha1.AnnotationCertificateSerial]:
		return nil
	case cl.Annotations[v1alpha1.AnnotationCertificateNextSerial]:
		return r.promote(ctx, cluster, serial)
	}
	return fmt.Errorf("%w: certificate %s is no longer cluster %q's (it renewed its certificate or registered again)",
		ErrCertificateRevoked, serial, cluster)
}
