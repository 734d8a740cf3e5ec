// SPDX-License-Identifier: Apache-2.0

package v1alpha1

import "slices"

// PriorityClass names a priority level of a Job. Higher values are scheduled
// first and may preempt lower, preemptible jobs.
type PriorityClass string

// The priority classes, highest first.
const (
	// PrioritySystemCritical (1000000) is for the fleet's own workloads
	// (monitoring, health probes); never preempted.
	PrioritySystemCritical PriorityClass = "system-critical"
	// PriorityProduction (100000) is for serving and other user-facing work;
	// not preemptible by default.
	PriorityProduction PriorityClass = "production"
	// PriorityTraining (10000) is for long training runs that checkpoint;
	// preemptible by default, with a grace period to checkpoint.
	PriorityTraining PriorityClass = "training"
	// PriorityBatch (1000) is the default: batch work such as evaluation
	// and data processing; preemptible.
	PriorityBatch PriorityClass = "batch"
	// PrioritySpot (500) is opportunistic work that uses idle GPUs and is
	// the first to be preempted.
	PrioritySpot PriorityClass = "spot"
	// PriorityDevelopment (100) is interactive development and experiments;
	// lowest, preemptible.
	PriorityDevelopment PriorityClass = "development"
)

// DefaultPriorityClass is the class of a Job that names none.
const DefaultPriorityClass = PriorityBatch

// priorityValues maps each class to its value.
var priorityValues = map[PriorityClass]int32{
	PrioritySystemCritical: 1000000,
	PriorityProduction:     100000,
	PriorityTraining:       10000,
	PriorityBatch:          1000,
	PrioritySpot:           500,
	PriorityDevelopment:    100,
}

// PriorityClasses lists the classes, highest first.
func PriorityClasses() []PriorityClass {
	out := make([]PriorityClass, 0, len(priorityValues))
	for c := range priorityValues {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b PriorityClass) int { return int(priorityValues[b] - priorityValues[a]) })
	return out
}

// Value returns the class's priority value and whether the class is known.
func (p PriorityClass) Value() (int32, bool) {
	v, ok := priorityValues[p]
	return v, ok
}

// PreemptibleByDefault reports whether jobs of the class are preemptible
// when their spec does not say: classes below production are.
func (p PriorityClass) PreemptibleByDefault() bool {
	v, ok := priorityValues[p]
	return ok && v < priorityValues[PriorityProduction]
}
