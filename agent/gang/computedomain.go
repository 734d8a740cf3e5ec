// SPDX-License-Identifier: Apache-2.0

package gang

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	fedinv "github.com/shoal-dev/shoal/federation/inventory"
)

// Compute domains (docs/compute-domains.md). A member of a gang with
// spec.gang.computeDomain is created naming the IMEX channel template of
// its NVLink clique's ComputeDomain (names are deterministic per job,
// epoch and clique, so the pod exists before the domain). Prepare creates
// the domain — numNodes the slice's nodes in that clique, owned by the
// clique's local pods — and reports the member Prepared only once the
// domain's controller has accepted it: its channel ResourceClaimTemplate
// exists. Readiness cannot be waited for before the commit: NVIDIA's driver
// starts a domain's IMEX daemons only on nodes where a channel claim is
// prepared, i.e. after the gated pods bind. After the commit the agent
// watches the domain; one not Ready within the bound stops the clique's
// members (Stopper.Fail, reason ComputeDomainNotReady), so the hub aborts
// the epoch.

// ComputeDomainResource is the ComputeDomain custom resource.
var ComputeDomainResource = schema.GroupVersionResource{Group: fedinv.ComputeDomainGroup,
	Version: fedinv.ComputeDomainVersion, Resource: fedinv.ComputeDomainResource}

// DefaultComputeDomainReadyTimeout bounds the time from a member's commit
// until its ComputeDomain is Ready.
const DefaultComputeDomainReadyTimeout = 5 * time.Minute

// errWaitComputeDomain: the member is retried, not reported, until the
// domain's controller has created its channel template.
var errWaitComputeDomain = errors.New("waiting for the ComputeDomain's channel template")

// WithComputeDomains lets the Gate create and watch ComputeDomains through
// client (a dynamic client of the workload cluster); readyTimeout bounds
// the wait for a committed domain's readiness (0: the default).
func WithComputeDomains(client dynamic.Interface, readyTimeout time.Duration) Option {
	return func(g *Gate) {
		g.domains = client
		g.domainTimeout = readyTimeout
		if readyTimeout <= 0 {
			g.domainTimeout = DefaultComputeDomainReadyTimeout
		}
	}
}

// watchedDomain is a committed ComputeDomain the Gate waits to see Ready.
type watchedDomain struct {
	ns, name, job string
	epoch         int64
	deadline      time.Time
}

// cliqueKey is the node label naming a node's NVLink domain: the agent's
// topology map's (the one placement read), else GFD's nvidia.com/gpu.clique.
func (g *Gate) cliqueKey() string {
	if g.topology != nil {
		if keys, ok := g.topology(); ok && keys.NVLink != "" {
			return keys.NVLink
		}
	}
	return fedinv.LabelGPUClique
}

// memberClique returns the NVLink clique of a member's target node, from
// the cache; "" when it has none.
func (g *Gate) memberClique(p *corev1.Pod) string {
	n, err := g.cache.Nodes().Get(p.Annotations[v1alpha1.AnnotationTargetNode])
	if err != nil {
		return ""
	}
	return n.Labels[g.cliqueKey()]
}

// useDomain makes the local pod of a compute-domain member use the channel
// of its clique's domain: a pod claim from the channel template, used by
// the first container. A member whose node has no clique is left without
// (Prepare reports it unprepared).
func (g *Gate) useDomain(hub, local *corev1.Pod, epoch int64) {
	if _, ok, err := v1alpha1.MemberComputeDomainOf(hub.Annotations); !ok || err != nil {
		return
	}
	clique := g.memberClique(hub)
	if clique == "" {
		return
	}
	for _, c := range local.Spec.ResourceClaims {
		if c.Name == v1alpha1.ComputeDomainClaim {
			return
		}
	}
	tmpl := v1alpha1.ComputeDomainChannelTemplate(v1alpha1.ComputeDomainName(hub.Labels[v1alpha1.LabelJob], epoch, clique))
	local.Spec.ResourceClaims = append(local.Spec.ResourceClaims, corev1.PodResourceClaim{
		Name: v1alpha1.ComputeDomainClaim, ResourceClaimTemplateName: ptr.To(tmpl)})
	if len(local.Spec.Containers) > 0 {
		c := &local.Spec.Containers[0]
		c.Resources.Claims = append(c.Resources.Claims, corev1.ResourceClaim{Name: v1alpha1.ComputeDomainClaim})
	}
}

