// SPDX-License-Identifier: Apache-2.0

package rest

import (
	"bufio"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/pki"
	"github.com/shoal-dev/shoal/hub/rest"
	"github.com/shoal-dev/shoal/test/builders/testjob"
	"github.com/shoal-dev/shoal/test/builders/testqueue"
)

// restObject is an Object as the REST face writes it.
type restObject struct {
	JSON     json.RawMessage `json:"json"`
	Revision string          `json:"revision"`
}

type restList struct {
	Items []restObject `json:"items"`
	Meta  struct {
		Continue string `json:"continue"`
		Revision string `json:"revision"`
	} `json:"meta"`
}

func jobBody(t *testing.T, j *v1alpha1.Job) map[string]any {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	var rec map[string]any
	if err := json.Unmarshal(b, &rec); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"job": map[string]any{"json": rec}}
}

func jsonObject(t *testing.T, v any) *shoalv1.Object {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return &shoalv1.Object{Json: b}
}

// TestREST runs the REST face of a real hub against its gRPC API: the
// same authentication (client certificates, bearer ID tokens; nothing
// without; a forged certificate header is ignored), the same
// authorization table (a viewer is refused what gRPC refuses it, with the
// same message), the same answers (a list equals gRPC's), the audit log,
// records as embedded JSON both ways, unknown fields refused, a watch
// stream's events, and the OpenAPI document.
func TestREST(t *testing.T) {
	iss := startIssuer(t)
	h := startHub(t, "--oidc-issuer-url", iss.url, "--oidc-client-id", "shoal", "--oidc-ca-file", iss.caFile)
	ctx := testCtx(t)
	adminCtx := loadContext(t, h.configPath)
	adminTLS := tlsConfig(t, adminCtx, false)
	admin := h.rest(adminTLS, "")
	anon := h.rest(tlsConfig(t, adminCtx, true), "")
	conn := h.grpcConn(t, adminTLS, "")
	jobs, queues := shoalv1.NewJobsClient(conn), shoalv1.NewQueuesClient(conn)
	if _, err := queues.Create(ctx, &shoalv1.CreateQueueRequest{Queue: jsonObject(t, testqueue.New("team").Quota("h100", 8).Obj())}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	vicConfig := filepath.Join(dir, "vic.yaml")
	h.shoal(t, "user", "create", "vic", "--role", "viewer", "--queue", "team", "--out", vicConfig)
	h.shoal(t, "user", "create", "sue", "--role", "submitter", "--queue", "team", "--oidc-username", "sue-sub")
	vicCtx := loadContext(t, vicConfig)
	vicTLS := tlsConfig(t, vicCtx, false)

	t.Run("authentication", func(t *testing.T) {
		for _, path := range []string{"/v1/jobs", "/v1/whoami", "/v1/clusters"} {
			st, body := anon.do(t, http.MethodGet, path, nil)
			wantError(t, "GET "+path+" without credentials", st, body, http.StatusUnauthorized, int(codes.Unauthenticated))
		}
		// The gateway's own certificate header, set by a caller without a
		// certificate (directly, and as gRPC-gateway metadata), is not believed.
		der := base64.StdEncoding.EncodeToString(adminTLS.Certificates[0].Certificate[0])
		for _, hdr := range []string{rest.PeerCertificateMetadata, "Grpc-Metadata-" + rest.PeerCertificateMetadata} {
			st, body := anon.do(t, http.MethodGet, "/v1/clusters", nil, hdr, der)
			wantError(t, "GET /v1/clusters with a forged "+hdr, st, body, http.StatusUnauthorized, int(codes.Unauthenticated))
		}
		// Nor over gRPC from a network peer.
		anonConn := h.grpcConn(t, tlsConfig(t, adminCtx, true), "")
		mctx := metadata.AppendToOutgoingContext(ctx, rest.PeerCertificateMetadata, string(adminTLS.Certificates[0].Certificate[0]))
		_, err := shoalv1.NewClustersClient(anonConn).ListClusters(mctx, &shoalv1.ListClustersRequest{})
		if status.Code(err) != codes.Unauthenticated {
			t.Fatalf("gRPC ListClusters with the gateway's metadata and no certificate: %v, want Unauthenticated", err)
		}
		// A certificate of another CA fails the TLS handshake.
		other, err := pki.LoadOrCreateCA(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, err := other.ClientCertificate(pki.AdminCommonName, []string{pki.AdminGroup}, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		forged, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		cfg := tlsConfig(t, adminCtx, true)
		cfg.Certificates = []tls.Certificate{forged}
		req, _ := http.NewRequest(http.MethodGet, "https://"+h.restAddr+"/v1/clusters", nil)
		if resp, err := (&http.Client{Transport: &http.Transport{TLSClientConfig: cfg}}).Do(req); err == nil {
			_ = resp.Body.Close()
			t.Fatalf("a certificate of another CA: HTTP %d, want a failed handshake", resp.StatusCode)
		}
		// A bearer ID token authenticates its bound user.
		sue := h.rest(tlsConfig(t, adminCtx, true), iss.token(t, "sue-sub"))
		st, body := sue.do(t, http.MethodGet, "/v1/whoami", nil)
		var who struct{ User, Method string }
		if err := json.Unmarshal(body, &who); err != nil || st != http.StatusOK || who.User != "sue" || who.Method != "oidc" {
			t.Fatalf("whoami with sue's token: HTTP %d %s", st, body)
		}
		st, body = sue.do(t, http.MethodPost, "/v1/jobs", jobBody(t, testjob.New("sue-job").Queue("team").Obj()))
		if st != http.StatusOK {
			t.Fatalf("sue submits to team with her token: HTTP %d %s", st, body)
		}
		var o restObject
		if err := json.Unmarshal(body, &o); err != nil {
			t.Fatal(err)
		}
		var j v1alpha1.Job
		if err := json.Unmarshal(o.JSON, &j); err != nil || j.Status.Owner != "sue" {
			t.Fatalf("sue's job: owner %q (%v), want sue", j.Status.Owner, err)
		}
	})

	t.Run("authorization", func(t *testing.T) {
		vic := h.rest(vicTLS, "")
		vicGRPC := h.grpcConn(t, vicTLS, "")
		st, body := vic.do(t, http.MethodGet, "/v1/clusters", nil)
		e := wantError(t, "viewer GET /v1/clusters", st, body, http.StatusForbidden, int(codes.PermissionDenied))
		_, err := shoalv1.NewClustersClient(vicGRPC).ListClusters(ctx, &shoalv1.ListClustersRequest{})
		if status.Code(err) != codes.PermissionDenied || status.Convert(err).Message() != e.Message {
			t.Fatalf("viewer ListClusters over gRPC: %v; REST said %q: want the same refusal", err, e.Message)
		}
		st, body = vic.do(t, http.MethodPost, "/v1/jobs", jobBody(t, testjob.New("vic-job").Queue("team").Obj()))
		e = wantError(t, "viewer POST /v1/jobs", st, body, http.StatusForbidden, int(codes.PermissionDenied))
		_, err = shoalv1.NewJobsClient(vicGRPC).Submit(ctx, &shoalv1.SubmitJobRequest{Job: jsonObject(t, testjob.New("vic-job").Queue("team").Obj())})
		if status.Code(err) != codes.PermissionDenied || status.Convert(err).Message() != e.Message {
			t.Fatalf("viewer Submit over gRPC: %v; REST said %q: want the same refusal", err, e.Message)
		}
		if st, body := vic.do(t, http.MethodGet, "/v1/jobs?queue=team", nil); st != http.StatusOK {
			t.Fatalf("viewer lists the jobs of team: HTTP %d %s", st, body)
		}
		st, body = vic.do(t, http.MethodGet, "/v1/cani?verb=create&resource=jobs&queue=team", nil)
		var can struct {
			Allowed bool
			User    string
		}
		if err := json.Unmarshal(body, &can); err != nil || st != http.StatusOK || can.Allowed || can.User != "vic" {
			t.Fatalf("viewer can-i create jobs: HTTP %d %s", st, body)
		}
	})

	t.Run("list equals gRPC", func(t *testing.T) {
		for i := range 3 {
			name := "list-" + strconv.Itoa(i)
			st, body := admin.do(t, http.MethodPost, "/v1/jobs", jobBody(t, testjob.New(name).Queue("team").GPUs(int32(i+1)).Obj()))
			if st != http.StatusOK {
				t.Fatalf("submit %s: HTTP %d %s", name, st, body)
			}
		}
		// The scheduler may write a job between the two reads; compare two
		// reads at the same store revision.
		var got restList
		var want *shoalv1.ListJobsResponse
		for try := 0; ; try++ {
			var err error
			if want, err = jobs.List(ctx, &shoalv1.ListJobsRequest{Queue: "team"}); err != nil {
				t.Fatal(err)
			}
			st, body := admin.do(t, http.MethodGet, "/v1/jobs?queue=team", nil)
			if st != http.StatusOK {
				t.Fatalf("GET /v1/jobs: HTTP %d %s", st, body)
			}
			got = restList{}
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatal(err)
			}
			if got.Meta.Revision == strconv.FormatInt(want.Meta.Revision, 10) {
				break
			}
			if try == 10 {
				t.Fatalf("the store moved during 10 pairs of lists (REST at %s, gRPC at %d)", got.Meta.Revision, want.Meta.Revision)
			}
		}
		if len(got.Items) != len(want.Items) || len(want.Items) < 4 {
			t.Fatalf("REST listed %d jobs, gRPC %d (want the 3 submitted and sue's)", len(got.Items), len(want.Items))
		}
		for i, w := range want.Items {
			var a, b any
			if err := json.Unmarshal(w.Json, &a); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(got.Items[i].JSON, &b); err != nil {
				t.Fatalf("REST item %d json is not an embedded record: %s", i, got.Items[i].JSON)
			}
			if !reflect.DeepEqual(a, b) || got.Items[i].Revision != strconv.FormatInt(w.Revision, 10) {
				t.Fatalf("item %d: REST %s @%s, gRPC %s @%d", i, got.Items[i].JSON, got.Items[i].Revision, w.Json, w.Revision)
			}
		}
		// Paging: options.limit and options.continue.
		st, body := admin.do(t, http.MethodGet, "/v1/jobs?queue=team&options.limit=2", nil)
		var page restList
		if err := json.Unmarshal(body, &page); err != nil || st != http.StatusOK || len(page.Items) != 2 || page.Meta.Continue == "" {
			t.Fatalf("first page of 2: HTTP %d %s", st, body)
		}
		st, body = admin.do(t, http.MethodGet, "/v1/jobs?queue=team&options.limit=2&options.continue="+page.Meta.Continue, nil)
		var next restList
		if err := json.Unmarshal(body, &next); err != nil || st != http.StatusOK || len(next.Items) != len(want.Items)-2 {
			t.Fatalf("second page: HTTP %d %s", st, body)
		}
	})

	t.Run("records and refusals", func(t *testing.T) {
		st, body := admin.do(t, http.MethodGet, "/v1/jobs/list-0", nil)
		var o restObject
		var j v1alpha1.Job
		if err := json.Unmarshal(body, &o); err != nil || st != http.StatusOK || json.Unmarshal(o.JSON, &j) != nil || j.Name != "list-0" || o.Revision == "" {
			t.Fatalf("GET /v1/jobs/list-0: HTTP %d %s", st, body)
		}
		st, body = admin.do(t, http.MethodPost, "/v1/jobs", map[string]any{"job": map[string]any{"json": base64.StdEncoding.EncodeToString(o.JSON)}})
		if e := wantError(t, "a base64 record", st, body, http.StatusBadRequest, int(codes.InvalidArgument)); !strings.Contains(e.Message, "job.json") {
			t.Fatalf("refusal of a base64 record does not name job.json: %q", e.Message)
		}
		b := jobBody(t, testjob.New("typo").Queue("team").Obj())
		b["dryrun"] = true
		st, body = admin.do(t, http.MethodPost, "/v1/jobs", b)
		if e := wantError(t, "an unknown field", st, body, http.StatusBadRequest, int(codes.InvalidArgument)); !strings.Contains(e.Message, "dryrun") {
			t.Fatalf("refusal of an unknown field does not name it: %q", e.Message)
		}
		st, body = admin.do(t, http.MethodGet, "/v1/jobs/nope", nil)
		wantError(t, "GET a missing job", st, body, http.StatusNotFound, int(codes.NotFound))
		// A hierarchical queue name is the rest of the path.
		if _, err := queues.Create(ctx, &shoalv1.CreateQueueRequest{Queue: jsonObject(t, testqueue.New("team/sub").Obj())}); err != nil {
			t.Fatal(err)
		}
		st, body = admin.do(t, http.MethodGet, "/v1/queues/team/sub", nil)
		var q struct {
			JSON struct {
				Metadata struct{ Name string }
			}
		}
		if err := json.Unmarshal(body, &q); err != nil || st != http.StatusOK || q.JSON.Metadata.Name != "team/sub" {
			t.Fatalf("GET /v1/queues/team/sub: HTTP %d %s", st, body)
		}
		// Mutating REST calls are in the audit log, as the caller.
		audit, err := os.ReadFile(h.auditPath)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(audit), `"method":"Jobs/Submit"`) || !strings.Contains(string(audit), `"object":"list-0"`) {
			t.Fatalf("the audit log lacks the REST submits:\n%s", audit)
		}
		st, body = admin.do(t, http.MethodGet, "/openapi.json", nil)
		if st != http.StatusOK || !strings.Contains(string(body), `"/v1/jobs:watch"`) {
			t.Fatalf("GET /openapi.json: HTTP %d", st)
		}
	})

	t.Run("watch", func(t *testing.T) {
		// Watch from the store revision of a list, so that the submit
		// below comes after it whenever the stream starts.
		from, err := jobs.List(ctx, &shoalv1.ListJobsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		resp := admin.open(t, http.MethodGet, "/v1/jobs:watch?name=watched&revision="+strconv.FormatInt(from.Meta.Revision, 10), nil)
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET /v1/jobs:watch: HTTP %d", resp.StatusCode)
		}
		lines := make(chan string)
		go func() {
			defer close(lines)
			sc := bufio.NewScanner(resp.Body)
			sc.Buffer(make([]byte, 1<<20), 1<<20)
			for sc.Scan() {
				lines <- sc.Text()
			}
		}()
		o, err := jobs.Submit(ctx, &shoalv1.SubmitJobRequest{Job: jsonObject(t, testjob.New("watched").Queue("team").Obj())})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := jobs.Cancel(ctx, &shoalv1.CancelJobRequest{Name: "watched"}); err != nil {
			t.Fatal(err)
		}
		// Until the cancellation: the scheduler may write the job between.
		var events []string
		for len(events) == 0 || !strings.HasSuffix(events[len(events)-1], ":Cancelled") {
			select {
			case line, ok := <-lines:
				if !ok {
					t.Fatalf("the watch ended after %v", events)
				}
				var chunk struct {
					Result struct {
						Type   string     `json:"type"`
						Object restObject `json:"object"`
					} `json:"result"`
				}
				if err := json.Unmarshal([]byte(line), &chunk); err != nil {
					t.Fatalf("watch line %q: %v", line, err)
				}
				var j v1alpha1.Job
				if err := json.Unmarshal(chunk.Result.Object.JSON, &j); err != nil || j.Name != "watched" {
					t.Fatalf("watch line %q: not an embedded record of the watched job (%v)", line, err)
				}
				if len(events) == 0 && (chunk.Result.Type != "ADDED" || chunk.Result.Object.Revision != strconv.FormatInt(o.Revision, 10)) {
					t.Fatalf("first event %s @%s, want ADDED @%d", chunk.Result.Type, chunk.Result.Object.Revision, o.Revision)
				}
				events = append(events, chunk.Result.Type+":"+string(j.Status.Phase))
			case <-time.After(30 * time.Second):
				t.Fatalf("no watch event within 30s; got %v", events)
			}
		}
		if last := events[len(events)-1]; last != "MODIFIED:Cancelled" {
			t.Fatalf("watch events %v: the cancellation is %s, want MODIFIED", events, last)
		}
		// The hub's stop ends an open watch (the client resumes from its
		// last revision); the hub exits cleanly (stop checks the code).
		h.stop()
		for {
			select {
			case _, ok := <-lines:
				if !ok {
					return
				}
			case <-time.After(15 * time.Second):
				t.Fatal("the watch stream did not end within 15s of the hub's stop")
			}
		}
	})
}
