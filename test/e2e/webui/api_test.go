// SPDX-License-Identifier: Apache-2.0

package webui_test

import (
	"encoding/json"
	"io"
	"net/http"
	"testing"

	configv1alpha1 "github.com/shoal-dev/shoal/apis/config/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

// restAPI calls the hub's REST face as the fleet's admin (its client
// certificate): what the pages are checked against.
type restAPI struct {
	base   string
	client *http.Client
}

func newREST(t *testing.T) *restAPI {
	t.Helper()
	cfg, err := configv1alpha1.Load(env.Shoal.Config)
	if err != nil {
		t.Fatal(err)
	}
	hctx, err := cfg.Context("")
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg, err := hctx.ClientTLSConfig()
	if err != nil {
		t.Fatal(err)
	}
	return &restAPI{base: env.Shoal.REST, client: &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}}}
}

// object is a stored record in its REST form.
type object struct {
	JSON     json.RawMessage `json:"json"`
	Revision string          `json:"revision"`
}

func (a *restAPI) get(t *testing.T, path string, v any) {
	t.Helper()
	resp, err := a.client.Get(a.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %v\n%s", path, resp.StatusCode, err, b)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("GET %s: %v\n%s", path, err, b)
	}
}

func listOf[T any](t *testing.T, a *restAPI, path string) []T {
	t.Helper()
	var l struct{ Items []object }
	a.get(t, path, &l)
	out := make([]T, len(l.Items))
	for i, o := range l.Items {
		if err := json.Unmarshal(o.JSON, &out[i]); err != nil {
			t.Fatalf("%s item %d: %v", path, i, err)
		}
	}
	return out
}

func (a *restAPI) clusters(t *testing.T) []v1alpha1.Cluster {
	return listOf[v1alpha1.Cluster](t, a, "/v1/clusters")
}

func (a *restAPI) queues(t *testing.T) []v1alpha1.Queue {
	return listOf[v1alpha1.Queue](t, a, "/v1/queues")
}

func (a *restAPI) services(t *testing.T) []v1alpha1.InferenceService {
	return listOf[v1alpha1.InferenceService](t, a, "/v1/services")
}

func (a *restAPI) pools(t *testing.T) []v1alpha1.GPUPool {
	return listOf[v1alpha1.GPUPool](t, a, "/v1/pools")
}

func (a *restAPI) job(t *testing.T, name string) *v1alpha1.Job {
	t.Helper()
	var o object
	a.get(t, "/v1/jobs/"+name, &o)
	var j v1alpha1.Job
	if err := json.Unmarshal(o.JSON, &j); err != nil {
		t.Fatal(err)
	}
	return &j
}

func (a *restAPI) inventory(t *testing.T, cluster string) *inventory.Cluster {
	t.Helper()
	var o object
	a.get(t, "/v1/clusters/"+cluster+"/inventory", &o)
	var inv inventory.Cluster
	if err := json.Unmarshal(o.JSON, &inv); err != nil {
		t.Fatal(err)
	}
	return &inv
}

// status is the status code of a GET of path with client (nil: no client
// certificate) and the body.
func (a *restAPI) status(t *testing.T, client *http.Client, path string) (int, string) {
	t.Helper()
	if client == nil {
		client = &http.Client{Transport: &http.Transport{TLSClientConfig: a.client.Transport.(*http.Transport).TLSClientConfig.Clone()}}
		client.Transport.(*http.Transport).TLSClientConfig.Certificates = nil
		client.Transport.(*http.Transport).TLSClientConfig.GetClientCertificate = nil
	}
	resp, err := client.Get(a.base + path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}
