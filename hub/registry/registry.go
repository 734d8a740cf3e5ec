// SPDX-License-Identifier: Apache-2.0

package registry

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"time"

	"k8s.io/utils/clock"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/store"
)

// Store kinds written by the registry.
const (
	KindClusters    = "clusters"
	KindClusterUIDs = "clusteruids"
	// KindClusterNames holds one record, "all": every registered cluster
	// name, so that Register can refuse overlapping names in its transaction.
	KindClusterNames = "clusternames"
	KindInventories  = "inventories"
	KindJoinTokens   = "jointokens"
)

// Defaults of Config.
const (
	DefaultGrace        = 40 * time.Second
	DefaultFenceTimeout = 5 * time.Minute
	// DefaultFenceMargin is added to the fence timeout before a silent
	// cluster turns Lost (see State).
	DefaultFenceMargin = 15 * time.Second
)

// CredentialIssuer hands agents scoped credentials for the hub management
// cluster (hub/hubcluster.Issuer implements it).
type CredentialIssuer interface {
	Issue(ctx context.Context, cluster string) ([]byte, error)
	Revoke(ctx context.Context, cluster string) error
}

// Config tunes a Registry.
type Config struct {
	// Grace is how long a cluster may be silent before it turns NotReady.
	Grace time.Duration
	// FenceTimeout is the agents' fence timeout: a cluster silent for
	// longer has stopped its members (agent/fence).
	FenceTimeout time.Duration
	// FenceMargin is added to FenceTimeout before a silent cluster turns
	// Lost (default DefaultFenceMargin).
	FenceMargin time.Duration
	// AgentCertValidity bounds agent certificates; 0 is pki.DefaultAgentValidity.
	AgentCertValidity time.Duration
	// HubAddress is the address agents dial, printed in the agent command.
	HubAddress string
	// Credentials issues hub-cluster credentials; nil when the hub has no
	// management cluster.
	Credentials CredentialIssuer
	// Clock is injected for tests; default the real clock.
	Clock clock.WithTicker
}

// Registry keeps clusters, join tokens and inventories. It is safe for concurrent use.
type Registry struct {
	cfg         Config
	clock       clock.WithTicker
	ca          *pki.CA
	store       *store.Store
	clusters    *store.Collection[*v1alpha1.Cluster]
	uids        *store.Collection[uidRecord]
	names       *store.Collection[*nameSet]
	inventories *store.Collection[*InventoryRecord]
	leases      *store.Collection[*Lease]
	tokens      *store.Collection[*v1alpha1.JoinToken]
	// signCSR is ca.SignAgentCSR (a seam for the test that a bad token
	// never reaches the signer).
	signCSR func(csrPEM []byte, cluster string, validity time.Duration) (*x509.Certificate, []byte, error)
}

// uidRecord indexes a cluster UID to the cluster registered with it.
type uidRecord struct {
	Cluster string `json:"cluster"`
}

// InventoryRecord is the latest inventory report of a cluster.
type InventoryRecord struct {
	// Cluster is the cluster's name.
	Cluster string `json:"cluster"`
	// SessionID and Generation order reports (see the package doc).
	SessionID  string `json:"sessionID,omitempty"`
	Generation int64  `json:"generation"`
	// Received is when the hub accepted the report.
	Received time.Time `json:"received"`
	// Inventory is the JSON of federation/inventory.Cluster.
	Inventory json.RawMessage `json:"inventory"`
}

// New returns a Registry on s signing with ca.
func New(s *store.Store, ca *pki.CA, cfg Config) *Registry {
	if cfg.Grace <= 0 {
		cfg.Grace = DefaultGrace
	}
	if cfg.FenceTimeout <= cfg.Grace {
		cfg.FenceTimeout = max(DefaultFenceTimeout, 2*cfg.Grace)
	}
	if cfg.FenceMargin <= 0 {
		cfg.FenceMargin = DefaultFenceMargin
	}
	if cfg.AgentCertValidity <= 0 {
		cfg.AgentCertValidity = pki.DefaultAgentValidity
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	return &Registry{
		cfg:         cfg,
		clock:       cfg.Clock,
		ca:          ca,
		store:       s,
		clusters:    store.NewCollection(s, KindClusters, store.JSONCodec[*v1alpha1.Cluster]()),
		uids:        store.NewCollection(s, KindClusterUIDs, store.JSONCodec[uidRecord]()),
		names:       store.NewCollection(s, KindClusterNames, store.JSONCodec[*nameSet]()),
		inventories: NewInventoryCollection(s),
		leases:      store.NewCollection(s, KindClusterLeases, store.JSONCodec[*Lease]()),
		tokens:      store.NewCollection(s, KindJoinTokens, store.JSONCodec[*v1alpha1.JoinToken]()),
		signCSR:     ca.SignAgentCSR,
	}
}

// CA is the hub CA the registry signs with.
func (r *Registry) CA() *pki.CA { return r.ca }

// HeartbeatInterval is how often agents should beat: a quarter of the grace.
func (r *Registry) HeartbeatInterval() time.Duration { return max(time.Second, r.cfg.Grace/4) }

// FenceTimeout is the agents' fence timeout as the hub counts it; agents
// are told it at registration and in every heartbeat reply, and one whose
// own is longer fences by it (agent/fence.Fence.Limit).
func (r *Registry) FenceTimeout() time.Duration { return r.cfg.FenceTimeout }

// FenceMargin is what the hub adds to FenceTimeout before a silent
// cluster turns Lost.
func (r *Registry) FenceMargin() time.Duration { return r.cfg.FenceMargin }

// HubAddress is the address agents are told to dial.
func (r *Registry) HubAddress() string { return r.cfg.HubAddress }
