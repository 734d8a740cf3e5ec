// SPDX-License-Identifier: Apache-2.0

package server

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	fr "github.com/shoal-dev/shoal/federation/rollout"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/registry"
)

// fuzzRequests are the request messages the hub's gRPC services receive;
// a fuzz input's first byte picks one.
var fuzzRequests = []func() proto.Message{
	func() proto.Message { return &shoalv1.SubmitJobRequest{} },
	func() proto.Message { return &shoalv1.CreateQueueRequest{} },
	func() proto.Message { return &shoalv1.UpdateQueueRequest{} },
	func() proto.Message { return &shoalv1.RegisterRequest{} },
	func() proto.Message { return &shoalv1.ReportInventoryRequest{} },
	func() proto.Message { return &shoalv1.ReportGitOpsStatusRequest{} },
	func() proto.Message { return &shoalv1.SetGitOpsSourceRequest{} },
	func() proto.Message { return &shoalv1.CreateRolloutRequest{} },
	func() proto.Message { return &shoalv1.CreateJoinTokenRequest{} },
	func() proto.Message { return &shoalv1.ListClustersRequest{} },
	func() proto.Message { return &shoalv1.ListJobsRequest{} },
	func() proto.Message { return &shoalv1.HeartbeatRequest{} },
	func() proto.Message { return &shoalv1.ListGitOpsStatusRequest{} },
	func() proto.Message { return &shoalv1.ListJoinTokensRequest{} },
	func() proto.Message { return &shoalv1.RevokeJoinTokenRequest{} },
	func() proto.Message { return &shoalv1.GetClusterRequest{} },
	func() proto.Message { return &shoalv1.CordonClusterRequest{} },
	func() proto.Message { return &shoalv1.DrainClusterRequest{} },
	func() proto.Message { return &shoalv1.DrainNodeRequest{} },
	func() proto.Message { return &shoalv1.RemoveClusterRequest{} },
	func() proto.Message { return &shoalv1.GetJobRequest{} },
	func() proto.Message { return &shoalv1.WatchJobsRequest{} },
	func() proto.Message { return &shoalv1.CancelJobRequest{} },
	func() proto.Message { return &shoalv1.GetQueueRequest{} },
	func() proto.Message { return &shoalv1.ListQueuesRequest{} },
	func() proto.Message { return &shoalv1.DeleteQueueRequest{} },
	func() proto.Message { return &shoalv1.RolloutRequest{} },
	func() proto.Message { return &shoalv1.ListRolloutsRequest{} },
}

// fuzzSeedRequests are realistic requests, one or more per message.
func fuzzSeedRequests(t testing.TB) []proto.Message {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := pki.NewCSR(key, pki.AgentCommonName("eu-1"), pki.AgentGroup)
	if err != nil {
		t.Fatal(err)
	}
	inv, _ := json.Marshal(inventory.Cluster{Name: "eu-1", Generation: 2, Nodes: []inventory.Node{
		{Name: "gpu-0", Product: "NVIDIA-H100-80GB-HBM3", CapacityGPUs: 8, GPUs: 8, UsedGPUs: 2, Ready: true}}})
	job := `{"apiVersion":"shoal.dev/v1alpha1","kind":"Job","metadata":{"name":"train"},"spec":{"queue":"research/nlp","gang":{"members":4,"gpusPerMember":8},"template":{"spec":{"containers":[{"name":"t","image":"pytorch:2"}]}}}}`
	queue := `{"apiVersion":"shoal.dev/v1alpha1","kind":"Queue","metadata":{"name":"research/nlp"},"spec":{"weight":2,"quotas":{"h100":{"nominal":128,"borrowingLimit":64}}}}`
	sha := "0123456789abcdef0123456789abcdef01234567"
	return []proto.Message{
		&shoalv1.SubmitJobRequest{Job: &shoalv1.Object{Json: []byte(job)}, DryRun: true},
		&shoalv1.CreateQueueRequest{Queue: &shoalv1.Object{Json: []byte(queue)}},
		&shoalv1.UpdateQueueRequest{Queue: &shoalv1.Object{Json: []byte(queue), Revision: 12}},
		&shoalv1.RegisterRequest{Token: "abc123.0123456789abcdef", ClusterName: "eu-1", ClusterUid: "5f0c-uid",
			CsrPem: csr, AgentVersion: "v0.4.0", Labels: map[string]string{"region": "eu"}},
		&shoalv1.ReportInventoryRequest{SessionId: "s1", Generation: 2, InventoryJson: inv},
		&shoalv1.ReportGitOpsStatusRequest{StatusJson: []byte(`{"observedCommit":"` + sha + `","phase":"Applied"}`)},
		&shoalv1.SetGitOpsSourceRequest{Cluster: "eu-1", SourceJson: []byte(`{"repo":"https://git.example.com/fleet.git","path":"clusters/eu-1","branch":"main"}`)},
		&shoalv1.CreateRolloutRequest{Name: "r1", Revision: sha, Selector: "region=eu,tier!=canary", Waves: "1,25%,100%", SoakSeconds: 300},
		&shoalv1.CreateRolloutRequest{Name: "r2", Revision: sha, SoakSeconds: 18446744074},
		&shoalv1.CreateJoinTokenRequest{TtlSeconds: 3600, Usages: 2, Description: "eu fleet"},
		&shoalv1.CreateJoinTokenRequest{TtlSeconds: 18446744074},
		&shoalv1.ListClustersRequest{Selector: "region in (eu,us)", Options: &shoalv1.ListOptions{Limit: 10, Continue: "eyJrIjoiY2x1c3RlcnMiLCJyIjo1LCJzIjoiYiJ9"}},
		&shoalv1.ListJobsRequest{Queue: "research/nlp", Phase: "Running", Cluster: "eu-1"},
		&shoalv1.HeartbeatRequest{AgentVersion: "v0.4.0", ClusterReachable: true, Message: "ok"},
	}
}

