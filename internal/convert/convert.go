// SPDX-License-Identifier: Apache-2.0

package convert

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// The source kinds Convert reads.
const (
	PyTorchJobAPIVersion = "kubeflow.org/v1"
	PyTorchJobKind       = "PyTorchJob"
	JobSetAPIVersion     = "jobset.x-k8s.io/v1alpha2"
	JobSetKind           = "JobSet"
)

// ErrUnreadable is wrapped by every error about input Convert cannot read:
// not YAML or JSON, a kind it does not convert, or a field of the wrong type.
var ErrUnreadable = errors.New("unreadable manifest")

// Options are the choices a manifest does not make.
type Options struct {
	// Queue is the Shoal queue of the job. When empty, the source's
	// scheduling queue (PyTorchJob runPolicy.schedulingPolicy.queue) is
	// used, else DefaultQueue.
	Queue string
}

// DefaultQueue is the queue of a converted job when neither the options
// nor the source name one.
const DefaultQueue = "default"

// Result is a converted job.
type Result struct {
	// Job is the Shoal Job, not defaulted.
	Job *v1alpha1.Job
	// Dropped lists, sorted, each field of the source the job does not
	// carry, as "path: why".
	Dropped []string
	// Notes lists the choices the conversion made that the source did not
	// spell out (the queue, a role's GPUs).
	Notes []string
}

// Convert reads one PyTorchJob or JobSet manifest (YAML or JSON).
func Convert(data []byte, opts Options) (*Result, error) {
	var src map[string]any
	if err := yaml.Unmarshal(data, &src); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUnreadable, err)
	}
	if src == nil {
		return nil, fmt.Errorf("%w: empty document", ErrUnreadable)
	}
	c := &converter{opts: opts, dropped: map[string]string{}}
	apiVersion, _ := c.str(src, "apiVersion", "")
	kind, _ := c.str(src, "kind", "")
	var err error
	switch {
	case apiVersion == PyTorchJobAPIVersion && kind == PyTorchJobKind:
		err = c.pytorchJob(src)
	case apiVersion == JobSetAPIVersion && kind == JobSetKind:
		err = c.jobSet(src)
	default:
		return nil, fmt.Errorf("%w: %s %s is neither a %s %s nor a %s %s", ErrUnreadable, apiVersion, kind,
			PyTorchJobAPIVersion, PyTorchJobKind, JobSetAPIVersion, JobSetKind)
	}
	if err != nil {
		return nil, err
	}
	c.leftovers("", src)
	res := &Result{Job: c.job, Notes: c.notes}
	for p, why := range c.dropped {
		res.Dropped = append(res.Dropped, p+": "+why)
	}
	sort.Strings(res.Dropped)
	return res, nil
}

// converter holds one conversion's state.
type converter struct {
	opts    Options
	job     *v1alpha1.Job
	dropped map[string]string // path → why
	notes   []string
}

// newJob starts the job from the source's metadata and queue.
func (c *converter) newJob(src map[string]any, queue string) error {
	md, err := c.obj(src, "metadata", "metadata")
	if err != nil {
		return err
	}
	j := &v1alpha1.Job{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindJob}}
	j.Name, _ = c.str(md, "name", "metadata.name")
	if j.Labels, err = c.strMap(md, "labels", "metadata.labels"); err != nil {
		return err
	}
	if j.Annotations, err = c.strMap(md, "annotations", "metadata.annotations"); err != nil {
		return err
	}
	if _, ok := md["namespace"]; ok {
		c.dropped["metadata.namespace"] = "Shoal jobs have no namespace; members run in the namespace " +
			"the hub and agents use for jobs"
		delete(md, "namespace")
	}
	c.leftovers("metadata", md)
	delete(src, "metadata")
	switch {
	case c.opts.Queue != "":
		j.Spec.Queue = c.opts.Queue
	case queue != "":
		j.Spec.Queue = queue
	default:
		j.Spec.Queue = DefaultQueue
		c.notes = append(c.notes, fmt.Sprintf("spec.queue: the source names no queue; set to %q (use --queue)", DefaultQueue))
	}
	c.job = j
	return nil
}

