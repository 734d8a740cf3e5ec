// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"math/big"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// PauseImage is the sandbox image of every real node: the project's own
// shoal-pause, built locally and imported, never pulled.
const PauseImage = "shoal.local/pause:dev"

// containerdConfig is a containerd v2 configuration for one node: its own
// root, state and sockets; NRI off (its socket is host-wide); the sandbox
// image pinned to PauseImage; runc with cgroupfs; network namespaces under
// the state directory; and restrict_oom_score_adj, because a process here
// may not lower its OOM score (the pause container asks for -998).
const containerdConfig = `version = 3
root = %[1]q
state = %[2]q
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.internal.v1.tracing", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.differ.v1.erofs"]
[grpc]
  address = %[3]q
[ttrpc]
  address = %[4]q
[plugins]
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = 'overlayfs'
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %[5]q
  [plugins.'io.containerd.cri.v1.runtime']
    restrict_oom_score_adj = true
    netns_mounts_under_state_dir = true
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = 'io.containerd.runc.v2'
      runtime_path = %[6]q
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = %[7]q
        SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = [%[8]q]
      conf_dir = %[9]q
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = '127.0.0.1'
    stream_server_port = '0'
`

// cniConfig is the node's pod network: a bridge with the node's subnet
// (host-local IPAM), no masquerading, so pod IPs stay visible across nodes
// and clusters, and loopback.
const cniConfig = `{"cniVersion":"1.0.0","name":"shoal","plugins":[
 {"type":"bridge","bridge":%q,"isGateway":true,"ipMasq":false,"hairpinMode":true,
  "ipam":{"type":"host-local","dataDir":%q,"ranges":[[{"subnet":%q,"gateway":%q}]],"routes":[{"dst":"0.0.0.0/0"}]}},
 {"type":"loopback"}]}
`

// kubeletConfig is a lean kubelet for a shared host: webhook authentication
// and authorization against its API server (as in a real cluster), cgroupfs
// under its own cgroup root, cgroup v1 allowed, no eviction thresholds that
// a busy build machine would trip, and the cluster's CoreDNS.
const kubeletConfig = `apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %[1]q
port: %[2]d
healthzBindAddress: 127.0.0.1
healthzPort: %[3]d
readOnlyPort: 0
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: true}
  x509: {clientCAFile: %[4]q}
authorization: {mode: Webhook}
cgroupDriver: cgroupfs
cgroupRoot: %[5]q
failCgroupV1: false
failSwapOn: false
containerRuntimeEndpoint: %[6]q
imageServiceEndpoint: %[6]q
clusterDomain: cluster.local
clusterDNS: [%[7]q]
resolvConf: /etc/resolv.conf
podCIDR: %[8]q
podLogsDir: %[9]q
maxPods: 64
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: "1Mi", nodefs.available: "1%%", imagefs.available: "1%%", nodefs.inodesFree: "1%%"}
protectKernelDefaults: false
makeIPTablesUtilChains: false
enforceNodeAllocatable: []
nodeStatusReportFrequency: 10s
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
`

// writeRealNodeConfig writes n's containerd, CNI and kubelet configuration
// and its kubelet client certificate (system:node:<name>, signed by the
// fleet CA) with a kubeconfig for it.
func writeRealNodeConfig(c *Cluster, n *RealNode, binDir, pki, runc, cniBin string) error {
	for _, d := range []string{n.Dir, n.SocketDir, filepath.Join(n.Dir, "cni"), filepath.Join(n.Dir, "cni-data"), n.KubeletRoot(), n.PodLogsDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	files := map[string]string{
		"containerd.toml": fmt.Sprintf(containerdConfig, filepath.Join(n.Dir, "containerd", "root"), n.stateDir(),
			n.Socket(), n.Socket()+".ttrpc", PauseImage, filepath.Join(binDir, "containerd-shim-runc-v2"), runc, cniBin,
			filepath.Join(n.Dir, "cni")),
		filepath.Join("cni", "10-shoal.conflist"): fmt.Sprintf(cniConfig, n.Bridge, filepath.Join(n.Dir, "cni-data"), n.Subnet, n.IP),
		"kubelet.yaml": fmt.Sprintf(kubeletConfig, n.IP, n.KubeletPort, n.HealthzPort, filepath.Join(pki, caCertFile),
			n.CgroupRoot, "unix://"+n.Socket(), c.dnsIP(), n.Subnet, n.PodLogsDir()),
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(n.Dir, name), []byte(body), 0o644); err != nil {
			return err
		}
	}
	return writeNodeCredentials(c, n, pki)
}

// writeNodeCredentials issues the kubelet's client certificate and writes
// n.Dir/kubeconfig with it.
func writeNodeCredentials(c *Cluster, n *RealNode, pki string) error {
	ca, err := tls.LoadX509KeyPair(filepath.Join(pki, caCertFile), filepath.Join(pki, caKeyFile))
	if err != nil {
		return fmt.Errorf("real node %s: load fleet CA: %w", n.Name, err)
	}
	caCert, err := x509.ParseCertificate(ca.Certificate[0])
	if err != nil {
		return err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: "system:node:" + n.Name, Organization: []string{"system:nodes"}},
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	signer, ok := ca.PrivateKey.(crypto.Signer)
	if !ok {
		return fmt.Errorf("real node %s: fleet CA key is not a signer", n.Name)
	}
	if err := issue(n.Dir, "kubelet-client.crt", "kubelet-client.key", tmpl, caCert, signer); err != nil {
		return err
	}
	caPEM, err := os.ReadFile(filepath.Join(pki, caCertFile))
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos[n.Name] = &clientcmdapi.AuthInfo{ClientCertificate: filepath.Join(n.Dir, "kubelet-client.crt"),
		ClientKey: filepath.Join(n.Dir, "kubelet-client.key")}
	cfg.Contexts[n.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: n.Name}
	cfg.CurrentContext = n.Name
	return clientcmd.WriteToFile(*cfg, filepath.Join(n.Dir, "kubeconfig"))
}
