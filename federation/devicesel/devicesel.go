// SPDX-License-Identifier: Apache-2.0

// Package devicesel matches Dynamic Resource Allocation requests to GPUs
// with the CEL library the kube-scheduler's DRA allocator uses
// (k8s.io/dynamic-resource-allocation/cel): a job's device request
// (apis/v1alpha1 DeviceRequest) against the GPUs of a node as the agent
// reports them (federation/inventory DRADevices), and a cluster's
// DeviceClasses against those GPUs. It is pure: no clients, no clocks.
package devicesel

import (
	"context"
	"fmt"
	"sort"
	"sync"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	dracel "k8s.io/dynamic-resource-allocation/cel"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
)

// compiled caches compiled expressions by their text: a scheduling cycle
// matches every waiting device gang against every node class, and the
// agent every class against every node on each inventory build.
var compiled sync.Map // string -> dracel.CompilationResult

func compile(expr string) dracel.CompilationResult {
	if r, ok := compiled.Load(expr); ok {
		return r.(dracel.CompilationResult)
	}
	r := dracel.GetCompiler(dracel.Features{}).CompileCELExpression(expr, dracel.Options{})
	compiled.Store(expr, r)
	return r
}

// Validate compiles the request's selectors as the API server compiles a
// ResourceClaim's; each that does not compile is an Invalid field error at
// p.selectors[i].cel.expression.
func Validate(d *v1alpha1.DeviceRequest, p *field.Path) field.ErrorList {
	if d == nil {
		return nil
	}
	var errs field.ErrorList
	for i, s := range d.Selectors {
		if s.CEL == nil || s.CEL.Expression == "" {
			continue // apis/v1alpha1 validation says it is required
		}
		if r := compile(s.CEL.Expression); r.Error != nil {
			errs = append(errs, field.Invalid(p.Child("selectors").Index(i).Child("cel", "expression"),
				s.CEL.Expression, r.Error.Detail))
		}
	}
	return errs
}

// Request is a job's device request ready to match node GPUs.
type Request struct {
	class string
	exprs []string
}

// NewRequest returns the matcher of a device request (nil for nil).
func NewRequest(d *v1alpha1.DeviceRequest) *Request {
	if d == nil {
		return nil
	}
	r := &Request{class: d.DeviceClassName}
	for _, s := range d.Selectors {
		if s.CEL != nil {
			r.exprs = append(r.exprs, s.CEL.Expression)
		}
	}
	return r
}

// Matches reports whether the node GPUs d serve the request: the request's
// DeviceClass selects them and every selector evaluates to true. A
// selector that does not compile or fails to evaluate (an attribute the
// GPUs lack) matches nothing, as the DRA allocator skips such a device.
func (r *Request) Matches(d *inventory.DRADevices) bool {
	if d == nil {
		return false
	}
	i := sort.SearchStrings(d.Classes, r.class)
	if i == len(d.Classes) || d.Classes[i] != r.class {
		return false
	}
	return allMatch(r.exprs, d)
}

// String names the request in explanations.
func (r *Request) String() string {
	return fmt.Sprintf("devices of class %s matching %d selector(s)", r.class, len(r.exprs))
}

// ClassesSelecting returns the names of the classes whose selectors all
// match the GPUs d, sorted: the DeviceClasses through which a claim could
// get them. A class being deleted selects nothing.
func ClassesSelecting(classes []*resourcev1.DeviceClass, d *inventory.DRADevices) []string {
	var out []string
	for _, c := range classes {
		if c == nil || c.DeletionTimestamp != nil {
			continue
		}
		var exprs []string
		ok := true
		for _, s := range c.Spec.Selectors {
			if s.CEL == nil {
				ok = false // a selector kind this version cannot evaluate
				break
			}
			exprs = append(exprs, s.CEL.Expression)
		}
		if ok && allMatch(exprs, d) {
			out = append(out, c.Name)
		}
	}
	sort.Strings(out)
	return out
}

func allMatch(exprs []string, d *inventory.DRADevices) bool {
	dev := device(d)
	for _, e := range exprs {
		r := compile(e)
		if r.Error != nil {
			return false
		}
		ok, _, err := r.DeviceMatches(context.Background(), dev)
		if err != nil || !ok {
			return false
		}
	}
	return true
}

func device(d *inventory.DRADevices) dracel.Device {
	dev := dracel.Device{Driver: d.Driver,
		Attributes: make(map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, len(d.Attributes)),
		Capacity:   make(map[resourcev1.QualifiedName]resourcev1.DeviceCapacity, len(d.Capacity))}
	for k, v := range d.Attributes {
		dev.Attributes[resourcev1.QualifiedName(k)] = v
	}
	for k, v := range d.Capacity {
		dev.Capacity[resourcev1.QualifiedName(k)] = resourcev1.DeviceCapacity{Value: v}
	}
	return dev
}

// SetClasses fills the Classes of every node's DRADevices of the cluster
// from its DeviceClasses, evaluating the classes once per kind of GPU.
func SetClasses(c *inventory.Cluster, classes []*resourcev1.DeviceClass) {
	seen := map[string][]string{}
	for i := range c.Nodes {
		d := c.Nodes[i].DRADevices
		if d == nil {
			continue
		}
		d.Classes = nil
		k := d.Key()
		cs, ok := seen[k]
		if !ok {
			cs = ClassesSelecting(classes, d)
			seen[k] = cs
		}
		d.Classes = cs
	}
}
