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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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
	// refused is signalled when the API server answers 401: the token
	// expired or was invalidated.
	refused chan struct{}
	// OnRefresh, if set, receives the kubeconfig with each new token (to store it).
	OnRefresh func(ctx context.Context, kubeconfig []byte) error
	// Reissue, if set, asks the hub for a fresh kubeconfig over the
	// agent's mTLS connection (hubclient.Client.IssueHubCredentials). Run
	// uses it when the token has expired or is about to, or the API server
	// refuses it — after the agent was cut off for longer than the
	// token's life, when a TokenRequest made with the token itself cannot
	// succeed.
	Reissue func(ctx context.Context) ([]byte, error)
	// reissued is when Reissue last succeeded.
	reissued time.Time
}

// minReissueInterval spaces reissues, so that an API server refusing
// every token (its authenticator broken) does not make the agent ask the
// hub in a loop.
const minReissueInterval = 30 * time.Second

// New parses the kubeconfig issued at registration.
func New(kubeconfig []byte) (*Client, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("hub kubeconfig: %w", err)
	}
	c := &Client{kubeconfig: kubeconfig, token: cfg.BearerToken, refused: make(chan struct{}, 1)}
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
	resp, err := b.next.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		select {
		case b.c.refused <- struct{}{}:
		default:
		}
	}
	return resp, err
}

// expiryMargin is how close to its expiry a token is reissued by the hub
// rather than refreshed by a TokenRequest of its own (which might not
// reach the API server in time).
func expiryMargin(life time.Duration) time.Duration { return min(life/10, time.Minute) }

// Run refreshes the token at two thirds of its lifetime until ctx ends,
// with a TokenRequest for its own ServiceAccount. A token that has expired
// (or expires within a tenth of its life, at most a minute), or that the
// API server refuses, is replaced through Reissue instead, retried with
// backoff until the hub answers. A kubeconfig without a service-account
// token needs nothing and returns.
func (c *Client) Run(ctx context.Context) error {
	log := klog.FromContext(ctx).WithName("hub-token")
	if c.current() == "" {
		return nil
	}
	cs, err := kubernetes.NewForConfig(c.Config())
	if err != nil {
		return err
	}
	bo := backoff{initial: time.Second, max: 30 * time.Second}
	for {
		cl, err := parseClaims(c.current())
		if err != nil || cl.Expiry == 0 {
			log.Info("Hub token has no expiry; not refreshing")
			if c.Reissue == nil || !c.waitRefused(ctx) {
				return nil
			}
			c.reissue(ctx, log, "the API server refused the token", &bo)
			continue
		}
		ns, name, err := cl.serviceAccount()
		if err != nil {
			return err
		}
		life := time.Duration(cl.Expiry-cl.IssuedAt) * time.Second
		exp := time.Unix(cl.Expiry, 0)
		at := time.Unix(cl.IssuedAt, 0).Add(life * 2 / 3)
		if c.Reissue != nil && time.Until(exp) < expiryMargin(life) {
			c.reissue(ctx, log, "the token expired", &bo)
			if ctx.Err() != nil {
				return nil
			}
			continue
		}
		select {
		case <-ctx.Done():
			return nil
		case <-c.refused:
			if c.Reissue != nil {
				c.reissue(ctx, log, "the API server refused the token", &bo)
				continue
			}
		case <-time.After(time.Until(at)):
		}
		secs := int64(life.Seconds())
		// A quiet context: client-go would log the response, the token, at -v≥8.
		tr, err := cs.CoreV1().ServiceAccounts(ns).CreateToken(klog.NewContext(ctx, klog.Logger{}), name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		if apierrors.IsUnauthorized(err) && c.Reissue != nil {
			c.reissue(ctx, log, "the API server refused the token", &bo)
			continue
		}
		if err != nil {
			log.Error(err, "Refreshing the hub token failed; retrying in 30s")
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(30 * time.Second):
			}
			continue
		}
		c.setToken(tr.Status.Token)
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

// waitRefused waits for a 401; false when ctx ended first.
func (c *Client) waitRefused(ctx context.Context) bool {
	select {
	case <-ctx.Done():
		return false
	case <-c.refused:
		return true
	}
}

// reissue gets a new kubeconfig from the hub (retrying with backoff until
// it succeeds or ctx ends) and adopts its token.
func (c *Client) reissue(ctx context.Context, log klog.Logger, why string, bo *backoff) {
	if wait := time.Until(c.reissued.Add(minReissueInterval)); wait > 0 {
		log.Info("The API server refuses the reissued token too; asking the hub again after a pause", "wait", wait)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
	log.Info("Asking the hub for new hub-cluster credentials", "reason", why)
	for {
		kc, err := c.Reissue(ctx)
		if err == nil {
			var cfg *rest.Config
			if cfg, err = clientcmd.RESTConfigFromKubeConfig(kc); err == nil && cfg.BearerToken == "" {
				err = errors.New("the reissued kubeconfig holds no token")
			}
			if err == nil {
				c.setToken(cfg.BearerToken)
				c.reissued = time.Now()
				bo.reset()
				c.drainRefused()
				exp := ""
				if cl, err := parseClaims(cfg.BearerToken); err == nil && cl.Expiry != 0 {
					exp = time.Unix(cl.Expiry, 0).UTC().Format(time.RFC3339)
				}
				log.Info("The hub reissued the hub-cluster credentials", "expires", exp)
				if c.OnRefresh != nil {
					if err := c.OnRefresh(ctx, kc); err != nil {
						log.Error(err, "Storing the reissued hub kubeconfig failed")
					}
				}
				return
			}
		}
		log.Error(err, "Reissuing the hub-cluster credentials failed; retrying with backoff")
		t := time.NewTimer(bo.next())
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// drainRefused forgets 401s of requests made with the replaced token.
func (c *Client) drainRefused() {
	select {
	case <-c.refused:
	default:
	}
}

func (c *Client) setToken(token string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.token = token
}

// backoff doubles from initial up to max.
type backoff struct {
	initial, max, cur time.Duration
}

func (b *backoff) next() time.Duration {
	if b.cur == 0 {
		b.cur = b.initial
	} else {
		b.cur = min(2*b.cur, b.max)
	}
	return b.cur
}

func (b *backoff) reset() { b.cur = 0 }

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
