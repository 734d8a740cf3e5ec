// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/etcdserver/api/v3client"
	"go.uber.org/zap"
)

// DefaultPrefix is the key prefix used when Config.Prefix is empty.
const DefaultPrefix = "/shoal/"

// Config selects an embedded etcd (DataDir, no Endpoints) or an external
// etcd cluster (Endpoints, usually with TLS).
type Config struct {
	// DataDir is the embedded etcd's data directory; used when Endpoints is empty.
	DataDir string
	// Endpoints are the client URLs of an external etcd cluster.
	Endpoints []string
	// TLS is the client TLS configuration for an external etcd cluster.
	TLS *tls.Config
	// Prefix is prepended to every key; default DefaultPrefix. It must end with "/".
	Prefix string
	// DialTimeout bounds the first connection; default 10s.
	DialTimeout time.Duration
	// ElectionTTL is the session TTL behind Campaign: how long a crashed
	// leader keeps leadership. Default 10s; etcd rounds up to whole seconds.
	ElectionTTL time.Duration
	// Embedded tunes the embedded etcd; ignored with Endpoints.
	Embedded EmbeddedConfig
	// SessionFile, when set, is where the store records the leases of its
	// election sessions; Open revokes the leases a previous process
	// recorded there, so that a restarted replica does not wait out its
	// own old leadership (sessions.go). One process per file: the file
	// belongs in the replica's own data directory.
	SessionFile string
}

// Store is a connection to etcd (and the embedded etcd server, when it runs
// one). It is safe for concurrent use.
type Store struct {
	client      *clientv3.Client
	server      *embedded
	prefix      string
	electionTTL time.Duration
	sessions    *sessionFile
	revoked     int
}

// Open connects to the external etcd cluster named by cfg.Endpoints, or
// starts an embedded etcd in cfg.DataDir and connects to it. ctx bounds
// only the start: the store outlives it. Close releases both.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = DefaultPrefix
	}
	if !strings.HasSuffix(prefix, "/") {
		return nil, fmt.Errorf("store: prefix %q must end with /", prefix)
	}
	if cfg.DialTimeout == 0 {
		cfg.DialTimeout = 10 * time.Second
	}
	if cfg.ElectionTTL == 0 {
		cfg.ElectionTTL = 10 * time.Second
	}
	s := &Store{prefix: prefix, electionTTL: cfg.ElectionTTL, sessions: newSessionFile(cfg.SessionFile)}
	endpoints, tlsCfg := cfg.Endpoints, cfg.TLS
	if len(endpoints) == 0 {
		if cfg.DataDir == "" {
			return nil, errors.New("store: set DataDir (embedded etcd) or Endpoints (external etcd)")
		}
		srv, err := startEmbedded(ctx, cfg.DataDir, cfg.Embedded)
		for attempt := 1; attempt < 3 && errors.Is(err, syscall.EADDRINUSE) &&
			cfg.Embedded.ClientAddr == "" && cfg.Embedded.PeerAddr == ""; attempt++ {
			// Another process took the free port we picked: pick again.
			srv, err = startEmbedded(ctx, cfg.DataDir, cfg.Embedded)
		}
		if err != nil {
			return nil, err
		}
		s.server = srv
		endpoints = []string{srv.Clients[0].Addr().String()}
		tlsCfg = nil
	}
	cli, err := s.newClient(endpoints, tlsCfg, cfg)
	if err == nil {
		err = checkReachable(ctx, cli, cfg.DialTimeout)
	}
	if err != nil {
		if cli != nil {
			_ = cli.Close()
		}
		s.stopServer()
		return nil, fmt.Errorf("store: connect to etcd %v: %w", endpoints, err)
	}
	s.client = cli
	if cfg.SessionFile != "" {
		rctx, cancel := context.WithTimeout(ctx, cfg.DialTimeout)
		s.revoked, err = revokeStale(rctx, cli, cfg.SessionFile)
		cancel()
		if err != nil {
			_ = s.Close()
			return nil, err
		}
	}
	return s, nil
}

// RevokedSessions is how many election sessions of a previous process
// Open revoked (Config.SessionFile).
func (s *Store) RevokedSessions() int { return s.revoked }

// newClient connects to etcd: through in-process calls to the embedded
// server (no gRPC, about half the CPU per request) unless
// Embedded.NetworkClient asks for its loopback listener, else over gRPC.
func (s *Store) newClient(endpoints []string, tlsCfg *tls.Config, cfg Config) (*clientv3.Client, error) {
	if s.server != nil && !cfg.Embedded.NetworkClient {
		return v3client.New(s.server.Server), nil
	}
	return clientv3.New(clientv3.Config{
		Endpoints:          endpoints,
		TLS:                tlsCfg,
		DialTimeout:        cfg.DialTimeout,
		DialKeepAliveTime:  10 * time.Second,
		Logger:             zap.NewNop(),
		MaxCallSendMsgSize: 8 << 20,
		MaxCallRecvMsgSize: 256 << 20,
	})
}

// checkReachable does one linearizable read so Open fails fast when etcd
// cannot serve requests.
func checkReachable(ctx context.Context, cli *clientv3.Client, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	_, err := cli.Get(ctx, "health", clientv3.WithCountOnly())
	return err
}

// Close closes the client and stops the embedded etcd, if any.
func (s *Store) Close() error {
	err := s.client.Close()
	if errors.Is(err, context.Canceled) { // how the in-process client reports a clean close
		err = nil
	}
	s.stopServer()
	return err
}

func (s *Store) stopServer() {
	if s.server != nil {
		s.server.Close()
		s.server = nil
	}
}

// Embedded reports whether the store runs its own etcd server.
func (s *Store) Embedded() bool { return s.server != nil }

// ClientURL is the embedded etcd's client URL ("" with external etcd), for
// debugging with etcdctl.
func (s *Store) ClientURL() string {
	if s.server == nil {
		return ""
	}
	return "http://" + s.server.Clients[0].Addr().String()
}

// Prefix is the key prefix of every object.
func (s *Store) Prefix() string { return s.prefix }

// Revision returns etcd's current revision.
func (s *Store) Revision(ctx context.Context) (int64, error) {
	resp, err := s.client.Get(ctx, s.prefix, clientv3.WithCountOnly())
	if err != nil {
		return 0, mapErr(err)
	}
	return resp.Header.Revision, nil
}

// Compact discards the history before revision rev. Watches and continued
// lists from older revisions then fail with ErrCompacted. The embedded etcd
// compacts on its own (EmbeddedConfig.CompactionRetention); operators and
// tests call this directly.
func (s *Store) Compact(ctx context.Context, rev int64) error {
	_, err := s.client.Compact(ctx, rev, clientv3.WithCompactPhysical())
	return mapErr(err)
}
