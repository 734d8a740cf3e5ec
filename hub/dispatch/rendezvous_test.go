// SPDX-License-Identifier: Apache-2.0

package dispatch

import (
	"maps"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testpod"
)

// reservation is a reservation of n members split over clusters in turn.
func reservation(epoch int64, n int, clusters ...string) *ledger.Reservation {
	r := &ledger.Reservation{Epoch: epoch, Clusters: clusters}
	for i := range n {
		r.Members = append(r.Members, ledger.Member{Index: int32(i), Cluster: clusters[i%len(clusters)]})
	}
	return r
}

func TestRendezvousEnv(t *testing.T) {
	tests := []struct {
		name   string
		job    *v1alpha1.Job
		res    *ledger.Reservation
		member int32
		want   map[string]string
	}{
		{"one cluster, default port, one process per GPU", testjob.New("llama").Members(2).GPUs(8).Obj(),
			reservation(3, 2, "eu1"), 1, map[string]string{
				"MASTER_ADDR": "llama-0.llama.shoal-jobs", "MASTER_PORT": "29500", "WORLD_SIZE": "16", "RANK": "8",
				"NODE_RANK": "1", "LOCAL_WORLD_SIZE": "8", "PET_NNODES": "2", "PET_NODE_RANK": "1",
				"PET_MASTER_ADDR": "llama-0.llama.shoal-jobs", "PET_MASTER_PORT": "29500", "PET_NPROC_PER_NODE": "8",
				"SHOAL_JOB": "llama", "SHOAL_GANG_SIZE": "2", "SHOAL_MEMBER_INDEX": "1", "SHOAL_EPOCH": "3"}},
		{"two clusters get the same contract", testjob.New("mix").Members(4).GPUs(2).With(func(j *v1alpha1.Job) {
			j.Spec.Rendezvous = v1alpha1.Rendezvous{Port: 1234, ProcessesPerMember: 1}
		}).Obj(), reservation(1, 4, "eu1", "us1"), 3, map[string]string{
			"MASTER_ADDR": "mix-0.mix.shoal-jobs", "MASTER_PORT": "1234", "WORLD_SIZE": "4", "RANK": "3",
			"NODE_RANK": "3", "LOCAL_WORLD_SIZE": "1", "PET_NNODES": "4", "PET_NODE_RANK": "3",
			"PET_MASTER_ADDR": "mix-0.mix.shoal-jobs", "PET_MASTER_PORT": "1234", "PET_NPROC_PER_NODE": "1",
			"SHOAL_JOB": "mix", "SHOAL_GANG_SIZE": "4", "SHOAL_MEMBER_INDEX": "3", "SHOAL_EPOCH": "1"}},
		{"member 0 is rank 0; MIG slices count processes", testjob.New("m").Members(3).GPUs(0).With(func(j *v1alpha1.Job) {
			j.Spec.Gang.MIG = &v1alpha1.MIGRequest{Profile: "1g.10gb", PerMember: 2}
		}).Obj(), reservation(7, 3, "eu1", "us1"), 0, map[string]string{
			"MASTER_ADDR": "m-0.m.shoal-jobs", "MASTER_PORT": "29500", "WORLD_SIZE": "6", "RANK": "0",
			"NODE_RANK": "0", "LOCAL_WORLD_SIZE": "2", "PET_NNODES": "3", "PET_NODE_RANK": "0",
			"PET_MASTER_ADDR": "m-0.m.shoal-jobs", "PET_MASTER_PORT": "29500", "PET_NPROC_PER_NODE": "2",
			"SHOAL_JOB": "m", "SHOAL_GANG_SIZE": "3", "SHOAL_MEMBER_INDEX": "0", "SHOAL_EPOCH": "7"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := map[string]string{}
			for _, e := range rendezvousEnv(tc.job, tc.res, "shoal-jobs", tc.member) {
				if _, dup := got[e.Name]; dup {
					t.Errorf("%s set twice", e.Name)
				}
				got[e.Name] = e.Value
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("env\n got %v\nwant %v", got, tc.want)
			}
			// The role variables are set by setRole, on jobs with roles
			// only; the resume ones by resume, on jobs with a checkpoint.
			reserved := slices.DeleteFunc(slices.Clone(v1alpha1.ReservedEnvNames), func(n string) bool {
				return n == v1alpha1.EnvRole || n == v1alpha1.EnvRoleIndex || n == v1alpha1.EnvResumeURI || n == v1alpha1.EnvResumeStep
			})
			if len(got) != len(reserved) {
				t.Errorf("%d variables set, %d reserved: the reserved list and the env disagree", len(got), len(reserved))
			}
			for _, n := range reserved {
				if _, ok := got[n]; !ok {
					t.Errorf("reserved %s not set", n)
				}
			}
		})
	}
}

