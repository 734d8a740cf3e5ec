// SPDX-License-Identifier: Apache-2.0

package sim

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"
)

// Mapping says how a workload file's columns become jobs, so that public
// GPU-cluster traces (Helios, Alibaba PAI, Philly converted to CSV) replay
// as they are published. Only ID, Submit and either Duration or Start and
// End, and one of GPUs or GPUsPerMember, are needed; every other column is
// optional. It is read from YAML or JSON (docs/simulator.md).
type Mapping struct {
	// Format is csv (default, header row first) or jsonl.
	Format Format `json:"format,omitempty"`
	// Delimiter is the CSV field separator (default ",").
	Delimiter string `json:"delimiter,omitempty"`
	// Header names the columns of a CSV file that has no header row (the
	// Alibaba PAI tables ship their headers in separate .header files).
	Header []string `json:"header,omitempty"`
	// Columns names the file's column for each job field.
	Columns Columns `json:"columns"`
	// TimeUnit is the unit of numeric submit, start and end times: s
	// (default), ms, us, ns, min or h. Arrivals count from the earliest submit.
	TimeUnit string `json:"timeUnit,omitempty"`
	// TimeLayout, when set, parses the times as text with this Go layout
	// (e.g. "2006-01-02 15:04:05"), in UTC unless the layout has a zone.
	TimeLayout string `json:"timeLayout,omitempty"`
	// DurationUnit is the unit of the duration and estimate columns when
	// they are plain numbers (default s); "1h30m" style values also parse.
	DurationUnit string `json:"durationUnit,omitempty"`
	// GPUScale multiplies the GPU columns (Alibaba PAI's plan_gpu is in
	// percent of a GPU: 0.01); fractions round up to whole GPUs. Default 1.
	GPUScale float64 `json:"gpuScale,omitempty"`
	// MaxGPUsPerMember splits a job given only as total GPUs into members of
	// at most this many GPUs (default: the most GPUs of any fleet node).
	MaxGPUsPerMember int `json:"maxGPUsPerMember,omitempty"`
	// Products maps the trace's GPU type values to the fleet's product
	// names; a value not listed is taken as it is, an empty one means any
	// product. Map a value to "" to drop the restriction.
	Products map[string]string `json:"products,omitempty"`
	// Priorities maps the trace's priority values to Shoal priority classes
	// (production, training, batch, spot, development, system-critical); a
	// value not listed must be a class name or a number. Empty: batch.
	Priorities map[string]string `json:"priorities,omitempty"`
	// Keep, when set, keeps only rows whose column (key) has one of the
	// listed values, e.g. {state: [COMPLETED, FAILED]}.
	Keep map[string][]string `json:"keep,omitempty"`
	// DefaultQueue is the queue of jobs with no queue or user column (default "trace").
	DefaultQueue string `json:"defaultQueue,omitempty"`
	// SkipInvalid drops rows with a missing or unparsable value instead of
	// failing, and counts them (public traces have blanks).
	SkipInvalid bool `json:"skipInvalid,omitempty"`
}

// Columns names the file's column for each job field ("" for none).
type Columns struct {
	// ID is the job's name (default: row-<line>).
	ID string `json:"id,omitempty"`
	// Submit is when the job was submitted (required).
	Submit string `json:"submit"`
	// Duration is the running time; without it the running time is End - Start.
	Duration string `json:"duration,omitempty"`
	// Start and End are when the job ran in the trace.
	Start string `json:"start,omitempty"`
	End   string `json:"end,omitempty"`
	// Members is the gang size (default: from GPUs and MaxGPUsPerMember, or 1).
	Members string `json:"members,omitempty"`
	// GPUs is the job's total GPUs; GPUsPerMember the GPUs of one member.
	GPUs          string `json:"gpus,omitempty"`
	GPUsPerMember string `json:"gpusPerMember,omitempty"`
	// Product is the GPU type (mapped by Mapping.Products).
	Product string `json:"product,omitempty"`
	// Queue is the queue (virtual cluster); User is used when Queue is not.
	Queue string `json:"queue,omitempty"`
	User  string `json:"user,omitempty"`
	// Priority is the priority class or value (mapped by Mapping.Priorities).
	Priority string `json:"priority,omitempty"`
	// Estimate is the user's time limit, which backfill uses (default none).
	Estimate string `json:"estimate,omitempty"`
}