// role builds a role from a pod template (taken whole from m[key]): the
// members' GPUs (or MIG slices) are what the template's containers ask for.
func (c *converter) role(name string, members int32, m map[string]any, key, path string) (v1alpha1.Role, error) {
	r := v1alpha1.Role{Name: strings.ToLower(name), Members: members}
	raw, ok := m[key]
	if !ok {
		return r, fmt.Errorf("%w: %s is missing", ErrUnreadable, path)
	}
	delete(m, key)
	b, err := json.Marshal(raw)
	if err != nil {
		return r, fmt.Errorf("%w: %s: %v", ErrUnreadable, path, err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r.Template); err != nil {
		return r, fmt.Errorf("%w: %s is not a pod template: %v", ErrUnreadable, path, err)
	}
	if n := v1alpha1.TemplateResource(&r.Template, v1alpha1.ResourceGPU); n > 0 {
		r.GPUsPerMember = int32(n)
	}
	for _, res := range migResources(&r.Template) {
		n := v1alpha1.TemplateResource(&r.Template, res)
		profile := strings.TrimPrefix(string(res), "nvidia.com/mig-")
		if r.MIG == nil && r.GPUsPerMember == 0 {
			r.MIG = &v1alpha1.MIGRequest{Profile: profile, PerMember: int32(n)}
			continue
		}
		c.notes = append(c.notes, fmt.Sprintf("role %s asks for %s as well; a Shoal role asks for one GPU resource", r.Name, res))
	}
	if r.GPUsPerMember == 0 && r.MIG == nil {
		c.notes = append(c.notes, fmt.Sprintf("role %s asks for no nvidia.com/gpu: a CPU-only role", r.Name))
	}
	return r, nil
}

// migResources lists the MIG resources of a template's containers, sorted.
func migResources(t *corev1.PodTemplateSpec) []corev1.ResourceName {
	seen := map[corev1.ResourceName]bool{}
	for _, ct := range t.Spec.Containers {
		for _, rl := range []corev1.ResourceList{ct.Resources.Limits, ct.Resources.Requests} {
			for n, q := range rl {
				if strings.HasPrefix(string(n), "nvidia.com/mig-") && !q.IsZero() {
					seen[n] = true
				}
			}
		}
	}
	out := make([]corev1.ResourceName, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// leftovers reports every field left in m under path as not carried.
func (c *converter) leftovers(path string, m map[string]any) {
	for k := range m {
		p := k
		if path != "" {
			p = path + "." + k
		}
		if _, done := c.dropped[p]; !done {
			c.dropped[p] = "no Shoal equivalent; not carried"
		}
	}
}

// drop takes m[key] out, reporting it with why when present.
func (c *converter) drop(m map[string]any, key, path, why string) {
	if _, ok := m[key]; ok {
		c.dropped[path] = why
		delete(m, key)
	}
}

// obj takes the object m[key] out of m (nil, nil when absent).
func (c *converter) obj(m map[string]any, key, path string) (map[string]any, error) {
	v, ok := m[key]
	if !ok || v == nil {
		delete(m, key)
		return nil, nil
	}
	o, ok := v.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("%w: %s is a %T, not an object", ErrUnreadable, path, v)
	}
	return o, nil
}

// str takes the string m[key] out of m.
func (c *converter) str(m map[string]any, key, path string) (string, bool) {
	v, ok := m[key].(string)
	if ok {
		delete(m, key)
	}
	return v, ok
}

// int32 takes the number m[key] out of m; def when absent.
func (c *converter) int32(m map[string]any, key, path string, def int32) (int32, error) {
	v, ok := m[key]
	if !ok {
		return def, nil
	}
	delete(m, key)
	switch n := v.(type) {
	case float64:
		if n != float64(int32(n)) {
			return 0, fmt.Errorf("%w: %s is %v, not a whole number", ErrUnreadable, path, n)
		}
		return int32(n), nil
	case string:
		q, err := resource.ParseQuantity(n)
		if err != nil {
			return 0, fmt.Errorf("%w: %s is %q, not a number", ErrUnreadable, path, n)
		}
		return int32(q.Value()), nil
	}
	return 0, fmt.Errorf("%w: %s is a %T, not a number", ErrUnreadable, path, v)
}

// strMap takes the string map m[key] out of m.
func (c *converter) strMap(m map[string]any, key, path string) (map[string]string, error) {
	o, err := c.obj(m, key, path)
	if err != nil || o == nil {
		delete(m, key)
		return nil, err
	}
	delete(m, key)
	out := make(map[string]string, len(o))
	for k, v := range o {
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("%w: %s.%s is a %T, not a string", ErrUnreadable, path, k, v)
		}
		out[k] = s
	}
	return out, nil
}

// YAML renders a converted job as a manifest for shoal job submit: no
// status, no empty creation time.
func YAML(j *v1alpha1.Job) ([]byte, error) {
	b, err := json.Marshal(j)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	stripNullTimes(m)
	if spec, ok := m["spec"].(map[string]any); ok {
		for _, k := range []string{"placement", "preemption", "failurePolicy"} {
			if o, ok := spec[k].(map[string]any); ok {
				if t, ok := o["topology"].(map[string]any); ok && len(t) == 0 {
					delete(o, "topology")
				}
				if len(o) == 0 {
					delete(spec, k)
				}
			}
		}
	}
	return yaml.Marshal(m)
}

// stripNullTimes drops the "creationTimestamp: null" that every embedded
// ObjectMeta (the pod templates') marshals to, and a metadata left empty.
// Other empty objects stay: in a pod template they mean something
// (emptyDir: {}).
func stripNullTimes(v any) {
	switch x := v.(type) {
	case map[string]any:
		if md, ok := x["metadata"].(map[string]any); ok {
			if t, ok := md["creationTimestamp"]; ok && t == nil {
				delete(md, "creationTimestamp")
			}
			if len(md) == 0 {
				delete(x, "metadata")
			}
		}
		for _, e := range x {
			stripNullTimes(e)
		}
	case []any:
		for _, e := range x {
			stripNullTimes(e)
		}
	}
}