// FuzzRequests feeds arbitrary bytes to proto.Unmarshal of each request
// message the hub receives (the first byte picks the message), then runs
// the conversion the hub's handlers apply before calling a service.
// Properties: no panic; a message that unmarshals re-marshals to one that
// unmarshals equal; the embedded JSON decoders refuse with typed errors
// and what they accept validates without panicking; a join token, cluster
// name or CSR the handlers pass on has its documented form (an accepted
// CSR names the requesting cluster's agent); a selector parses or is
// refused; a wave spec that parses has only positive steps, percentages at
// most 100; a seconds count is refused or converted exactly (no wrap).
func FuzzRequests(f *testing.F) {
	for _, m := range fuzzSeedRequests(f) {
		b, err := proto.Marshal(m)
		if err != nil {
			f.Fatal(err)
		}
		for i, mk := range fuzzRequests {
			if proto.MessageName(mk()) == proto.MessageName(m) {
				f.Add(append([]byte{byte(i)}, b...))
			}
		}
	}
	ca, err := pki.LoadOrCreateCA(filepath.Join(f.TempDir(), "pki"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		msg := fuzzRequests[int(data[0])%len(fuzzRequests)]()
		if err := proto.Unmarshal(data[1:], msg); err != nil {
			return
		}
		b, err := proto.Marshal(msg)
		if err != nil {
			t.Fatalf("re-marshal %s: %v", proto.MessageName(msg), err)
		}
		again := msg.ProtoReflect().New().Interface()
		if err := proto.Unmarshal(b, again); err != nil || !proto.Equal(msg, again) {
			t.Fatalf("%s does not survive a round trip: %v", proto.MessageName(msg), err)
		}
		convertRequest(t, ca, msg)
	})
}

// convertRequest runs the handler-side conversion of msg and checks its properties.
func convertRequest(t *testing.T, ca *pki.CA, msg proto.Message) {
	switch m := msg.(type) {
	case *shoalv1.SubmitJobRequest:
		if len(m.GetJob().GetJson()) == 0 {
			return // refused by Submit before any decoding
		}
		j, err := v1alpha1.DecodeJob(m.Job.Json)
		if err != nil {
			wantDecodeError(t, err)
			return
		}
		v1alpha1.SetJobDefaults(j)
		_ = v1alpha1.ValidateJob(j)
	case *shoalv1.CreateQueueRequest:
		checkQueue(t, m.Queue)
	case *shoalv1.UpdateQueueRequest:
		checkQueue(t, m.Queue)
	case *shoalv1.RegisterRequest:
		checkRegister(t, ca, m)
	case *shoalv1.ReportInventoryRequest:
		var inv inventory.Cluster
		if json.Unmarshal(m.InventoryJson, &inv) == nil {
			if s := registry.Summarize(inv, m.Generation); int(s.Nodes) != len(inv.Nodes) {
				t.Fatalf("summary counts %d of %d nodes", s.Nodes, len(inv.Nodes))
			}
		}
	case *shoalv1.ReportGitOpsStatusRequest:
		var st v1alpha1.GitOpsStatus
		_ = json.Unmarshal(m.StatusJson, &st)
	case *shoalv1.SetGitOpsSourceRequest:
		checkGitOpsSource(t, m.SourceJson)
	case *shoalv1.CreateRolloutRequest:
		checkSelector(t, m.Selector)
		checkWaves(t, m.Waves)
		checkSeconds(t, m.SoakSeconds)
		checkSeconds(t, m.WaveTimeoutSeconds)
	case *shoalv1.CreateJoinTokenRequest:
		ttl, err := tokenTTL(m.TtlSeconds)
		if err == nil && (ttl > maxTokenTTL || ttl/time.Second != time.Duration(m.TtlSeconds) || ttl%time.Second != 0) {
			t.Fatalf("ttl_seconds %d became %s", m.TtlSeconds, ttl)
		}
		if err != nil && status.Code(err) != codes.InvalidArgument {
			t.Fatalf("ttl_seconds %d: %v is not InvalidArgument", m.TtlSeconds, err)
		}
	case *shoalv1.ListClustersRequest:
		checkSelector(t, m.Selector)
	case *shoalv1.ListGitOpsStatusRequest:
		checkSelector(t, m.Selector)
	case *shoalv1.RevokeJoinTokenRequest:
		if id, secret, err := registry.ParseToken(strings.TrimSpace(m.Id)); err == nil && id+"."+secret != strings.TrimSpace(m.Id) {
			t.Fatalf("token %q parsed as %q.%q", m.Id, id, secret)
		}
	}
}

