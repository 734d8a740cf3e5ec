// Package fleet starts and stops a local, multi-cluster GPU fleet on loopback:
// one hub management cluster (etcd + kube-apiserver) and N workload clusters
// (etcd + kube-apiserver + kube-scheduler + kwok) whose nodes are KWOK fake
// nodes labelled and sized the way NVIDIA GPU Feature Discovery and the device
// plugin label and size real GPU nodes.
//
// The processes are real binaries from the binary cache (`make k8s-bin`). They
// outlive the process that started them: Up records every pid, with its start
// time, in a state file under the fleet directory, and Down stops exactly those
// processes. `shoal dev` and test/framework both use this package.
package fleet
