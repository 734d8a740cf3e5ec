// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
)

// rendezvousEnv is the environment of the rendezvous contract
// (docs/rendezvous.md) for the member with global index memberIndex of
// reservation r, whose pods live in namespace: the same for single- and
// multi-cluster gangs.
func rendezvousEnv(j *v1alpha1.Job, r *ledger.Reservation, namespace string, memberIndex int32) []corev1.EnvVar {
	members := int32(len(r.Members))
	procs := j.Spec.ProcessesPerMember()
	port := masterPort(j)
	addr := v1alpha1.MasterAddr(j.Name, namespace)
	itoa := func(n int64) string { return strconv.FormatInt(n, 10) }
	idx, nodes, p := itoa(int64(memberIndex)), itoa(int64(members)), itoa(int64(procs))
	return []corev1.EnvVar{
		{Name: v1alpha1.EnvJob, Value: j.Name},
		{Name: v1alpha1.EnvGangSize, Value: nodes},
		{Name: v1alpha1.EnvMemberIndex, Value: idx},
		{Name: v1alpha1.EnvEpoch, Value: itoa(r.Epoch)},
		{Name: v1alpha1.EnvMasterAddr, Value: addr},
		{Name: v1alpha1.EnvMasterPort, Value: itoa(int64(port))},
		{Name: v1alpha1.EnvWorldSize, Value: itoa(int64(members) * int64(procs))},
		{Name: v1alpha1.EnvRank, Value: itoa(int64(memberIndex) * int64(procs))},
		{Name: v1alpha1.EnvNodeRank, Value: idx},
		{Name: v1alpha1.EnvLocalWorldSize, Value: p},
		{Name: v1alpha1.EnvPETNNodes, Value: nodes},
		{Name: v1alpha1.EnvPETNodeRank, Value: idx},
		{Name: v1alpha1.EnvPETMasterAddr, Value: addr},
		{Name: v1alpha1.EnvPETMasterPort, Value: itoa(int64(port))},
		{Name: v1alpha1.EnvPETNProcPerNode, Value: p},
	}
}

// rendezvousNames gives a member pod its stable DNS name under the job's
// headless Service, <job>-<index>.<job>.<namespace>, in whichever cluster
// it runs. A hostNetwork member resolves cluster names only with
// ClusterFirstWithHostNet, which it gets when the template leaves dnsPolicy
// unset.
func rendezvousNames(s *corev1.PodSpec, job string, memberIndex int32) {
	s.Hostname, s.Subdomain = v1alpha1.MemberHostname(job, memberIndex), v1alpha1.ServiceName(job)
	if s.HostNetwork && s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirstWithHostNet
	}
}
