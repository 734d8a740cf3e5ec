// SPDX-License-Identifier: Apache-2.0

package framework

import (
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
)

// DialHub connects to the hub named by context of the shoal CLI config at
// configPath (a fleet's admin config: devfleet.ShoalContext), over mTLS
// with that context's identity; the connection closes when t ends.
func DialHub(t testing.TB, configPath, context string) *grpc.ClientConn {
	t.Helper()
	cfg, err := configv1alpha1.Load(configPath)
	if err != nil {
		t.Fatal(err)
	}
	hctx, err := cfg.Context(context)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := hctx.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	conn, err := grpc.NewClient(hctx.Hub, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	return conn
}
