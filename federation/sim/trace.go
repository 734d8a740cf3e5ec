// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/federation/inventory"
	"github.com/shoal-dev/shoal/federation/placement"
)

// Trace is a recorded fleet and workload to replay instead of a generated
// one: the jobs arrive at their submit times and run for their recorded
// durations.
type Trace struct {
	// Name labels the results (Result.Fleet).
	Name string
	// Clusters are the fleet's empty inventories (ReadFleet).
	Clusters []inventory.Cluster
	// Jobs are in arrival order, arrivals counted from the first submit (ReadWorkload).
	Jobs []Job
	// Skipped counts rows left out: no GPUs, not kept, or invalid with SkipInvalid.
	Skipped int
}

// Queues returns a flat tree of the trace's queues (and their parents, for
// names with "/"), weight 1 each and no quotas.
func (t *Trace) Queues() []placement.Queue {
	seen := map[string]bool{}
	var out []placement.Queue
	for _, j := range t.Jobs {
		parts := strings.Split(j.Gang.Queue, "/")
		for i := range parts {
			q := strings.Join(parts[:i+1], "/")
			if !seen[q] {
				seen[q] = true
				out = append(out, placement.Queue{Name: q, Weight: 1})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// leaves are the queues jobs are submitted to, sorted.
func (t *Trace) leaves() []LeafQueue {
	seen := map[string]bool{}
	var out []LeafQueue
	for _, j := range t.Jobs {
		if !seen[j.Gang.Queue] {
			seen[j.Gang.Queue] = true
			out = append(out, LeafQueue{Name: j.Gang.Queue})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// errSkip marks a row that is left out rather than an error.
var errSkip = errors.New("skipped")

// ReadWorkload reads a workload file with its column mapping into jobs for
// the fleet, in arrival order (ties in file order). Each job becomes a gang
// as the hub would make it of a Job with the same spec: priority class
// (default batch) with its default preemptibility, 30 s grace, BinPack.
func ReadWorkload(r io.Reader, m Mapping, fleet []inventory.Cluster) ([]Job, int, error) {
	if err := m.check(); err != nil {
		return nil, 0, fmt.Errorf("mapping: %w", err)
	}
	rows, header, err := readRows(r, m.Format, m.Delimiter, m.Header)
	if err != nil {
		return nil, 0, err
	}
	cols := map[string]string{}
	for f, col := range m.Columns.byField() {
		cols["columns."+f] = col
	}
	for col := range m.Keep {
		cols["keep."+col] = col
	}
	if err := needColumns(header, cols); err != nil {
		return nil, 0, fmt.Errorf("mapping: %w", err)
	}
	if m.MaxGPUsPerMember == 0 {
		for _, c := range fleet {
			for _, n := range c.Nodes {
				m.MaxGPUsPerMember = max(m.MaxGPUsPerMember, n.GPUs)
			}
		}
	}
	type parsed struct {
		job    Job
		submit int64
		line   int
	}
	var jobs []parsed
	skipped := 0
	ids := map[string]int{}
	for _, rw := range rows {
		if !m.keep(rw) {
			skipped++
			continue
		}
		j, submit, err := m.job(rw)
		if errors.Is(err, errSkip) || (err != nil && m.SkipInvalid) {
			skipped++
			continue
		}
		if err != nil {
			return nil, 0, err
		}
		if n := ids[j.Gang.ID]; n > 0 {
			j.Gang.ID = fmt.Sprintf("%s-%d", j.Gang.ID, n)
		}
		ids[j.Gang.ID]++
		jobs = append(jobs, parsed{j, submit, rw.line})
	}
	if len(jobs) == 0 {
		return nil, skipped, fmt.Errorf("workload: no jobs (%d rows left out)", skipped)
	}
	sort.SliceStable(jobs, func(a, b int) bool { return jobs[a].submit < jobs[b].submit })
	first := jobs[0].submit
	out := make([]Job, len(jobs))
	for i, p := range jobs {
		p.job.Arrival = time.Duration(p.submit - first)
		p.job.Gang.Submitted = epoch.Add(p.job.Arrival)
		out[i] = p.job
	}
	return out, skipped, nil
}

// job turns one row into a job; submit is in nanoseconds since the epoch.
func (m *Mapping) job(rw row) (Job, int64, error) {
	c := m.Columns
	bad := func(col string, err error) (Job, int64, error) {
		return Job{}, 0, &rowError{line: rw.line, col: col, err: err}
	}
	submit, err := m.instant(rw.get(c.Submit))
	if err != nil {
		return bad(c.Submit, err)
	}
	var d time.Duration
	if c.Duration != "" {
		if d, err = m.duration(rw.get(c.Duration)); err != nil {
			return bad(c.Duration, err)
		}
	} else {
		s, err := m.instant(rw.get(c.Start))
		if err != nil {
			return bad(c.Start, err)
		}
		e, err := m.instant(rw.get(c.End))
		if err != nil {
			return bad(c.End, err)
		}
		d = time.Duration(e - s)
	}
	if d < 0 {
		return bad(c.Duration, fmt.Errorf("negative running time %v", d))
	}
	members, gpm, err := m.shape(rw)
	if err != nil {
		return Job{}, 0, err
	}
	id := rw.get(c.ID)
	if id == "" {
		id = "row-" + strconv.Itoa(rw.line)
	}
	queue := rw.get(c.Queue)
	if queue == "" {
		queue = rw.get(c.User)
	}
	if queue == "" {
		queue = m.DefaultQueue
	}
	if queue == "" {
		queue = "trace"
	}
	prio, class, err := m.priority(rw.get(c.Priority))
	if err != nil {
		return bad(c.Priority, err)
	}
	g := placement.Gang{ID: id, Queue: queue, Members: members, GPUsPerMember: gpm, Priority: prio,
		Preemptible: preemptibleByDefault(class, prio), GracePeriod: time.Duration(v1alpha1.DefaultGracePeriodSeconds) * time.Second,
		Policy: placement.BinPack}
	if p := m.product(rw.get(c.Product)); p != "" {
		g.Products = []string{p}
	}
	if c.Estimate != "" && rw.get(c.Estimate) != "" {
		if g.Estimate, err = m.duration(rw.get(c.Estimate)); err != nil {
			return bad(c.Estimate, err)
		}
	}
	return Job{Gang: g, Duration: d}, submit, nil
}

// shape is the gang's members and GPUs per member. A job of 0 GPUs is skipped.
func (m *Mapping) shape(rw row) (members, gpm int, err error) {
	c := m.Columns
	members = 0
	if c.Members != "" {
		s := rw.get(c.Members)
		if members, err = strconv.Atoi(s); err != nil || members < 0 {
			return 0, 0, &rowError{line: rw.line, col: c.Members, err: fmt.Errorf("want a whole number ≥ 0, got %q", s)}
		}
		if members == 0 {
			return 0, 0, errSkip
		}
	}
	if c.GPUsPerMember != "" {
		if gpm, err = m.gpus(rw.get(c.GPUsPerMember)); err != nil {
			return 0, 0, &rowError{line: rw.line, col: c.GPUsPerMember, err: err}
		}
		if gpm == 0 {
			return 0, 0, errSkip
		}
		return max(1, members), gpm, nil
	}
	total, err := m.gpus(rw.get(c.GPUs))
	if err != nil {
		return 0, 0, &rowError{line: rw.line, col: c.GPUs, err: err}
	}
	if total == 0 {
		return 0, 0, errSkip
	}
	if members == 0 {
		per := max(1, m.MaxGPUsPerMember)
		members = (total + per - 1) / per
	}
	// A total that does not divide evenly rounds each member up.
	return members, (total + members - 1) / members, nil
}

// priorityOf reads a Shoal priority class name or a number.
func priorityOf(s string) (int32, error) {
	if v, ok := v1alpha1.PriorityClass(strings.ToLower(s)).Value(); ok {
		return v, nil
	}
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil {
		return 0, fmt.Errorf("want a priority class (%v) or a number, got %q", v1alpha1.PriorityClasses(), s)
	}
	return int32(n), nil
}

func preemptibleByDefault(class string, prio int32) bool {
	if _, ok := v1alpha1.PriorityClass(class).Value(); ok {
		return v1alpha1.PriorityClass(class).PreemptibleByDefault()
	}
	p, _ := v1alpha1.PriorityProduction.Value()
	return prio < p
}