// prepareDomain makes the member's ComputeDomain exist and checks that its
// controller accepted it. It returns a reason and message when the member
// cannot be prepared, errWaitComputeDomain while the channel template is
// missing, and other errors for API failures (both retried).
func (g *Gate) prepareDomain(ctx context.Context, lp *corev1.Pod) (reason, msg string, err error) {
	d, ok, err := v1alpha1.MemberComputeDomainOf(lp.Annotations)
	if !ok {
		return "", "", nil
	}
	if err != nil {
		return v1alpha1.ReasonNoComputeDomain, err.Error(), nil
	}
	if g.domains == nil || !g.cache.ServesComputeDomains() {
		return v1alpha1.ReasonNoComputeDomain, "the cluster does not serve ComputeDomains (resource.nvidia.com/v1beta1)", nil
	}
	clique := g.memberClique(lp)
	if clique == "" {
		return v1alpha1.ReasonNoComputeDomain, fmt.Sprintf("node %s has no %s label", lp.Annotations[v1alpha1.AnnotationTargetNode],
			g.cliqueKey()), nil
	}
	num := int64(0)
	for _, name := range d.Nodes {
		if n, err := g.cache.Nodes().Get(name); err == nil && n.Labels[g.cliqueKey()] == clique {
			num++
		}
	}
	job, epoch, _ := member(lp)
	name := v1alpha1.ComputeDomainName(lp.Labels[v1alpha1.LabelJob], epoch, clique)
	cd, err := g.ensureDomain(ctx, lp, name, num)
	if err != nil {
		return "", "", err
	}
	if got, _, _ := unstructured.NestedInt64(cd.Object, "spec", "numNodes"); got != num {
		return v1alpha1.ReasonNoComputeDomain, fmt.Sprintf("ComputeDomain %s/%s has numNodes %d, the slice has %d nodes in clique %s",
			lp.Namespace, name, got, num, clique), nil
	}
	tmpl := v1alpha1.ComputeDomainChannelTemplate(name)
	if _, err := g.local.ResourceV1().ResourceClaimTemplates(lp.Namespace).Get(ctx, tmpl, metav1.GetOptions{}); apierrors.IsNotFound(err) {
		return "", "", fmt.Errorf("%w %s/%s (job %s)", errWaitComputeDomain, lp.Namespace, tmpl, job)
	} else if err != nil {
		return "", "", fmt.Errorf("get ResourceClaimTemplate %s/%s: %w", lp.Namespace, tmpl, err)
	}
	return "", "", nil
}

// ensureDomain returns the ComputeDomain name for the member's clique,
// creating it (numNodes num, channel template ComputeDomainChannelTemplate)
// or adding the member's local pod to its owners, so that the domain goes
// with the last of the clique's members.
func (g *Gate) ensureDomain(ctx context.Context, lp *corev1.Pod, name string, num int64) (*unstructured.Unstructured, error) {
	domains := g.domains.Resource(ComputeDomainResource).Namespace(lp.Namespace)
	owner := map[string]any{"apiVersion": "v1", "kind": "Pod", "name": lp.Name, "uid": string(lp.UID)}
	for range 5 {
		cd, err := domains.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			cd = newDomain(lp, name, num, owner)
			created, err := domains.Create(ctx, cd, metav1.CreateOptions{})
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err == nil {
				klog.FromContext(ctx).V(2).Info("ComputeDomain created", "computeDomain", klog.KRef(lp.Namespace, name), "numNodes", num)
			}
			return created, err
		}
		if err != nil {
			return nil, fmt.Errorf("get ComputeDomain %s/%s: %w", lp.Namespace, name, err)
		}
		for _, o := range cd.GetOwnerReferences() {
			if o.UID == lp.UID {
				return cd, nil
			}
		}
		refs := append(cd.GetOwnerReferences(), metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: lp.Name, UID: lp.UID})
		cd.SetOwnerReferences(refs)
		updated, err := domains.Update(ctx, cd, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("own ComputeDomain %s/%s: %w", lp.Namespace, name, err)
		}
		return updated, nil
	}
	return nil, fmt.Errorf("ComputeDomain %s/%s kept conflicting", lp.Namespace, name)
}

