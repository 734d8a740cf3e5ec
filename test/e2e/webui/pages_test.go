// SPDX-License-Identifier: Apache-2.0

package webui_test

import (
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// TestFleetView loads every page of the fleet view in Chromium and checks
// what it shows against the REST API, then that a job submitted while the
// jobs page is open appears without a reload; last, `shoal top` on the same
// fleet.
func TestFleetView(t *testing.T) {
	skipUnlessFleet(t)
	api := newREST(t)
	setUpFleet(t, api)

	t.Run("same authentication as the API", func(t *testing.T) {
		if code, body := api.status(t, nil, "/ui/"); code != http.StatusUnauthorized || !strings.Contains(body, "docs/webui.md") ||
			strings.Contains(body, "app.js") {
			t.Errorf("GET /ui/ without a client certificate: %d, want 401 and the login page only\n%s", code, body)
		}
		if code, body := api.status(t, api.client, "/ui/"); code != http.StatusOK || !strings.Contains(body, `<script src="app.js">`) {
			t.Errorf("GET /ui/ with the admin certificate: %d, want 200 and the view\n%s", code, body)
		}
	})

	b := startBrowser(t)
	b.do(chromedp.Navigate(startUIProxy(t)), chromedp.WaitVisible(chromedp.CSS(`body[data-clusters-loaded="true"]`)))

	t.Run("clusters", func(t *testing.T) { checkClusters(t, b.with(t), api) })
	t.Run("GPU map", func(t *testing.T) { checkGPUMap(t, b.with(t), api) })
	t.Run("queues", func(t *testing.T) { checkQueues(t, b.with(t), api) })
	t.Run("pools", func(t *testing.T) { checkPools(t, b.with(t), api) })
	t.Run("services", func(t *testing.T) { checkServices(t, b.with(t), api) })
	t.Run("job", func(t *testing.T) { checkJob(t, b.with(t), api) })
	t.Run("waiting", func(t *testing.T) { checkWaiting(t, b.with(t), api) })
	t.Run("live update", func(t *testing.T) { checkLive(t, b.with(t), api) })
	t.Run("shoal top", func(t *testing.T) { checkTop(t, api) })
}

func (b *browser) open(hash, loaded string) {
	b.t.Helper()
	b.do(chromedp.Evaluate[chromedp.Void](`location.hash = '`+hash+`'; undefined`),
		chromedp.WaitVisible(chromedp.CSS(`body[data-page][data-`+loaded+`-loaded="true"]`)))
}

type clusterRow struct{ Name, State, Ready, Heartbeat, GPUs, Free string }

func checkClusters(t *testing.T, b *browser, api *restAPI) {
	b.open("#/clusters", "clusters")
	re := regexp.MustCompile(`^\d+s ago$`)
	waitShows(b, "clusters page", `[...document.querySelectorAll('#clusters tr[data-cluster]')].map(r => ({
		Name: r.dataset.cluster, State: r.querySelector('[data-field=state]').textContent,
		Ready: r.querySelector('[data-field=ready]').textContent, Heartbeat: r.querySelector('[data-field=heartbeat]').textContent,
		GPUs: r.querySelector('[data-field=gpus]').textContent, Free: r.querySelector('[data-field=free]').textContent}))`,
		func(rows []clusterRow) error {
			cs := api.clusters(t)
			if len(rows) != len(cs) || len(cs) != len(demoProfiles) {
				return fmt.Errorf("%d rows, the API has %d clusters (want %d)", len(rows), len(cs), len(demoProfiles))
			}
			for i, c := range cs {
				r, inv := rows[i], c.Status.Inventory
				err := equalAll(equal("name", r.Name, c.Name), equal(c.Name+" state", r.State, string(c.Status.State)),
					equal(c.Name+" GPUs", r.GPUs, strconv.Itoa(int(inv.GPUs))), equal(c.Name+" free", r.Free, strconv.Itoa(int(inv.FreeGPUs))))
				if err != nil {
					return err
				}
				if !strings.HasPrefix(r.Ready, "True") || !re.MatchString(r.Heartbeat) {
					return fmt.Errorf("%s: Ready %q, heartbeat %q: want True and an age in seconds", c.Name, r.Ready, r.Heartbeat)
				}
			}
			return nil
		})
	b.shot("clusters")
}

type mapCluster struct {
	Name                                       string
	GPUs, Nodes, NVLink                        int
	Free, Allocated, Reserved, Unhealthy, Cord int
}

func checkGPUMap(t *testing.T, b *browser, api *restAPI) {
	b.open("#/gpus", "inventories")
	sum := func(attr string) string {
		return `[...m.querySelectorAll('.node')].reduce((n, e) => n + Number(e.dataset.` + attr + `), 0)`
	}
	waitShows(b, "GPU map", `[...document.querySelectorAll('.cluster-map')].map(m => ({Name: m.dataset.cluster,
		GPUs: Number(m.dataset.gpus), Nodes: m.querySelectorAll('.node').length, NVLink: m.querySelectorAll('.nvlink').length,
		Free: `+sum("free")+`, Allocated: `+sum("allocated")+`, Reserved: `+sum("reserved")+`, Unhealthy: `+sum("unhealthy")+`,
		Cord: `+sum("cordoned")+`}))`,
		func(ms []mapCluster) error {
			if len(ms) != len(demoProfiles) {
				return fmt.Errorf("%d clusters on the map, want %d", len(ms), len(demoProfiles))
			}
			for _, m := range ms {
				inv := api.inventory(t, m.Name)
				gpus, free, used := 0, 0, 0
				cliques := map[string]bool{}
				for i := range inv.Nodes {
					n := &inv.Nodes[i]
					gpus += max(n.CapacityGPUs, n.GPUs)
					free += n.FreeGPUs()
					used += min(n.UsedGPUs, n.GPUs)
					if n.Clique != "" {
						cliques[n.Clique] = true
					}
				}
				err := equalAll(equal(m.Name+" GPUs", m.GPUs, gpus), equal(m.Name+" nodes", m.Nodes, len(inv.Nodes)),
					equal(m.Name+" NVLink domains", m.NVLink, len(cliques)), equal(m.Name+" free", m.Free, free),
					equal(m.Name+" allocated", m.Allocated, used), equal(m.Name+" reserved", m.Reserved, 0),
					equal(m.Name+" states add up", m.Free+m.Allocated+m.Reserved+m.Unhealthy+m.Cord, gpus))
				if err != nil {
					return err
				}
			}
			return nil
		})
	b.shot("gpus")
}

type queueRow struct{ Queue, Class, Nominal, Limit, Used string }

func checkQueues(t *testing.T, b *browser, api *restAPI) {
	b.open("#/queues", "queues")
	waitShows(b, "queues page", `[...document.querySelectorAll('#queues tr[data-queue]')].map(r => ({Queue: r.dataset.queue,
		Class: r.dataset.class, Nominal: r.querySelector('[data-field=nominal]').textContent,
		Limit: r.querySelector('[data-field=borrowingLimit]').textContent, Used: r.querySelector('[data-field=used]').textContent}))`,
		func(rows []queueRow) error {
			shown := map[string]queueRow{}
			for _, r := range rows {
				shown[r.Queue+"/"+r.Class] = r
			}
			n := 0
			for _, q := range api.queues(t) {
				for class, quota := range q.Spec.Quotas {
					n++
					r := shown[q.Name+"/"+class]
					limit := "unlimited"
					if quota.BorrowingLimit != nil {
						limit = strconv.Itoa(int(*quota.BorrowingLimit))
					}
					err := equalAll(equal(q.Name+" "+class+" nominal", r.Nominal, strconv.Itoa(int(quota.Nominal))),
						equal(q.Name+" "+class+" borrowing limit", r.Limit, limit),
						equal(q.Name+" "+class+" used", r.Used, strconv.Itoa(int(q.Status.UsedGPUs[class]))))
					if err != nil {
						return err
					}
				}
			}
			// research: h100, gb200; research/nlp: h100; batch: a100.
			return equal("quota rows", n, 4)
		})
	b.shot("queues")
}

type poolRow struct{ Pool, State, Clusters, Nodes, GPUs, Used, Free, Idle string }

func checkPools(t *testing.T, b *browser, api *restAPI) {
	b.open("#/pools", "pools")
	waitShows(b, "pools page", `[...document.querySelectorAll('#pools tr[data-pool]')].map(r => ({Pool: r.dataset.pool,
		State: r.querySelector('[data-field=state]').textContent, Clusters: r.querySelector('[data-field=clusters]').textContent,
		Nodes: r.querySelector('[data-field=nodes]').textContent, GPUs: r.querySelector('[data-field=gpus]').textContent,
		Used: r.querySelector('[data-field=used]').textContent, Free: r.querySelector('[data-field=free]').textContent,
		Idle: r.querySelector('[data-field=idle]').textContent}))`,
		func(rows []poolRow) error {
			ps := api.pools(t)
			if len(rows) != len(ps) || len(ps) != 1 {
				return fmt.Errorf("%d rows, the API has %d pools (want 1)", len(rows), len(ps))
			}
			p, r := ps[0], rows[0]
			return equalAll(equal("pool", r.Pool, poolA100), equal("state", r.State, "Open scale to zero"),
				equal("clusters", r.Clusters, strings.Join(p.Status.Clusters, ", ")),
				equal("nodes", r.Nodes, strconv.Itoa(int(p.Status.Nodes))), equal("GPUs", r.GPUs, strconv.Itoa(int(p.Status.GPUs))),
				equal("used", r.Used, strconv.Itoa(int(p.Status.UsedGPUs))), equal("free", r.Free, strconv.Itoa(int(p.Status.FreeGPUs))),
				equal("idle nodes", r.Idle, strconv.Itoa(len(p.Status.IdleNodes))), equal("a100 clusters", len(p.Status.Clusters), 1))
		})
	b.shot("pools")
}

type serviceRows struct {
	Services  []struct{ Service, Model, Ready, Clusters string }
	Endpoints []struct{ Replica, Ready, Address string }
}

func checkServices(t *testing.T, b *browser, api *restAPI) {
	b.open("#/services", "services")
	waitShows(b, "services page", `({Services: [...document.querySelectorAll('#services tr[data-service]')].map(r => ({
		Service: r.dataset.service, Model: r.querySelector('[data-field=model]').textContent,
		Ready: r.querySelector('[data-field=ready]').textContent, Clusters: r.querySelector('[data-field=clusters]').textContent})),
		Endpoints: [...document.querySelectorAll('#services tr[data-endpoint]')].map(r => ({Replica: r.dataset.endpoint,
		Ready: r.querySelector('[data-field=ready]').textContent, Address: r.querySelector('[data-field=address]').textContent}))})`,
		func(rows serviceRows) error {
			ss := api.services(t)
			if len(rows.Services) != 1 || len(ss) != 1 {
				return fmt.Errorf("%d service rows, the API has %d services (want 1)", len(rows.Services), len(ss))
			}
			s, r := ss[0], rows.Services[0]
			if err := equalAll(equal("service", r.Service, serviceChat), equal("model", r.Model, s.Status.Model),
				equal("ready", r.Ready, fmt.Sprintf("%d/%d", s.Status.ReadyReplicas, s.Status.Replicas)),
				equal("endpoint rows", len(rows.Endpoints), len(s.Status.Endpoints))); err != nil {
				return err
			}
			for i, e := range s.Status.Endpoints {
				ready := "NotReady"
				if e.Ready {
					ready = "Ready"
				}
				addr := "—"
				if e.Address != "" {
					addr = fmt.Sprintf("%s:%d", e.Address, e.Port)
				}
				if err := equalAll(equal("clusters", r.Clusters, e.Cluster), equal("replica", rows.Endpoints[i].Replica, e.Replica),
					equal("endpoint ready", rows.Endpoints[i].Ready, ready), equal("address", rows.Endpoints[i].Address, addr)); err != nil {
					return err
				}
			}
			return nil
		})
	b.shot("services")
}

type memberRow struct{ Index, Cluster string }

func checkJob(t *testing.T, b *browser, api *restAPI) {
	b.open("#/jobs", "jobs")
	b.shot("jobs")
	for _, name := range []string{jobNVL, jobLLM} {
		b.open("#/jobs/"+name, "jobs")
		j := api.job(t, name)
		waitShows(b, name+" members", `[...document.querySelectorAll('#members tr[data-member]')].map(r => ({
			Index: r.dataset.member, Cluster: r.querySelector('[data-field=cluster]').textContent}))`,
			func(rows []memberRow) error {
				if len(rows) != len(j.Status.Members) || len(rows) == 0 {
					return fmt.Errorf("%d member rows, the API has %d members", len(rows), len(j.Status.Members))
				}
				for i, m := range j.Status.Members {
					if err := equalAll(equal("member", rows[i].Index, strconv.Itoa(int(m.Index))),
						equal(fmt.Sprintf("member %d cluster", m.Index), rows[i].Cluster, m.Cluster)); err != nil {
						return err
					}
				}
				return nil
			})
		waitShows(b, name+" timeline", `[...document.querySelectorAll('#timeline li[data-step]')].map(e => e.dataset.step)`,
			func(steps []string) error {
				if want := []string{"submitted", "placed", "preparing", "committed", "running"}; !slices.Equal(steps, want) {
					return fmt.Errorf("timeline %v, want %v", steps, want)
				}
				return nil
			})
	}
	b.shot("job")
}

type waitingRow struct{ Job, Reason, Message string }

func checkWaiting(t *testing.T, b *browser, api *restAPI) {
	b.open("#/waiting", "jobs")
	j := api.job(t, jobWaiting)
	c := meta.FindStatusCondition(j.Status.Conditions, v1alpha1.JobConditionPlaced)
	waitShows(b, "waiting page", `[...document.querySelectorAll('#waiting tr[data-job]')].map(r => ({Job: r.dataset.job,
		Reason: r.querySelector('[data-field=reason]').textContent, Message: r.querySelector('[data-field=message]').textContent}))`,
		func(rows []waitingRow) error {
			if len(rows) != 1 {
				return fmt.Errorf("%d waiting jobs, want %s only", len(rows), jobWaiting)
			}
			return equalAll(equal("waiting job", rows[0].Job, jobWaiting), equal("reason", rows[0].Reason, c.Reason),
				equal("message", rows[0].Message, c.Message))
		})
	b.shot("waiting")
}

// checkLive submits a job while the jobs page is open and waits for its row
// to turn Running: the page is not reloaded (a marker set on the window
// survives), lists the jobs no second time and shows its watch stream
// delivering (the watch brought it).
func checkLive(t *testing.T, b *browser, api *restAPI) {
	b.open("#/jobs", "jobs")
	const lists = `performance.getEntriesByType('resource').filter(e => /\/v1\/jobs\?/.test(e.name)).length`
	before, err := eval[int](b, `window.shoalMarker = 42; `+lists)
	if err != nil {
		t.Fatal(err)
	}
	shoal(t, gang(jobLive, "batch", 1, 2, "NVIDIA-A100-SXM4-80GB", ""), "job", "submit", "-f", "-")
	waitShows(b, "the submitted job", `(document.querySelector('#jobs tr[data-job="`+jobLive+`"] [data-field=phase]') || {}).textContent || ''`,
		func(phase string) error { return equal(jobLive+" phase", phase, string(v1alpha1.JobRunning)) })
	type state struct {
		Marker, Lists int
		Live          string
	}
	s, err := eval[state](b, `({Marker: window.shoalMarker || 0, Lists: `+lists+`, Live: document.body.dataset.live})`)
	if err != nil || s.Marker != 42 || s.Lists != before || s.Live != "live" {
		t.Fatalf("after the update: %+v (%v), want the marker 42 (no reload), %d job lists (no new one) and the watch live", s, err, before)
	}
	if j := api.job(t, jobLive); j.Status.Phase != v1alpha1.JobRunning {
		t.Fatalf("the API has %s %s", jobLive, j.Status.Phase)
	}
}

func equalAll(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
