// SPDX-License-Identifier: Apache-2.0

package store

import (
	"context"
	"fmt"
	"net/url"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/shoal-dev/shoal/internal/freeport"
)

// EmbeddedConfig tunes the embedded etcd. The zero value is a safe default.
type EmbeddedConfig struct {
	// ClientAddr and PeerAddr are loopback host:port listen addresses;
	// default: free loopback ports picked at start.
	ClientAddr, PeerAddr string
	// StartTimeout bounds the wait for the server to be ready; default 60s.
	StartTimeout time.Duration
	// CompactionRetention is how much history etcd keeps for watches to
	// resume from; default 5m (periodic compaction, like kube-apiserver).
	CompactionRetention time.Duration
	// QuotaBackendBytes caps the database size; default 8 GiB.
	QuotaBackendBytes int64
	// MaxTxnOps is the most operations one Txn may hold; default 4096
	// (etcd's own default, 128, is too small for the ledger entries of a
	// large gang).
	MaxTxnOps uint
	// LogLevel of etcd's own logs; default "error".
	LogLevel string
	// NetworkClient makes the store talk to its embedded etcd over the
	// loopback gRPC listener, like an external client, instead of through
	// in-process calls. It costs about twice the CPU per request; for
	// debugging and comparison.
	NetworkClient bool
	// UnsafeNoFsync turns off fsync: a crash can lose acknowledged writes
	// or corrupt the data directory. Only for throwaway benchmarks and tests.
	UnsafeNoFsync bool
}

// embedded is a running embedded etcd.
type embedded struct {
	*embed.Etcd
	logLevel zap.AtomicLevel
}

// Close stops the server. The listeners' "server closed" errors that etcd
// logs while stopping are silenced.
func (e *embedded) Close() {
	e.logLevel.SetLevel(zapcore.FatalLevel)
	e.Etcd.Close()
}

// startEmbedded starts a single-member etcd in dir and waits until it serves.
func startEmbedded(ctx context.Context, dir string, ec EmbeddedConfig) (*embedded, error) {
	cfg, err := embeddedConfig(dir, ec)
	if err != nil {
		return nil, err
	}
	level, err := zap.ParseAtomicLevel(cfg.LogLevel)
	if err != nil {
		return nil, fmt.Errorf("store: embedded etcd log level: %w", err)
	}
	zc := zap.NewProductionConfig()
	zc.Level = level
	zc.DisableStacktrace = true
	lg, err := zc.Build()
	if err != nil {
		return nil, fmt.Errorf("store: embedded etcd logger: %w", err)
	}
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(lg.Named("etcd"))
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return nil, fmt.Errorf("store: start embedded etcd in %s: %w", dir, err)
	}
	srv := &embedded{Etcd: e, logLevel: level}
	timeout := ec.StartTimeout
	if timeout == 0 {
		timeout = 60 * time.Second
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-srv.Server.ReadyNotify():
		return srv, nil
	case err := <-srv.Err():
		srv.Close()
		return nil, fmt.Errorf("store: embedded etcd in %s failed: %w", dir, err)
	case <-t.C:
		srv.Close()
		return nil, fmt.Errorf("store: embedded etcd in %s not ready after %s", dir, timeout)
	case <-ctx.Done():
		srv.Close()
		return nil, ctx.Err()
	}
}

func embeddedConfig(dir string, ec EmbeddedConfig) (*embed.Config, error) {
	cfg := embed.NewConfig()
	cfg.Name = "shoal-hub"
	cfg.Dir = dir
	cfg.LogLevel = ec.LogLevel
	if cfg.LogLevel == "" {
		cfg.LogLevel = "error"
	}
	cfg.EnableGRPCGateway = false
	cfg.AutoCompactionMode = embed.CompactorModePeriodic
	cfg.AutoCompactionRetention = "5m"
	if ec.CompactionRetention > 0 {
		cfg.AutoCompactionRetention = ec.CompactionRetention.String()
	}
	cfg.QuotaBackendBytes = 8 << 30
	if ec.QuotaBackendBytes > 0 {
		cfg.QuotaBackendBytes = ec.QuotaBackendBytes
	}
	// The raft log held in memory: up to SnapshotCount entries past the
	// last snapshot, and SnapshotCatchUpEntries kept after it for a slow
	// follower. Each entry is a whole request (a booking of a large gang
	// is tens of KB); with etcd's defaults (10,000 and 5,000) they were
	// 53 MB of the hub's 380 MB live heap with 20,000 jobs
	// (docs/scale.md). An embedded etcd has no follower: it keeps few
	// entries past a snapshot and snapshots twice as often (a snapshot of
	// this single member is a backend commit and a small file).
	cfg.SnapshotCount = 5000
	cfg.SnapshotCatchUpEntries = 500
	cfg.MaxTxnOps = 4096
	if ec.MaxTxnOps > 0 {
		cfg.MaxTxnOps = ec.MaxTxnOps
	}
	cfg.UnsafeNoFsync = ec.UnsafeNoFsync
	clientURL, err := loopbackURL(ec.ClientAddr)
	if err != nil {
		return nil, err
	}
	peerURL, err := loopbackURL(ec.PeerAddr)
	if err != nil {
		return nil, err
	}
	cfg.ListenClientUrls = []url.URL{*clientURL}
	cfg.AdvertiseClientUrls = []url.URL{*clientURL}
	cfg.ListenPeerUrls = []url.URL{*peerURL}
	cfg.AdvertisePeerUrls = []url.URL{*peerURL}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	return cfg, nil
}

// loopbackURL returns http://addr, or a free loopback port when addr is empty.
func loopbackURL(addr string) (*url.URL, error) {
	if addr == "" {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		addr = fmt.Sprintf("127.0.0.1:%d", port)
	}
	return url.Parse("http://" + addr)
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago, out
// of the range the kernel gives outgoing connections (internal/freeport).
func FreePort() (int, error) {
	p, err := freeport.Pick("127.0.0.1")
	if err != nil {
		return 0, fmt.Errorf("store: find a free port: %w", err)
	}
	return p, nil
}
