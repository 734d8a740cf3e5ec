// SPDX-License-Identifier: Apache-2.0

package server

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/audit"
	"github.com/shoal-dev/shoal/hub/jobs"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/queues"
	"github.com/shoal-dev/shoal/hub/store"
	"github.com/shoal-dev/shoal/test/builders/testjob"
)

// submitFixture is an embedded store with the queues a, a/b and x, its job
// intake, and an authorizer that knows the user sub, a submitter of queue
// a/b, and writes to the audit log log.
type submitFixture struct {
	js   *jobs.Service
	ca   *pki.CA
	auth authorizer
	log  *lockedBuffer
}

// lockedBuffer is a bytes.Buffer that a test reads while a server writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func (l *lockedBuffer) Reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.b.Reset()
}

func newSubmitFixture(t *testing.T) submitFixture {
	t.Helper()
	if testing.Short() {
		t.Skip("starts an embedded etcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, store.Config{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	js := jobs.New(st)
	for _, q := range []string{"a", "a/b", "x"} {
		if _, _, err := queues.New(st, js).Create(ctx, &v1alpha1.Queue{ObjectMeta: metav1.ObjectMeta{Name: q}}); err != nil {
			t.Fatal(err)
		}
	}
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	log := &lockedBuffer{}
	auth := authorizer{users: fakeUsers{"sub": {Name: "sub", Bindings: []v1alpha1.RoleBinding{
		{Role: v1alpha1.UserRoleSubmitter, Queue: "a/b"}}}}, audit: audit.New(log)}
	return submitFixture{js: js, ca: ca, auth: auth, log: log}
}

// userCert is a user certificate of name.
func userCert(t *testing.T, ca *pki.CA, name string) *x509.Certificate {
	t.Helper()
	certPEM, _, err := ca.ClientCertificate(pki.UserCommonName(name), []string{pki.UserGroup}, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := pki.ParseCertificatePEM(certPEM)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// jobObject is j as a request carries it.
func jobObject(t *testing.T, j *v1alpha1.Job) *shoalv1.Object {
	t.Helper()
	o, err := object(j, 0)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// auditEntries are the entries written to log, one a line.
func auditEntries(t *testing.T, log fmt.Stringer) []audit.Entry {
	t.Helper()
	var entries []audit.Entry
	if strings.TrimSpace(log.String()) == "" {
		return nil
	}
	for _, line := range strings.Split(strings.TrimSpace(log.String()), "\n") {
		var e audit.Entry
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("audit line %q: %v", line, err)
		}
		entries = append(entries, e)
	}
	return entries
}

// TestSubmitBatchAuthorizesAndAuditsEachJob runs SubmitBatch through the
// auth interceptor as a submitter of queue a/b: each job is authorized in
// its own queue as Submit is, refused or accepted on its own with its
// field-path error, and written to the audit log as an entry of its own.
func TestSubmitBatchAuthorizesAndAuditsEachJob(t *testing.T) {
	f := newSubmitFixture(t)
	cert, auth, log := userCert(t, f.ca, "sub"), f.auth, f.log
	srv := newJobsServer(f.js)
	call := func(peerCert *x509.Certificate, req *shoalv1.SubmitJobBatchRequest) (*shoalv1.SubmitJobBatchResponse, error) {
		resp, err := auth.unary(withPeer(peerCert), req, &grpc.UnaryServerInfo{FullMethod: shoalv1.Jobs_SubmitBatch_FullMethodName},
			func(ctx context.Context, req any) (any, error) {
				return srv.SubmitBatch(ctx, req.(*shoalv1.SubmitJobBatchRequest))
			})
		if err != nil {
			return nil, err
		}
		return resp.(*shoalv1.SubmitJobBatchResponse), nil
	}
	enc := func(j *v1alpha1.Job) *shoalv1.Object { return jobObject(t, j) }
	bad := testjob.New("bad").Queue("a/b").Obj()
	bad.Spec.Gang.Members = 0
	resp, err := call(cert, &shoalv1.SubmitJobBatchRequest{Jobs: []*shoalv1.Object{
		enc(testjob.New("ok1").Queue("a/b").Obj()),
		enc(testjob.New("elsewhere").Queue("x").Obj()),
		enc(bad),
		{Json: []byte(`{"kind":"Job","apiVersion":"shoal.dev/v1alpha1","metadata":{"name":"typo"},"spec":{"queeu":"a/b"}}`)},
		enc(testjob.New("ok2").Queue("a/b/c").Obj()),
	}})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		code   codes.Code
		substr string
	}{{codes.OK, ""}, {codes.PermissionDenied, "Jobs/Submit"}, {codes.InvalidArgument, "spec.gang.members"},
		{codes.InvalidArgument, "spec.queeu"}, {codes.FailedPrecondition, `queue "a/b/c" does not exist`}}
	if len(resp.Results) != len(want) {
		t.Fatalf("%d results for %d jobs", len(resp.Results), len(want))
	}
	for i, w := range want {
		r := resp.Results[i]
		got := codes.OK
		if r.Error != nil {
			got = codes.Code(r.Error.Code)
		}
		if got != w.code || !strings.Contains(r.GetError().GetMessage(), w.substr) {
			t.Errorf("job %d: %s %q, want %s mentioning %q", i, got, r.GetError().GetMessage(), w.code, w.substr)
		}
	}
	var ok1 v1alpha1.Job
	if err := json.Unmarshal(resp.Results[0].Job.GetJson(), &ok1); err != nil || ok1.Status.Owner != "sub" ||
		resp.Results[0].Result != string(jobs.Created) || resp.Results[0].Job.Revision == 0 {
		t.Errorf("accepted job: %s %q (%v)", resp.Results[0].Job.GetJson(), resp.Results[0].Result, err)
	}
	entries := auditEntries(t, log)
	wantAudit := []string{"ok1 a/b OK", "elsewhere x PermissionDenied", "bad a/b InvalidArgument", "  InvalidArgument", "ok2 a/b/c FailedPrecondition"}
	if len(entries) != len(wantAudit) {
		t.Fatalf("%d audit entries, want one per job: %s", len(entries), log.String())
	}
	for i, e := range entries {
		if got := e.Object + " " + e.Queue + " " + e.Code; got != wantAudit[i] || e.User != "sub" || e.Method != "Jobs/SubmitBatch" {
			t.Errorf("audit entry %d: %+v, want %q by sub", i, e, wantAudit[i])
		}
	}

	// A viewer may create no job anywhere: the call is refused whole, one entry.
	log.Reset()
	vc := userCert(t, f.ca, "view")
	auth.users = fakeUsers{"view": {Name: "view", Bindings: []v1alpha1.RoleBinding{{Role: v1alpha1.UserRoleViewer, Queue: "a"}}}}
	_, err = call(vc, &shoalv1.SubmitJobBatchRequest{Jobs: []*shoalv1.Object{enc(testjob.New("v").Queue("a").Obj())}})
	if status.Code(err) != codes.PermissionDenied || strings.Count(log.String(), "\n") != 1 {
		t.Errorf("viewer: %v; audit %q", err, log.String())
	}
	_, err = call(vc, &shoalv1.SubmitJobBatchRequest{})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("empty batch: %v", err)
	}
}
