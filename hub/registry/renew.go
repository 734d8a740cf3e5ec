// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/store"
)

// Renewal is what a renewing agent receives.
type Renewal struct {
	// CertificatePEM is the agent's new client certificate.
	CertificatePEM []byte
	// CAPEM is the hub's trust bundle (pki.CA.BundlePEM).
	CAPEM []byte
}

// Renew signs csrPEM as a new certificate of cluster for the agent whose
// current certificate has serial. The new serial is recorded as the
// cluster's next one (AnnotationCertificateNextSerial): AuthorizeAgent
// makes it the current one at its first use, and from then on the old
// certificate is refused. Until then the old one keeps working, so an
// agent that lost the response renews again (replacing the next serial)
// instead of being locked out.
func (r *Registry) Renew(ctx context.Context, cluster, serial string, csrPEM []byte) (*Renewal, error) {
	if _, err := r.authorizedCluster(ctx, cluster, serial); err != nil {
		return nil, err
	}
	cert, certPEM, err := r.signCSR(csrPEM, cluster, r.cfg.AgentCertValidity)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	next := pki.SerialString(cert)
	_, _, err = r.clusters.GuaranteedUpdate(ctx, cluster, func(c *v1alpha1.Cluster) (*v1alpha1.Cluster, error) {
		if err := currentSerial(c, serial); err != nil {
			return nil, err
		}
		if c.Annotations == nil {
			c.Annotations = map[string]string{}
		}
		c.Annotations[v1alpha1.AnnotationCertificateNextSerial] = next
		return c, nil
	})
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: cluster %q is not registered", ErrCertificateRevoked, cluster)
	}
	if err != nil {
		return nil, err
	}
	klog.FromContext(ctx).Info("Agent certificate renewed", "cluster", cluster, "serial", serial, "nextSerial", next,
		"notAfter", cert.NotAfter)
	return &Renewal{CertificatePEM: certPEM, CAPEM: r.ca.BundlePEM()}, nil
}

// IssueHubCredentials returns a fresh hub-cluster kubeconfig for cluster's
// agent (current certificate serial): the way back for an agent whose
// token expired or was invalidated while it could not refresh it.
func (r *Registry) IssueHubCredentials(ctx context.Context, cluster, serial string) ([]byte, error) {
	if _, err := r.authorizedCluster(ctx, cluster, serial); err != nil {
		return nil, err
	}
	if r.cfg.Credentials == nil {
		return nil, fmt.Errorf("%w: the hub runs without a management cluster (--kubeconfig) and issues no hub-cluster credentials", ErrNotFound)
	}
	kc, err := r.cfg.Credentials.Issue(ctx, cluster)
	if err != nil {
		return nil, fmt.Errorf("%w: issue credentials for cluster %q: %w", ErrHubCluster, cluster, err)
	}
	klog.FromContext(ctx).Info("Hub-cluster credentials reissued", "cluster", cluster, "serial", serial)
	return kc, nil
}

// authorizedCluster reads cluster and checks that serial is its current
// agent certificate.
func (r *Registry) authorizedCluster(ctx context.Context, cluster, serial string) (*v1alpha1.Cluster, error) {
	cl, _, err := r.clusters.Get(ctx, cluster)
	if errors.Is(err, store.ErrNotFound) {
		return nil, fmt.Errorf("%w: cluster %q is not registered (removed?): register again with a new join token",
			ErrCertificateRevoked, cluster)
	}
	if err != nil {
		return nil, err
	}
	return cl, currentSerial(cl, serial)
}

// errPromoted stops promote's update: the serial is current already.
var errPromoted = errors.New("already promoted")

// promote makes serial, the cluster's next certificate, its current one:
// the first call with a renewed certificate revokes the one before it.
func (r *Registry) promote(ctx context.Context, cluster, serial string) error {
	var old string
	_, _, err := r.clusters.GuaranteedUpdate(ctx, cluster, func(c *v1alpha1.Cluster) (*v1alpha1.Cluster, error) {
		switch serial {
		case c.Annotations[v1alpha1.AnnotationCertificateSerial]:
			return nil, errPromoted // by a concurrent call
		case c.Annotations[v1alpha1.AnnotationCertificateNextSerial]:
		default:
			return nil, fmt.Errorf("%w: certificate %s is no longer cluster %q's (renewed again)", ErrCertificateRevoked, serial, cluster)
		}
		old = c.Annotations[v1alpha1.AnnotationCertificateSerial]
		c.Annotations[v1alpha1.AnnotationCertificateSerial] = serial
		delete(c.Annotations, v1alpha1.AnnotationCertificateNextSerial)
		return c, nil
	})
	if errors.Is(err, errPromoted) {
		return nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: cluster %q is not registered", ErrCertificateRevoked, cluster)
	}
	if err != nil {
		return err
	}
	klog.FromContext(ctx).Info("Agent switched to its renewed certificate; the old one is revoked", "cluster", cluster,
		"serial", serial, "revokedSerial", old)
	return nil
}