// TestMemberPodNames: every member, of a one- or a two-cluster gang, gets its
// host name under the Service and the env; hostNetwork members get the DNS
// policy that resolves cluster names.
func TestMemberPodNames(t *testing.T) {
	d := &Dispatcher{cfg: Config{Namespace: "shoal-jobs"}}
	for _, hostNet := range []bool{false, true} {
		j := testjob.New("g").Members(4).GPUs(1).With(func(j *v1alpha1.Job) { j.Spec.Template.Spec.HostNetwork = hostNet }).Obj()
		r := reservation(2, 4, "eu1", "us1")
		for _, m := range r.Members {
			p := d.memberPod(j, r, m, v1alpha1.PodSecurityPrivileged)
			if p.Namespace != v1alpha1.ClusterNamespace(m.Cluster) {
				t.Errorf("member %d on %s in namespace %s", m.Index, m.Cluster, p.Namespace)
			}
			if p.Spec.Hostname != "g-"+strconv.Itoa(int(m.Index)) || p.Spec.Subdomain != "g" {
				t.Errorf("member %d on %s: hostname %q subdomain %q", m.Index, m.Cluster, p.Spec.Hostname, p.Spec.Subdomain)
			}
			want := corev1.DNSPolicy("")
			if hostNet {
				want = corev1.DNSClusterFirstWithHostNet
			}
			if p.Spec.DNSPolicy != want {
				t.Errorf("hostNetwork %v: dnsPolicy %q, want %q", hostNet, p.Spec.DNSPolicy, want)
			}
			env := map[string]string{}
			for _, e := range p.Spec.Containers[0].Env {
				env[e.Name] = e.Value
			}
			// MASTER_ADDR names the queue's namespace of the workload clusters,
			// where the agents mirror the Service, not the hub's.
			if env["MASTER_ADDR"] != "g-0.g."+v1alpha1.LocalMemberNamespace(j.Spec.Queue) || env["NODE_RANK"] != strconv.Itoa(int(m.Index)) {
				t.Errorf("member %d env %v", m.Index, env)
			}
			if p.Annotations[v1alpha1.AnnotationQueue] != j.Spec.Queue || p.Annotations[v1alpha1.AnnotationPodSecurity] != "privileged" {
				t.Errorf("member %d annotations %v: want the queue and its pod-security level", m.Index, p.Annotations)
			}
		}
	}
	j := testjob.New("g").With(func(j *v1alpha1.Job) {
		j.Spec.Template.Spec.HostNetwork, j.Spec.Template.Spec.DNSPolicy = true, corev1.DNSDefault
	}).Obj()
	r := reservation(1, 1, "eu1")
	if p := d.memberPod(j, r, r.Members[0], v1alpha1.PodSecurityPrivileged); p.Spec.DNSPolicy != corev1.DNSDefault {
		t.Errorf("the template's dnsPolicy was replaced: %q", p.Spec.DNSPolicy)
	}
}

// member is a hub member pod of job g with index i and the given IPs.
func member(i int, podIP, hostIP string) *testpod.Wrapper {
	return testpod.New("g-e1-"+strconv.Itoa(i)).Label(v1alpha1.LabelMember, strconv.Itoa(i)).
		Phase(corev1.PodRunning).IPs(podIP, hostIP)
}

