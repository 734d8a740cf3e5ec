// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"time"
)

// corefile serves the cluster domain from the cluster's API server on the
// first real node's bridge address, port 53, where every pod's resolv.conf
// points (the kubelets' clusterDNS). There is no forwarder: the fleet has
// no upstream resolver to reach. No cache either, so a member that asks for
// a peer before its address is published gets it on the next try.
const corefile = `.:53 {
    bind %s
    errors
    loadbalance
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %q %q
        pods insecure
        ttl 5
    }
}
`

// startCoreDNS runs the cluster's DNS server as a host process and waits
// until it answers for kubernetes.default.
func (c *Cluster) startCoreDNS(ctx context.Context, f *Fleet) error {
	cf := filepath.Join(c.Dir, "Corefile")
	if err := os.WriteFile(cf, fmt.Appendf(nil, corefile, c.dnsIP(), c.Kubeconfig, c.Name), 0o644); err != nil {
		return err
	}
	p, err := f.add(c, "coredns", filepath.Join(f.opts.BinDir, "coredns"), []string{"-conf", cf})
	if err != nil {
		return err
	}
	r := Resolver(c.dnsIP())
	if err := poll(ctx, 60*time.Second, 200*time.Millisecond, p, func() bool {
		lctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		addrs, err := r.LookupHost(lctx, "kubernetes.default.svc.cluster.local")
		return err == nil && len(addrs) > 0
	}); err != nil {
		return fmt.Errorf("cluster %s: coredns: %w", c.Name, err)
	}
	return nil
}

// Resolver asks only the DNS server at ip:53 (a cluster's CoreDNS).
func Resolver(ip string) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, network, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, network, net.JoinHostPort(ip, "53"))
	}}
}
