// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"errors"
	"fmt"
	"regexp"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/store"
)

// MaxClusterNameLength keeps virtual node names (shoal-<cluster>-<pool>)
// inside a DNS label.
const MaxClusterNameLength = 20

var clusterNameRE = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`)

// ValidateClusterName checks a cluster name: a DNS label of at most 20 characters.
func ValidateClusterName(name string) error {
	if len(name) > MaxClusterNameLength || !clusterNameRE.MatchString(name) {
		return fmt.Errorf("%w: cluster name %q: want at most %d characters of [a-z0-9-], starting and ending alphanumeric",
			ErrInvalid, name, MaxClusterNameLength)
	}
	return nil
}

// RegisterRequest is an agent's registration.
type RegisterRequest struct {
	Token        string
	ClusterName  string
	ClusterUID   string
	CSRPEM       []byte
	AgentVersion string
	Labels       map[string]string
}

// Registration is what a registered agent receives.
type Registration struct {
	// CertificatePEM is the agent's signed client certificate.
	CertificatePEM []byte
	// CAPEM is the hub's trust bundle (pki.CA.BundlePEM).
	CAPEM []byte
	// HubKubeconfig holds the agent's scoped hub-cluster credentials (nil
	// when the hub has no management cluster).
	HubKubeconfig []byte
	// Cluster is the new record.
	Cluster *v1alpha1.Cluster
}

// Register checks the join token, signs the agent's CSR and creates the
// Cluster record; the token's use is consumed in the same transaction.
func (r *Registry) Register(ctx context.Context, req RegisterRequest) (*Registration, error) {
	id, secret, err := ParseToken(req.Token)
	if err != nil {
		return nil, err
	}
	if err := ValidateClusterName(req.ClusterName); err != nil {
		return nil, err
	}
	if req.ClusterUID == "" || len(req.ClusterUID) > 128 {
		return nil, fmt.Errorf("%w: cluster UID must be 1 to 128 characters", ErrInvalid)
	}
	// The token is checked before the CSR is even parsed, so that a
	// caller without a valid token never reaches the signer;
	// commitRegistration checks it again in the transaction that consumes it.
	if err := r.verifyToken(ctx, id, secret); err != nil {
		return nil, err
	}
	cert, certPEM, err := r.signCSR(req.CSRPEM, req.ClusterName, r.cfg.AgentCertValidity)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	cl := r.newCluster(req, pki.SerialString(cert))
	if err := r.commitRegistration(ctx, id, secret, cl); err != nil {
		return nil, err
	}
	reg := &Registration{CertificatePEM: certPEM, CAPEM: r.ca.BundlePEM(), Cluster: cl}
	if r.cfg.Credentials != nil {
		kc, err := r.cfg.Credentials.Issue(ctx, req.ClusterName)
		if err != nil {
			r.undoRegistration(ctx, id, cl)
			return nil, fmt.Errorf("%w: issue credentials for cluster %q: %w", ErrHubCluster, req.ClusterName, err)
		}
		reg.HubKubeconfig = kc
	}
	klog.FromContext(ctx).Info("Cluster registered", "cluster", cl.Name, "uid", cl.Spec.UID, "token", id, "serial", pki.SerialString(cert))
	return reg, nil
}

func (r *Registry) newCluster(req RegisterRequest, serial string) *v1alpha1.Cluster {
	now := metav1.NewTime(r.clock.Now())
	return &v1alpha1.Cluster{
		TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: "Cluster"},
		ObjectMeta: metav1.ObjectMeta{
			Name:              req.ClusterName,
			UID:               "",
			Labels:            req.Labels,
			Annotations:       map[string]string{v1alpha1.AnnotationCertificateSerial: serial},
			CreationTimestamp: now,
		},
		Spec: v1alpha1.ClusterSpec{UID: req.ClusterUID},
		Status: v1alpha1.ClusterStatus{
			State:          v1alpha1.ClusterPending,
			AgentVersion:   req.AgentVersion,
			RegisteredTime: &now,
		},
	}
}

// verifyToken checks that token id exists, matches secret and may still be used.
func (r *Registry) verifyToken(ctx context.Context, id, secret string) error {
	tok, _, err := r.tokens.Get(ctx, id)
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w: unknown token %s.…", ErrInvalidToken, id)
	}
	if err != nil {
		return err
	}
	return r.checkToken(tok, id, secret)
}

// commitRegistration consumes one use of token id and creates the cluster
// and its UID index entry in one transaction, retrying when the token
// changed under it (another registration used it).
func (r *Registry) commitRegistration(ctx context.Context, id, secret string, cl *v1alpha1.Cluster) error {
	for {
		tok, rev, err := r.tokens.Get(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			return fmt.Errorf("%w: unknown token %s.…", ErrInvalidToken, id)
		}
		if err != nil {
			return err
		}
		if err := r.checkToken(tok, id, secret); err != nil {
			return err
		}
		names, namesRev, err := r.loadNames(ctx)
		if err != nil {
			return err
		}
		if err := r.takenError(ctx, cl); err != nil {
			return err
		}
		if err := names.conflict(cl.Name); err != nil {
			return err
		}
		tok.Status.Uses++
		tok.Status.Clusters = append(tok.Status.Clusters, cl.Name)
		_, err = r.store.Txn(ctx).
			If(r.tokens.RevIs(id, rev), r.clusters.Absent(cl.Name), r.uids.Absent(cl.Spec.UID), r.names.RevIs(allNames, namesRev)).
			Then(r.tokens.PutOp(id, tok), r.clusters.PutOp(cl.Name, cl), r.uids.PutOp(cl.Spec.UID, uidRecord{Cluster: cl.Name}),
				r.leases.DeleteOp(cl.Name), // one a hub before leases' removal left
				r.names.PutOp(allNames, names.with(cl.Name))).
			Commit()
		if err == nil {
			return nil
		}
		if !errors.Is(err, store.ErrConflict) {
			return err
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
	}
}

// takenError says whether the cluster's name or UID is taken (nil when neither).
func (r *Registry) takenError(ctx context.Context, cl *v1alpha1.Cluster) error {
	if u, _, err := r.uids.Get(ctx, cl.Spec.UID); err == nil {
		return fmt.Errorf("%w: UID %q is cluster %q: remove it first (shoal cluster remove %s)",
			ErrUIDRegistered, cl.Spec.UID, u.Cluster, u.Cluster)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	if _, _, err := r.clusters.Get(ctx, cl.Name); err == nil {
		return fmt.Errorf("%w: %q: pick another --cluster-name or remove it first (shoal cluster remove %s)",
			ErrClusterExists, cl.Name, cl.Name)
	} else if !errors.Is(err, store.ErrNotFound) {
		return err
	}
	return nil
}

// undoRegistration deletes a registration whose credentials could not be
// issued and gives the token's use back, so that the agent can retry.
func (r *Registry) undoRegistration(ctx context.Context, id string, cl *v1alpha1.Cluster) {
	log := klog.FromContext(ctx)
	if _, err := r.store.Txn(ctx).Then(r.clusters.DeleteOp(cl.Name), r.uids.DeleteOp(cl.Spec.UID), r.leases.DeleteOp(cl.Name)).Commit(); err != nil {
		log.Error(err, "Undo registration", "cluster", cl.Name)
	}
	if _, _, err := r.names.GuaranteedUpdate(ctx, allNames, func(ns *nameSet) (*nameSet, error) {
		return ns.without(cl.Name), nil
	}); err != nil {
		log.Error(err, "Undo registration: cluster name", "cluster", cl.Name)
	}
	_, _, err := r.tokens.GuaranteedUpdate(ctx, id, func(t *v1alpha1.JoinToken) (*v1alpha1.JoinToken, error) {
		if t.Status.Uses > 0 {
			t.Status.Uses--
		}
		for i, c := range t.Status.Clusters {
			if c == cl.Name {
				t.Status.Clusters = append(t.Status.Clusters[:i], t.Status.Clusters[i+1:]...)
				break
			}
		}
		return t, nil
	})
	if err != nil {
		log.Error(err, "Give back join token use", "token", id)
	}
}