func TestEndpointSlices(t *testing.T) {
	j := testjob.New("g").Members(4).Obj()
	deleting := member(4, "10.0.0.5", "192.168.0.5").Obj()
	deleting.DeletionTimestamp = &metav1.Time{}
	type ep struct{ host, ip string }
	tests := []struct {
		name string
		pods []*corev1.Pod
		want map[discoveryv1.AddressType][]ep // slices in order of name, by family
	}{
		{"no member has an address yet: one empty slice", []*corev1.Pod{member(0, "", "").Obj()},
			map[discoveryv1.AddressType][]ep{discoveryv1.AddressTypeIPv4: nil}},
		{"members of two clusters in index order; ended and terminating ones left out", []*corev1.Pod{
			member(3, "10.2.0.7", "192.168.2.1").Obj(), member(0, "10.1.0.4", "192.168.1.1").Obj(),
			member(2, "10.2.0.6", "192.168.2.1").Obj(), member(1, "10.1.0.5", "192.168.1.1").Obj(),
			member(5, "10.1.0.9", "192.168.1.1").Phase(corev1.PodSucceeded).Obj(), deleting,
		}, map[discoveryv1.AddressType][]ep{discoveryv1.AddressTypeIPv4: {
			{"g-0", "10.1.0.4"}, {"g-1", "10.1.0.5"}, {"g-2", "10.2.0.6"}, {"g-3", "10.2.0.7"}}}},
		{"hostNetwork members are listed by their node's IP", []*corev1.Pod{
			member(0, "10.1.0.4", "192.168.1.1").HostNetwork().Obj(), member(1, "", "192.168.2.1").HostNetwork().Obj(),
		}, map[discoveryv1.AddressType][]ep{discoveryv1.AddressTypeIPv4: {{"g-0", "192.168.1.1"}, {"g-1", "192.168.2.1"}}}},
		{"loopback, link-local and unspecified addresses are not listed", []*corev1.Pod{
			member(0, "127.0.0.1", "").Obj(), member(1, "169.254.1.1", "").Obj(), member(2, "0.0.0.0", "").Obj(),
			member(3, "fe80::1", "").Obj(), member(4, "10.1.0.9", "").Obj(), member(5, "not-an-ip", "").Obj(),
		}, map[discoveryv1.AddressType][]ep{discoveryv1.AddressTypeIPv4: {{"g-4", "10.1.0.9"}}}},
		{"IPv6 members get their own slice", []*corev1.Pod{
			member(0, "fd00::1", "").Obj(), member(1, "10.1.0.5", "").Obj(),
		}, map[discoveryv1.AddressType][]ep{discoveryv1.AddressTypeIPv4: {{"g-1", "10.1.0.5"}},
			discoveryv1.AddressTypeIPv6: {{"g-0", "fd00::1"}}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slices := endpointSlices(j, "shoal-jobs", tc.pods)
			if len(slices) != len(tc.want) {
				t.Fatalf("%d slices, want %d", len(slices), len(tc.want))
			}
			for k, s := range slices {
				if s.Name != "g-rdv-"+strconv.Itoa(k) || s.Namespace != "shoal-jobs" {
					t.Errorf("slice %d named %s/%s", k, s.Namespace, s.Name)
				}
				wantLabels := map[string]string{discoveryv1.LabelServiceName: "g", discoveryv1.LabelManagedBy: "shoal-hub",
					v1alpha1.LabelJob: "g"}
				if !maps.Equal(s.Labels, wantLabels) {
					t.Errorf("labels %v, want %v", s.Labels, wantLabels)
				}
				if len(s.Ports) != 1 || *s.Ports[0].Port != 29500 || *s.Ports[0].Protocol != corev1.ProtocolTCP {
					t.Errorf("ports %+v", s.Ports)
				}
				want, ok := tc.want[s.AddressType]
				if !ok {
					t.Fatalf("slice of %s, none wanted", s.AddressType)
				}
				var got []ep
				for _, e := range s.Endpoints {
					if len(e.Addresses) != 1 || e.Hostname == nil || e.Conditions.Ready == nil || !*e.Conditions.Ready {
						t.Fatalf("endpoint %+v", e)
					}
					got = append(got, ep{*e.Hostname, e.Addresses[0]})
				}
				if len(got) != len(want) || len(got) > 0 && !equalEps(got, want) {
					t.Errorf("%s endpoints %v, want %v", s.AddressType, got, want)
				}
			}
		})
	}
}

func equalEps[T comparable](a, b []T) bool {
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestEndpointSlicesChunk: a gang larger than a slice holds is split into
// slices of MaxEndpointsPerSlice, in index order.
func TestEndpointSlicesChunk(t *testing.T) {
	n := v1alpha1.MaxEndpointsPerSlice*2 + 1
	j := testjob.New("g").Members(int32(n)).Obj()
	pods := make([]*corev1.Pod, n)
	for i := range pods {
		pods[i] = member(i, "10.0."+strconv.Itoa(i/256)+"."+strconv.Itoa(i%256), "").Obj()
	}
	slices := endpointSlices(j, "shoal-jobs", pods)
	if len(slices) != 3 || len(slices[0].Endpoints) != v1alpha1.MaxEndpointsPerSlice ||
		len(slices[1].Endpoints) != v1alpha1.MaxEndpointsPerSlice || len(slices[2].Endpoints) != 1 {
		t.Fatalf("%d slices", len(slices))
	}
	if h := *slices[1].Endpoints[0].Hostname; h != "g-"+strconv.Itoa(v1alpha1.MaxEndpointsPerSlice) {
		t.Errorf("second slice starts with %s", h)
	}
	if h := *slices[2].Endpoints[0].Hostname; h != "g-"+strconv.Itoa(n-1) {
		t.Errorf("last slice holds %s", h)
	}
}
