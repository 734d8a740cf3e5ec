// SPDX-License-Identifier: Apache-2.0

package hubclient

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// SecretName is the Secret, in the agent's namespace of its own cluster,
// that keeps the agent's credentials.
const SecretName = "shoal-agent-credentials"

// Keys of the credentials Secret.
const (
	keyCluster    = "cluster"
	keyKey        = "tls.key"
	keyCert       = "tls.crt"
	keyCA         = "ca.crt"
	keyKubeconfig = "hub.kubeconfig"
	// keyHubFence is the hub's fence timeout as last told (a Go duration).
	keyHubFence = "hub-fence-timeout"
)

// ErrNoCredentials means the agent has not registered yet.
var ErrNoCredentials = errors.New("no stored agent credentials")

// Credentials are what registration yields: the agent's key and client
// certificate for the hub API, the hub CA, and a kubeconfig for the hub
// management cluster scoped to this cluster's objects.
type Credentials struct {
	Cluster       string
	KeyPEM        []byte
	CertPEM       []byte
	CAPEM         []byte
	HubKubeconfig []byte
	// HubFenceTimeout is the hub's fence timeout as last told, at
	// registration or in a heartbeat reply (0: unknown); the agent fences by
	// it when its own is longer (agent/fence.Fence.Limit).
	HubFenceTimeout time.Duration
}

// TLSConfig returns the mutual-TLS configuration to call the hub.
func (c *Credentials) TLSConfig(serverName string) (*tls.Config, error) {
	cert, err := tls.X509KeyPair(c.CertPEM, c.KeyPEM)
	if err != nil {
		return nil, fmt.Errorf("agent client certificate: %w", err)
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(c.CAPEM) {
		return nil, errors.New("hub CA: no PEM certificate")
	}
	return &tls.Config{MinVersion: tls.VersionTLS13, RootCAs: pool, ServerName: serverName, Certificates: []tls.Certificate{cert}}, nil
}

// SecretStore keeps Credentials in a Secret of the agent's own cluster.
type SecretStore struct {
	Client    kubernetes.Interface
	Namespace string
	Name      string
}

func (s SecretStore) name() string {
	if s.Name == "" {
		return SecretName
	}
	return s.Name
}

// Load returns the stored credentials, or ErrNoCredentials.
func (s SecretStore) Load(ctx context.Context) (*Credentials, error) {
	sec, err := s.Client.CoreV1().Secrets(s.Namespace).Get(Quiet(ctx), s.name(), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, ErrNoCredentials
	}
	if err != nil {
		return nil, fmt.Errorf("read credentials secret: %w", err)
	}
	d := sec.Data
	if len(d[keyKey]) == 0 || len(d[keyCert]) == 0 || len(d[keyCA]) == 0 {
		return nil, ErrNoCredentials
	}
	c := &Credentials{Cluster: string(d[keyCluster]), KeyPEM: d[keyKey], CertPEM: d[keyCert], CAPEM: d[keyCA], HubKubeconfig: d[keyKubeconfig]}
	if v := d[keyHubFence]; len(v) > 0 {
		if t, err := time.ParseDuration(string(v)); err == nil && t > 0 {
			c.HubFenceTimeout = t
		}
	}
	return c, nil
}

// Save creates or replaces the credentials Secret.
func (s SecretStore) Save(ctx context.Context, c *Credentials) error {
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: s.name(), Namespace: s.Namespace,
			Labels: map[string]string{"app.kubernetes.io/name": "shoal-agent"}},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{keyCluster: []byte(c.Cluster), keyKey: c.KeyPEM, keyCert: c.CertPEM, keyCA: c.CAPEM, keyKubeconfig: c.HubKubeconfig},
	}
	if c.HubFenceTimeout > 0 {
		sec.Data[keyHubFence] = []byte(c.HubFenceTimeout.String())
	}
	secrets := s.Client.CoreV1().Secrets(s.Namespace)
	ctx = Quiet(ctx) // the bodies hold the key
	_, err := secrets.Create(ctx, sec, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		_, err = secrets.Update(ctx, sec, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("write credentials secret: %w", err)
	}
	return nil
}