func wantDecodeError(t *testing.T, err error) {
	t.Helper()
	var de *v1alpha1.DecodeError
	if !errors.As(err, &de) {
		t.Fatalf("decode error %T is not a *DecodeError: %v", err, err)
	}
}

func checkQueue(t *testing.T, o *shoalv1.Object) {
	q, err := decodeQueue(o)
	switch {
	case len(o.GetJson()) == 0:
		if status.Code(err) != codes.InvalidArgument {
			t.Fatalf("a queue without JSON: %v, want InvalidArgument", err)
		}
	case err != nil:
		wantDecodeError(t, err)
	default:
		v1alpha1.SetQueueDefaults(q)
		_ = v1alpha1.ValidateQueue(q)
	}
}

func checkRegister(t *testing.T, ca *pki.CA, m *shoalv1.RegisterRequest) {
	if id, secret, err := registry.ParseToken(m.Token); err == nil && id+"."+secret != m.Token {
		t.Fatalf("token %q parsed as %q.%q", m.Token, id, secret)
	}
	if registry.ValidateClusterName(m.ClusterName) != nil {
		return // Register refuses before the CSR is looked at
	}
	if len(m.ClusterName) > registry.MaxClusterNameLength || len(validation.IsDNS1123Label(m.ClusterName)) > 0 {
		t.Fatalf("cluster name %q accepted", m.ClusterName)
	}
	cert, _, err := ca.SignAgentCSR(m.CsrPem, m.ClusterName, time.Hour)
	if err != nil {
		if !errors.Is(err, pki.ErrBadCSR) {
			t.Fatalf("CSR refusal is not ErrBadCSR: %v", err)
		}
		return
	}
	id, err := pki.IdentityOf(cert)
	if err != nil || id.Role != pki.RoleAgent || id.Cluster != m.ClusterName {
		t.Fatalf("registering %q signed identity %+v, %v", m.ClusterName, id, err)
	}
}

func checkGitOpsSource(t *testing.T, data []byte) {
	if len(data) == 0 {
		return // clears the source
	}
	src := &v1alpha1.GitOpsSource{}
	dec := json.NewDecoder(bytesReader(data))
	dec.DisallowUnknownFields()
	if dec.Decode(src) != nil {
		return
	}
	if registry.ValidateGitOpsSource(*src) != nil {
		return
	}
	b, err := json.Marshal(src)
	if err != nil {
		t.Fatalf("re-encode a valid GitOps source: %v", err)
	}
	var again v1alpha1.GitOpsSource
	if err := json.Unmarshal(b, &again); err != nil || !equality.Semantic.DeepEqual(*src, again) {
		t.Fatalf("valid GitOps source changed in a round trip (%v):\n%+v\n%+v", err, *src, again)
	}
}

func checkSelector(t *testing.T, sel string) {
	s, err := labels.Parse(sel)
	if err != nil {
		return
	}
	if _, err := labels.Parse(s.String()); err != nil {
		t.Fatalf("selector %q prints as %q, which does not parse: %v", sel, s.String(), err)
	}
}

func checkWaves(t *testing.T, spec string) {
	steps, err := fr.ParseWaves(spec)
	if err != nil {
		var we *fr.InvalidWavesError
		if !errors.As(err, &we) {
			t.Fatalf("waves %q: error %T is not an InvalidWavesError", spec, err)
		}
		return
	}
	if len(steps) == 0 {
		t.Fatalf("waves %q parsed to no step", spec)
	}
	for _, s := range steps {
		if (s.Count > 0) == (s.Percent > 0) || s.Count < 0 || s.Percent < 0 || s.Percent > 100 {
			t.Fatalf("waves %q parsed to step %+v", spec, s)
		}
	}
}

func checkSeconds(t *testing.T, n int64) {
	d, err := requestSeconds("seconds", n)
	if err != nil {
		if n <= math.MaxInt64/int64(time.Second) && n >= math.MinInt64/int64(time.Second) {
			t.Fatalf("%d seconds refused: %v", n, err)
		}
		return
	}
	if d%time.Second != 0 || int64(d/time.Second) != n {
		t.Fatalf("%d seconds became %s", n, d)
	}
}