func (c Columns) byField() map[string]string {
	return map[string]string{"id": c.ID, "submit": c.Submit, "duration": c.Duration, "start": c.Start, "end": c.End,
		"members": c.Members, "gpus": c.GPUs, "gpusPerMember": c.GPUsPerMember, "product": c.Product,
		"queue": c.Queue, "user": c.User, "priority": c.Priority, "estimate": c.Estimate}
}

// check validates the mapping before any row is read.
func (m *Mapping) check() error {
	c := m.Columns
	if len(m.Header) > 0 && m.Format == FormatJSONL {
		return fmt.Errorf("header: only for csv files")
	}
	if c.Submit == "" {
		return fmt.Errorf("columns.submit: required")
	}
	if c.Duration == "" && (c.Start == "" || c.End == "") {
		return fmt.Errorf("columns.duration: required unless columns.start and columns.end are both set")
	}
	if c.GPUs == "" && c.GPUsPerMember == "" {
		return fmt.Errorf("columns.gpus: one of columns.gpus and columns.gpusPerMember is required")
	}
	if _, err := unitOf(m.TimeUnit); err != nil {
		return fmt.Errorf("timeUnit: %w", err)
	}
	if _, err := unitOf(m.DurationUnit); err != nil {
		return fmt.Errorf("durationUnit: %w", err)
	}
	if m.GPUScale < 0 {
		return fmt.Errorf("gpuScale: %v is negative", m.GPUScale)
	}
	if m.MaxGPUsPerMember < 0 {
		return fmt.Errorf("maxGPUsPerMember: %d is negative", m.MaxGPUsPerMember)
	}
	for v, class := range m.Priorities {
		if _, err := priorityOf(class); err != nil {
			return fmt.Errorf("priorities[%q]: %w", v, err)
		}
	}
	return nil
}

func unitOf(s string) (time.Duration, error) {
	switch s {
	case "", "s":
		return time.Second, nil
	case "ms":
		return time.Millisecond, nil
	case "us":
		return time.Microsecond, nil
	case "ns":
		return time.Nanosecond, nil
	case "min":
		return time.Minute, nil
	case "h":
		return time.Hour, nil
	}
	return 0, fmt.Errorf("unknown unit %q (want s, ms, us, ns, min or h)", s)
}

// instant parses a submit, start or end time into nanoseconds since the epoch.
func (m *Mapping) instant(s string) (int64, error) {
	if m.TimeLayout != "" {
		t, err := time.Parse(m.TimeLayout, s)
		if err != nil {
			return 0, err
		}
		return t.UnixNano(), nil
	}
	u, _ := unitOf(m.TimeUnit)
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("want a number of %s, got %q", u, s)
	}
	return int64(f * float64(u)), nil
}

// duration parses a duration or estimate: a number in DurationUnit or a Go duration.
func (m *Mapping) duration(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil {
		u, _ := unitOf(m.DurationUnit)
		return time.Duration(f * float64(u)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("want a number or a duration like 1h30m, got %q", s)
	}
	return d, nil
}

// gpus parses a GPU count, scaled and rounded up to whole GPUs.
func (m *Mapping) gpus(s string) (int, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || f < 0 {
		return 0, fmt.Errorf("want a number ≥ 0, got %q", s)
	}
	if m.GPUScale > 0 {
		f *= m.GPUScale
	}
	n := int(f)
	if float64(n) < f {
		n++
	}
	return n, nil
}

func (m *Mapping) keep(r row) bool {
	for col, vals := range m.Keep {
		if !contains(vals, r.get(col)) {
			return false
		}
	}
	return true
}

func (m *Mapping) product(v string) string {
	if p, ok := m.Products[v]; ok {
		return p
	}
	return v
}

func (m *Mapping) priority(v string) (int32, string, error) {
	if c, ok := m.Priorities[v]; ok {
		v = c
	}
	if v == "" {
		v = "batch"
	}
	p, err := priorityOf(v)
	return p, strings.ToLower(v), err
}

// ReadMapping reads a mapping from YAML or JSON; unknown keys are errors,
// so that a misspelt column is not silently ignored.
func ReadMapping(r io.Reader) (Mapping, error) {
	b, err := io.ReadAll(r)
	if err != nil {
		return Mapping{}, err
	}
	var m Mapping
	if err := yaml.UnmarshalStrict(b, &m); err != nil {
		return Mapping{}, fmt.Errorf("mapping: %w", err)
	}
	return m, m.check()
}
