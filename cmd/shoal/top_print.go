// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// printTop writes one screen of `shoal top`: the fleet in two lines, then
// a row per cluster and per queue. A cluster's use is its GPUs in use
// (neither free nor unhealthy: allocated, reserved or cordoned) of its
// healthy GPUs; a queue has a row per GPU class, its use the class's GPUs
// in use of its nominal quota.
func printTop(w io.Writer, s *topSnapshot, hub string, now time.Time) error {
	var gpus, free, unhealthy int32
	states := map[v1alpha1.ClusterState]int{}
	for _, c := range s.clusters {
		states[c.Status.State]++
		if inv := c.Status.Inventory; inv != nil {
			gpus, free, unhealthy = gpus+inv.GPUs, free+inv.FreeGPUs, unhealthy+inv.UnhealthyGPUs
		}
	}
	phases := map[v1alpha1.JobPhase]int{}
	onCluster := map[string]int{}
	for _, j := range s.jobs {
		phases[j.Status.Phase]++
		if !j.Status.Phase.Terminal() {
			for _, c := range j.Status.Clusters() {
				onCluster[c]++
			}
		}
	}
	fmt.Fprintf(w, "shoal top - %s - %s\n", hub, now.Format("15:04:05"))
	fmt.Fprintf(w, "Fleet: %d clusters (%s)   GPUs: %d total, %d free, %d in use, %d unhealthy   %s\n",
		len(s.clusters), countsLine(states, clusterStateOrder), gpus, free, gpus-free-unhealthy, unhealthy, useBar(gpus-free-unhealthy, gpus-unhealthy))
	fmt.Fprintf(w, "Jobs: %s\n\n", countsLine(phases, v1alpha1.JobPhases))

	tw := outTable(w)
	fmt.Fprintln(tw, "CLUSTER\tSTATE\tGPUS\tFREE\tIN USE\tUNHEALTHY\tUSE\tJOBS\tHEARTBEAT")
	for _, c := range s.clusters {
		inv := c.Status.Inventory
		if inv == nil {
			inv = &v1alpha1.InventorySummary{}
		}
		beat := "-"
		if c.Status.LastHeartbeat != nil {
			beat = outAge(*c.Status.LastHeartbeat, now)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%s\t%d\t%s\n", c.Name, outDash(string(c.Status.State)), inv.GPUs, inv.FreeGPUs,
			inv.GPUs-inv.FreeGPUs-inv.UnhealthyGPUs, inv.UnhealthyGPUs, useBar(inv.GPUs-inv.FreeGPUs-inv.UnhealthyGPUs, inv.GPUs-inv.UnhealthyGPUs), onCluster[c.Name], beat)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = outTable(w)
	fmt.Fprintln(tw, "QUEUE\tCLASS\tNOMINAL\tUSED\tBORROWED\tUSE OF NOMINAL\tPENDING\tACTIVE")
	qs := append([]*v1alpha1.Queue(nil), s.queues...)
	sort.Slice(qs, func(i, j int) bool { return qs[i].Name < qs[j].Name })
	for _, q := range qs {
		for i, class := range queueClasses(q) {
			name, pending, active := q.Name, fmt.Sprint(q.Status.PendingJobs), fmt.Sprint(q.Status.ActiveJobs)
			if i > 0 {
				name, pending, active = "", "", ""
			}
			nominal, use := "-", "-"
			if quota, ok := q.Spec.Quotas[class]; ok {
				nominal, use = fmt.Sprint(quota.Nominal), useBar(q.Status.UsedGPUs[class], quota.Nominal)
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", name, outDash(class), nominal, q.Status.UsedGPUs[class],
				q.Status.BorrowedGPUs[class], use, pending, active)
		}
	}
	return tw.Flush()
}

var clusterStateOrder = []v1alpha1.ClusterState{v1alpha1.ClusterReady, v1alpha1.ClusterPending, v1alpha1.ClusterNotReady,
	v1alpha1.ClusterCordoned, v1alpha1.ClusterDraining, v1alpha1.ClusterLost}

// countsLine renders the non-zero counts in order: "3 Ready, 1 Lost"
// ("none" when all are zero).
func countsLine[K ~string](m map[K]int, order []K) string {
	var parts []string
	for _, k := range order {
		if m[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", m[k], k))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// queueClasses are the GPU classes of a queue's rows: those it has a quota
// for and those it uses, sorted; one empty class for a queue with neither.
// A GPU can be in several classes (a100 and a100-80gb), so classes are
// never added up.
func queueClasses(q *v1alpha1.Queue) []string {
	seen := map[string]bool{}
	for c := range q.Spec.Quotas {
		seen[c] = true
	}
	for c := range q.Status.UsedGPUs {
		seen[c] = true
	}
	if len(seen) == 0 {
		return []string{""}
	}
	out := make([]string, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	sort.Strings(out)
	return out
}

// useBar renders used of total as a ten-cell bar and a percentage, the
// bar full (and the percentage over 100) when used exceeds total.
func useBar(used, total int32) string {
	if total <= 0 {
		return "[          ]   -"
	}
	pct := int(used) * 100 / int(total)
	fill := min(10, max(0, pct/10))
	return fmt.Sprintf("[%s%s] %3d%%", strings.Repeat("#", fill), strings.Repeat(" ", 10-fill), pct)
}
