// SPDX-License-Identifier: Apache-2.0

package main

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"

	"github.com/shoal-dev/shoal/agent"
	"github.com/shoal-dev/shoal/agent/fence"
	"github.com/shoal-dev/shoal/agent/nodehealth"
)

type options struct {
	hub, caHash, cluster          string
	tok                           tokenOptions
	endpoints                     endpointOptions
	kubeconfig, namespace         string
	topology                      topologyOptions
	labels                        map[string]string
	heartbeat                     time.Duration
	kubeletListen, kubeletAddress string
	kubeletClientCA               string
	kubeletAllowAnyClient         bool
	leaseSeconds                  int32
	metricsAddr                   string
	gitopsWorkDir                 string
	gitopsInterval                time.Duration
	nodeFailureGrace              time.Duration
	fenceTimeout                  time.Duration
	gpuFailureTaints              []string
	gpuFailureConditions          []string
	spotNodeTaints                []string
	spotNodeLabels                []string
}

func defaultOptions() *options {
	return &options{namespace: "shoal-system",
		heartbeat: 10 * time.Second, kubeletListen: ":10250", kubeletAddress: os.Getenv("POD_IP"),
		leaseSeconds: 40, metricsAddr: "127.0.0.1:8080", gitopsInterval: 30 * time.Second,
		nodeFailureGrace: nodehealth.DefaultGrace, fenceTimeout: fence.DefaultTimeout}
}

func (o *options) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.hub, "hub", o.hub, "hub gRPC address, host:port")
	o.tok.addFlags(fs)
	fs.StringVar(&o.caHash, "ca-hash", o.caHash, "pinned hub CA hash, sha256:<hex>, or several comma-separated (during a hub CA rotation; any one pins) (first registration only)")
	fs.StringVar(&o.cluster, "cluster-name", o.cluster, "this cluster's name in the federation")
	fs.StringVar(&o.kubeconfig, "kubeconfig", o.kubeconfig, "kubeconfig of the workload cluster (default: in-cluster)")
	fs.StringVar(&o.namespace, "namespace", o.namespace, "namespace of the agent and its credentials Secret")
	o.topology.addFlags(fs)
	fs.StringToStringVar(&o.labels, "labels", o.labels, "cluster labels, k=v,k2=v2 (region, provider…)")
	fs.DurationVar(&o.heartbeat, "heartbeat-interval", o.heartbeat, "time between heartbeats (the hub may ask for another)")
	fs.StringVar(&o.kubeletListen, "kubelet-listen", o.kubeletListen, "listen address of the first virtual node's kubelet endpoint (logs, exec, attach, port-forward, /pods, /stats/summary); each further virtual node listens on the next port (port 0: kernel-chosen ports)")
	fs.StringVar(&o.kubeletAddress, "kubelet-address", o.kubeletAddress, "IP the hub API server dials for logs/exec (default $POD_IP)")
	fs.StringVar(&o.kubeletClientCA, "kubelet-client-ca", o.kubeletClientCA,
		"PEM file of the CA that signs the hub API server's --kubelet-client-certificate (kubeadm: the cluster CA); "+
			"the kubelet endpoints refuse clients without a certificate it signed and check each request with a SubjectAccessReview on the hub")
	fs.BoolVar(&o.kubeletAllowAnyClient, "kubelet-insecure-allow-any-client", o.kubeletAllowAnyClient,
		"serve any client on the kubelet endpoints, unauthenticated and unauthorized (anyone reaching the ports can exec into members); "+
			"without it --kubelet-client-ca is required")
	fs.Int32Var(&o.leaseSeconds, "lease-duration", o.leaseSeconds, "virtual node lease duration in seconds")
	fs.StringVar(&o.metricsAddr, "metrics-addr", o.metricsAddr, "address of /metrics and /healthz (empty: off); plain HTTP on a loopback address, elsewhere only with --metrics-tls-cert/--metrics-tls-key/--metrics-client-ca")
	o.endpoints.addFlags(fs)
	fs.StringVar(&o.gitopsWorkDir, "gitops-workdir", o.gitopsWorkDir, "directory for GitOps checkouts; empty disables GitOps")
	fs.DurationVar(&o.gitopsInterval, "gitops-report-interval", o.gitopsInterval, "time between GitOps status reports to the hub")
	fs.DurationVar(&o.nodeFailureGrace, "node-failure-grace", o.nodeFailureGrace,
		"how long a gang member's node must be NotReady, short of bound GPUs or carry a GPU failure taint/condition before the member is stopped and reported Failed")
	fs.DurationVar(&o.fenceTimeout, "fence-timeout", o.fenceTimeout,
		"how long the agent may go without reaching the hub before it stops every gang member itself (reason Fenced) and refuses new ones until it reaches the hub again; at most the hub's --cluster-fence-timeout (the hub sends its own; a longer one gives way to it)")
	fs.StringSliceVar(&o.gpuFailureTaints, "gpu-failure-taints", o.gpuFailureTaints,
		"node taint keys that mean the node's GPUs failed (comma-separated)")
	fs.StringSliceVar(&o.gpuFailureConditions, "gpu-failure-conditions", o.gpuFailureConditions,
		"node condition types that, True, mean the node's GPUs failed (comma-separated)")
	fs.StringSliceVar(&o.spotNodeTaints, "spot-node-taint", nil,
		"taint keys that mark a spot or preemptible node to go (as its termination handler sets them): the gangs of its members are moved with their preemption grace, SIGTERM then the grace, without counting a restart, and the node takes no new gang")
	fs.StringSliceVar(&o.spotNodeLabels, "spot-node-label", nil,
		"node labels, key or key=value, that mark a spot or preemptible node to go, as --spot-node-taint")
}