// newDomain is the ComputeDomain of one clique of a gang slice.
func newDomain(lp *corev1.Pod, name string, num int64, owner map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": fedinv.ComputeDomainGroup + "/" + fedinv.ComputeDomainVersion,
		"kind":       fedinv.ComputeDomainKind,
		"metadata": map[string]any{
			"name": name, "namespace": lp.Namespace,
			"labels": map[string]any{v1alpha1.LabelManaged: "true", v1alpha1.LabelJob: lp.Labels[v1alpha1.LabelJob],
				v1alpha1.LabelEpoch: lp.Annotations[v1alpha1.AnnotationEpoch]},
			"ownerReferences": []any{owner},
		},
		"spec": map[string]any{
			"numNodes": num,
			"channel": map[string]any{
				"resourceClaimTemplate": map[string]any{"name": v1alpha1.ComputeDomainChannelTemplate(name)},
				"allocationMode":        "Single",
			},
		},
	}}
}

// watchDomain starts the readiness bound of a committed member's domain.
func (g *Gate) watchDomain(hub *corev1.Pod, epoch int64) {
	if g.domains == nil {
		return
	}
	if _, ok, err := v1alpha1.MemberComputeDomainOf(hub.Annotations); !ok || err != nil {
		return
	}
	clique := g.memberClique(hub)
	if clique == "" {
		return
	}
	job := hub.Labels[v1alpha1.LabelJob]
	w := watchedDomain{ns: localNamespace(hub), name: v1alpha1.ComputeDomainName(job, epoch, clique), job: job, epoch: epoch,
		deadline: g.clock.Now().Add(g.domainTimeout)}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := w.ns + "/" + w.name
	if _, ok := g.watched[k]; !ok {
		g.watched[k] = w
	}
}

// runDomains checks the committed domains every interval until ctx ends:
// a Ready one is forgotten, one past its bound has its members stopped.
func (g *Gate) runDomains(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		g.mu.Lock()
		var due []watchedDomain
		for _, w := range g.watched {
			due = append(due, w)
		}
		g.mu.Unlock()
		for _, w := range due {
			g.checkDomain(ctx, w)
		}
	}
}

// checkDomain looks at one committed domain.
func (g *Gate) checkDomain(ctx context.Context, w watchedDomain) {
	log := klog.FromContext(ctx)
	k := w.ns + "/" + w.name
	cd, err := g.domains.Resource(ComputeDomainResource).Namespace(w.ns).Get(ctx, w.name, metav1.GetOptions{})
	if err == nil {
		if s, _, _ := unstructured.NestedString(cd.Object, "status", "status"); s == fedinv.ComputeDomainStatusReady {
			log.V(2).Info("ComputeDomain Ready", "computeDomain", klog.KRef(w.ns, w.name))
			g.forget(k)
			return
		}
	} else if !apierrors.IsNotFound(err) {
		log.V(2).Info("Reading ComputeDomain failed", "computeDomain", klog.KRef(w.ns, w.name), "err", err)
	}
	if g.current(w.ns+"/"+w.job) > w.epoch {
		g.forget(k) // a newer epoch: the stale members go anyway
		return
	}
	if g.clock.Now().Before(w.deadline) {
		return
	}
	msg := fmt.Sprintf("ComputeDomain %s not Ready %s after the commit: its IMEX daemons did not start", w.name, g.domainTimeout)
	pods, err := g.cache.PodsOfJob(w.ns, w.job)
	if err != nil {
		return
	}
	tmpl := v1alpha1.ComputeDomainChannelTemplate(w.name)
	for _, p := range pods {
		if p.Annotations[v1alpha1.AnnotationEpoch] != strconv.FormatInt(w.epoch, 10) || !usesTemplate(p, tmpl) {
			continue
		}
		if err := g.stopper.Fail(ctx, p.Namespace, p.Name, v1alpha1.ReasonComputeDomainNotReady, msg, nil); err != nil {
			log.Error(err, "Stopping a member of a ComputeDomain not Ready", "pod", klog.KObj(p))
			return // retried at the next tick
		}
	}
	log.Info("ComputeDomain not Ready in time, members stopped", "computeDomain", klog.KRef(w.ns, w.name), "timeout", g.domainTimeout)
	g.forget(k)
}

func (g *Gate) forget(k string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.watched, k)
}

// usesTemplate reports whether a pod claims from the named template.
func usesTemplate(p *corev1.Pod, tmpl string) bool {
	for _, c := range p.Spec.ResourceClaims {
		if c.ResourceClaimTemplateName != nil && *c.ResourceClaimTemplateName == tmpl {
			return true
		}
	}
	return false
}
