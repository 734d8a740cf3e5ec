// SPDX-License-Identifier: Apache-2.0

package devfleet

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

func etcdArgs(c *Cluster) []string {
	client := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.EtcdClient)
	peer := fmt.Sprintf("http://127.0.0.1:%d", c.Ports.EtcdPeer)
	return []string{
		"--name=" + c.Name, "--data-dir=" + filepath.Join(c.Dir, "etcd-data"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=" + c.Name + "=" + peer,
		// A throwaway dev store: skip fsync, keep the log quiet, allow a big fleet.
		"--unsafe-no-fsync", "--log-level=warn", "--quota-backend-bytes=8589934592",
	}
}

// apiserverArgs keeps kube-apiserver lean for small machines: no priority and
// fairness, no profiling (SHOAL_DEV_PROFILING=1 turns /debug/pprof on, to
// profile a benchmark's API servers). The admission plugins that rely on a full control
// plane are off: ServiceAccount (KWOK pods need no tokens; the hub cluster
// has no controller making service accounts) and TaintNodesByCondition (its
// not-ready taint would never be lifted). With saTokens (a cluster whose
// agent runs as the chart's pod under an AgentStarter) ServiceAccount is on,
// so pods get their ServiceAccount's token, as on a real cluster.
func apiserverArgs(c *Cluster, pki string, saTokens bool) []string {
	p := func(f string) string { return filepath.Join(pki, f) }
	return append(nativeGangArgs(c, true), []string{
		fmt.Sprintf("--etcd-servers=http://127.0.0.1:%d", c.Ports.EtcdClient),
		fmt.Sprintf("--secure-port=%d", c.Ports.APIServer),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--tls-cert-file=" + p(servingCert), "--tls-private-key-file=" + p(servingKey),
		"--client-ca-file=" + p(caCertFile),
		// As a real control plane does: authenticate to the kubelets
		// (real nodes check it by webhook) for logs, exec and port-forward.
		"--kubelet-client-certificate=" + p(adminCertFile), "--kubelet-client-key=" + p(adminKeyFile),
		// Nodes have no DNS names here: reach kubelets by InternalIP.
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + p(saPublicFile),
		"--service-account-signing-key-file=" + p(saPrivateFile),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--authorization-mode=Node,RBAC",
		"--disable-admission-plugins=" + disabledAdmission(saTokens),
		"--enable-priority-and-fairness=false",
		"--profiling=" + strconv.FormatBool(os.Getenv("SHOAL_DEV_PROFILING") != ""), "--allow-privileged=true",
		"--endpoint-reconciler-type=none",
		"--max-requests-inflight=1000", "--max-mutating-requests-inflight=500",
		"--v=0",
	}...)
}

// nativeGangArgs turn on the native gang API (GenericWorkload) in a
// cluster with NativeGang: the feature gates, and on kube-apiserver the
// beta group version that serves PodGroups. TopologyAwareWorkloadScheduling
// (alpha in v1.37) lets a PodGroup carry the slice's topology constraint.
func nativeGangArgs(c *Cluster, apiserver bool) []string {
	if !c.NativeGang {
		return nil
	}
	args := []string{"--feature-gates=GenericWorkload=true,TopologyAwareWorkloadScheduling=true"}
	if apiserver {
		args = append(args, "--runtime-config=scheduling.k8s.io/v1beta1=true")
	}
	return args
}

// disabledAdmission is kube-apiserver's --disable-admission-plugins.
func disabledAdmission(saTokens bool) string {
	if saTokens {
		return "TaintNodesByCondition"
	}
	return "ServiceAccount,TaintNodesByCondition"
}

const schedulerConfig = `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %q
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`

func schedulerArgs(c *Cluster) ([]string, error) {
	cfg := filepath.Join(c.Dir, "kube-scheduler.yaml")
	if err := os.WriteFile(cfg, fmt.Appendf(nil, schedulerConfig, c.Kubeconfig), 0o600); err != nil {
		return nil, err
	}
	return append(nativeGangArgs(c, false), []string{
		"--config=" + cfg,
		"--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		fmt.Sprintf("--secure-port=%d", c.Ports.Scheduler), "--bind-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(c.Dir, "scheduler-certs"),
		// No front proxy here: skip the lookup of its CA (it only logs errors).
		"--authentication-skip-lookup=true",
		"--v=0",
	}...), nil
}

// kwokArgs makes kwok manage only the fleet's annotated fake nodes, without
// node leases (thousands of lease renewals would dominate a small machine).
// With a Kwok port it also serves the nodes' kubelet endpoint on loopback
// (TLS with the API servers' certificate), so that `kubectl logs` returns the
// simulated container log config names; config is writeKwokConfig's.
func kwokArgs(c *Cluster, stages []string, pki, config string) []string {
	args := []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--manage-all-nodes=false",
		"--manage-nodes-with-annotation-selector=" + AnnotationKWOKNode + "=fake",
		"--node-lease-duration-seconds=0",
		"--cidr=10.64.0.1/10",
		"--config=" + config,
	}
	if c.Ports.Kwok != 0 {
		args = append(args, "--node-ip=127.0.0.1", fmt.Sprintf("--node-port=%d", c.Ports.Kwok),
			fmt.Sprintf("--server-address=127.0.0.1:%d", c.Ports.Kwok),
			"--tls-cert-file="+filepath.Join(pki, servingCert), "--tls-private-key-file="+filepath.Join(pki, servingKey))
	}
	for _, s := range stages {
		args = append(args, "--config="+s)
	}
	return args
}

// controllerManagerArgs runs every default controller except node lifecycle
// (KWOK nodes send no heartbeats), signing CSRs and service-account tokens
// with the fleet's keys.
func controllerManagerArgs(c *Cluster, pki string) []string {
	p := func(f string) string { return filepath.Join(pki, f) }
	return []string{
		"--kubeconfig=" + c.Kubeconfig,
		"--authentication-kubeconfig=" + c.Kubeconfig, "--authorization-kubeconfig=" + c.Kubeconfig,
		"--authentication-skip-lookup=true",
		fmt.Sprintf("--secure-port=%d", c.Ports.ControllerManager), "--bind-address=127.0.0.1",
		"--cert-dir=" + filepath.Join(c.Dir, "controller-manager-certs"),
		"--leader-elect=false",
		"--controllers=*,-nodelifecycle",
		"--service-account-private-key-file=" + p(saPrivateFile), "--root-ca-file=" + p(caCertFile),
		"--cluster-signing-cert-file=" + p(caCertFile), "--cluster-signing-key-file=" + p(caKeyFile),
		"--kube-api-qps=500", "--kube-api-burst=1000",
		"--v=0",
	}
}