func (o *options) config() (agent.Config, error) {
	if o.hub == "" || o.cluster == "" {
		return agent.Config{}, errors.New("--hub and --cluster-name are required")
	}
	if o.kubeletAddress == "" {
		o.kubeletAddress = os.Getenv("POD_IP")
	}
	if err := o.endpoints.validate(o.metricsAddr); err != nil {
		return agent.Config{}, err
	}
	topo, err := o.topology.choice()
	if err != nil {
		return agent.Config{}, err
	}
	token, err := o.tok.token(klog.Background().WithName("shoal-agent"))
	if err != nil {
		return agent.Config{}, err
	}
	local, err := localConfig(o.kubeconfig)
	if err != nil {
		return agent.Config{}, err
	}
	var gitOps agent.GitOpsFunc
	if o.gitopsWorkDir != "" {
		gitOps = agent.GitOps(o.gitopsWorkDir, o.namespace, o.gitopsInterval)
	}
	return agent.Config{
		GitOps:     gitOps,
		HubAddress: o.hub, Token: token, CAHash: o.caHash, Cluster: o.cluster, Local: local,
		Namespace: o.namespace, Labels: o.labels, HeartbeatInterval: o.heartbeat,
		Topology:      topo,
		KubeletListen: o.kubeletListen, KubeletAddress: o.kubeletAddress,
		KubeletClientCAFile: o.kubeletClientCA, KubeletInsecureAllowAnyClient: o.kubeletAllowAnyClient,
		LeaseDurationSeconds: o.leaseSeconds, Version: version,
		NodeFailureGrace: o.nodeFailureGrace, GPUFailureTaints: o.gpuFailureTaints, GPUFailureConditions: o.gpuFailureConditions,
		SpotNodeTaints: o.spotNodeTaints, SpotNodeLabels: o.spotNodeLabels,
		FenceTimeout: o.fenceTimeout,
	}, nil
}

func localConfig(path string) (*rest.Config, error) {
	if path == "" {
		cfg, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config (or pass --kubeconfig): %w", err)
		}
		return cfg, nil
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("--kubeconfig: %w", err)
	}
	return cfg, nil
}
