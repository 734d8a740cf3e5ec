// SPDX-License-Identifier: Apache-2.0

// Command coredns is CoreDNS v1.15 with only the plugins the local fleet's
// cluster DNS uses (bind, errors, log, loadbalance, cache, kubernetes), so it builds in a fraction of the time of the full
// distribution. The real-node fleet runs one per workload cluster as a host
// process serving its cluster domain from that cluster's API server.
package main

import (
	"github.com/coredns/coredns/core/dnsserver"
	"github.com/coredns/coredns/coremain"

	_ "github.com/coredns/coredns/plugin/bind"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
)

func init() {
	// The order of CoreDNS's own plugin.cfg, which is the order a query runs through them.
	dnsserver.Directives = []string{"bind", "errors", "log", "loadbalance", "cache", "kubernetes"}
}

func main() { coremain.Run() }
