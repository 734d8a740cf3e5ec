// SPDX-License-Identifier: Apache-2.0

package hubkube

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// ErrNotServiceAccountToken means a token that names no ServiceAccount.
var ErrNotServiceAccountToken = errors.New("not a service-account token")

// claims are the parts of a service-account JWT the refresher reads.
type claims struct {
	Subject  string `json:"sub"`
	Expiry   int64  `json:"exp"`
	IssuedAt int64  `json:"iat"`
}

// parseClaims decodes a JWT's payload without verifying it: the agent only
// needs to know when to refresh; the API server verifies.
func parseClaims(token string) (claims, error) {
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		return claims{}, fmt.Errorf("%w: not a JWT", ErrNotServiceAccountToken)
	}
	raw, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		return claims{}, fmt.Errorf("%w: %v", ErrNotServiceAccountToken, err)
	}
	var c claims
	if err := json.Unmarshal(raw, &c); err != nil {
		return claims{}, fmt.Errorf("%w: %v", ErrNotServiceAccountToken, err)
	}
	return c, nil
}

// serviceAccount splits sub = system:serviceaccount:<ns>:<name>.
func (c claims) serviceAccount() (ns, name string, err error) {
	rest, ok := strings.CutPrefix(c.Subject, "system:serviceaccount:")
	ns, name, ok2 := strings.Cut(rest, ":")
	if !ok || !ok2 || ns == "" || name == "" {
		return "", "", fmt.Errorf("%w: subject %q", ErrNotServiceAccountToken, c.Subject)
	}
	return ns, name, nil
}

// Client is the hub-cluster client with a refreshed token.
type Client struct {
	kubeconfig []byte
	cfg        *rest.Config
	mu         sync.Mutex
	token      string
	// OnRefresh, if set, receives the kubeconfig with each new token (to store it).
	OnRefresh func(ctx context.Context, kubeconfig []byte) error
}

// New parses the kubeconfig issued at registration.
func New(kubeconfig []byte) (*Client, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig: %w", err)
	}
	c := &Client{kubeconfig: kubeconfig, token: cfg.BearerToken}
	if cfg.BearerToken != "" {
		cfg.BearerToken = ""
		cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper { return &bearer{next: rt, c: c} }
	}
	c.cfg = cfg
	return c, nil
}

// Config returns the rest.Config to build clients from.
func (c *Client) Config() *rest.Config { return rest.CopyConfig(c.cfg) }

func (c *Client) current() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.token
}

type bearer struct {
	next http.RoundTripper
	c    *Client
}

func (b *bearer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+b.c.current())
	return b.next.RoundTrip(req)
}

// Run refreshes the token at two thirds of its lifetime until ctx ends.
// A kubeconfig without a service-account token needs nothing and returns.
func (c *Client) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("hub-token")
	if c.current() == "" {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	for {
		cl, err := parseClaims(c.current())
		if err != nil || cl.Expiry == 0 {
			log.Info("Hub token has no expiry; not refreshing")
			<-ctx.Done()
			return nil
		}
		ns, name, err := cl.serviceAccount()
		if err != nil {
			return err
		}
		life := time.Duration(cl.Expiry-cl.IssuedAt) * time.Second
		at := time.Unix(cl.IssuedAt, 0).Add(life * 2 / 3)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Until(at)):
		}
		secs := int64(life.Seconds())
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(ctx, name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		if err != nil {
			log.Error(err, "Refreshing the hub token failed; retrying in 30s")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(30 * time.Second):
			}
			continue
		}
		c.mu.Lock()
		c.token = tr.Status.Token
		c.mu.Unlock()
		log.Info("Refreshed the hub token", "expires", tr.Status.ExpirationTimestamp.Time)
		if c.OnRefresh != nil {
			if kc, err := c.withToken(tr.Status.Token); err == nil {
				if err := c.OnRefresh(ctx, kc); err != nil {
					log.Error(err, "Storing the refreshed hub kubeconfig failed")
				}
			}
		}
	}
}

// withToken returns the kubeconfig with its token replaced.
func (c *Client) withToken(token string) ([]byte, error) {
	cfg, err := clientcmd.Load(c.kubeconfig)
	if err != nil {
		return nil, err
	}
	for _, ai := range cfg.AuthInfos {
		if ai.Token != "" {
			ai.Token = token
		}
	}
	return clientcmd.Write(*cfg)
}
