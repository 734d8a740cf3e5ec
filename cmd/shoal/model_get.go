// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

func newModelGetCommand(dial modelsDial) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "get MODEL@VERSION...",
		Short: "Show model versions by name",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			for _, name := range args {
				if err := checkModelVersionName(name); err != nil {
					return err
				}
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			var ms []*v1alpha1.ModelVersion
			for _, name := range args {
				obj, err := cl.Get(cmd.Context(), &shoalv1.GetModelVersionRequest{Name: name})
				if err != nil {
					return outCallError("get modelversion/"+name, err)
				}
				m, err := decodeModelVersion(obj)
				if err != nil {
					return err
				}
				ms = append(ms, m)
			}
			var v any = outList(ms)
			if len(ms) == 1 {
				v = ms[0]
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, v); ok {
				return err
			}
			return printModelTable(cmd.OutOrStdout(), ms, output == "wide", time.Now())
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func newModelListCommand(dial modelsDial) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:     "list [MODEL]",
		Aliases: []string{"ls"},
		Short:   "List model versions, all or one model's",
		Example: "  shoal model list\n  shoal model list llama -o wide",
		Args:    cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			model := ""
			if len(args) == 1 {
				model = args[0]
				if strings.Contains(model, "@") {
					return fmt.Errorf("list takes a model's name, not a version (%q): shoal model get %s", model, model)
				}
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			ms, err := listModelVersions(cmd, cl, model)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, outList(ms)); ok {
				return err
			}
			if len(ms) == 0 {
				what := "No model versions found"
				if model != "" {
					what = fmt.Sprintf("No versions of model %s found", model)
				}
				fmt.Fprintln(cmd.OutOrStdout(), what+": register one with `shoal model register`.")
				return nil
			}
			return printModelTable(cmd.OutOrStdout(), ms, output == "wide", time.Now())
		},
	}
	outFlag(cmd, &output)
	return cmd
}

// listModelVersions returns the versions of model (all when empty).
func listModelVersions(cmd *cobra.Command, cl shoalv1.ModelsClient, model string) ([]*v1alpha1.ModelVersion, error) {
	resp, err := cl.List(cmd.Context(), &shoalv1.ListModelVersionsRequest{Model: model})
	if err != nil {
		what := "list model versions"
		if model != "" {
			what += " of " + model
		}
		return nil, outCallError(what, err)
	}
	ms := make([]*v1alpha1.ModelVersion, 0, len(resp.Items))
	for _, o := range resp.Items {
		m, err := decodeModelVersion(o)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, nil
}

func newModelLineageCommand(dial modelsDial) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "lineage MODEL@VERSION",
		Short: "Show a version's lineage: its training job and checkpoint, then its parent's, and so on to the root",
		Long: "Shows the version, then the version it was derived from, and so on to the root; each with the " +
			"training job and checkpoint the hub recorded when it was registered (they outlive the job). " +
			"-o json|yaml prints the versions as a list, the one asked for first.",
		Example: "  shoal model lineage llama-chat@2.0\n  shoal model lineage llama-chat@2.0 -o yaml",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			if err := checkModelVersionName(args[0]); err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			resp, err := cl.Lineage(cmd.Context(), &shoalv1.GetModelVersionRequest{Name: args[0]})
			if err != nil {
				return outCallError("lineage of modelversion/"+args[0], err)
			}
			ms := make([]*v1alpha1.ModelVersion, 0, len(resp.Versions))
			for _, o := range resp.Versions {
				m, err := decodeModelVersion(o)
				if err != nil {
					return err
				}
				ms = append(ms, m)
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, outList(ms)); ok {
				return err
			}
			return printModelLineage(cmd.OutOrStdout(), ms)
		},
	}
	outFlag(cmd, &output)
	return cmd
}

// shortDigest shortens sha256:<64 hex> to sha256:<first 12 hex>.
func shortDigest(d string) string {
	const prefix = "sha256:"
	if strings.HasPrefix(d, prefix) && len(d) > len(prefix)+12 {
		return d[:len(prefix)+12]
	}
	return d
}

// modelJob is the name of m's source job: as recorded, or as asked for.
func modelJob(m *v1alpha1.ModelVersion) string {
	if j := m.Status.Job; j != nil && j.Name != "" {
		return j.Name
	}
	if s := m.Spec.Source; s != nil {
		return s.Job
	}
	return ""
}

// modelStep is the step of m's source checkpoint: as recorded, or as asked for.
func modelStep(m *v1alpha1.ModelVersion) string {
	if c := m.Status.Checkpoint; c != nil {
		return strconv.FormatInt(c.Step, 10)
	}
	if s := m.Spec.Source; s != nil && s.CheckpointStep != nil {
		return strconv.FormatInt(*s.CheckpointStep, 10)
	}
	return ""
}

// modelAge is the time since m was registered (its creation when the hub
// recorded no registration time).
func modelAge(m *v1alpha1.ModelVersion, now time.Time) string {
	if t := m.Status.RegisteredAt; t != nil && !t.IsZero() {
		return outAge(*t, now)
	}
	return outAge(m.CreationTimestamp, now)
}

// printModelTable writes versions as a table; wide adds who registered
// each and its checkpoint's URI.
func printModelTable(w io.Writer, ms []*v1alpha1.ModelVersion, wide bool, now time.Time) error {
	tw := outTable(w)
	hdr := "NAME\tARTIFACT\tDIGEST\tFRAMEWORK\tJOB\tSTEP\tPARENT\tAGE"
	if wide {
		hdr += "\tREGISTERED-BY\tCHECKPOINT"
	}
	fmt.Fprintln(tw, hdr)
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s", modelName(m), outDash(m.Spec.ArtifactURI),
			outDash(shortDigest(m.Spec.Digest)), outDash(m.Spec.Framework), outDash(modelJob(m)), outDash(modelStep(m)),
			outDash(m.Spec.Parent), modelAge(m, now))
		if wide {
			uri := ""
			if c := m.Status.Checkpoint; c != nil {
				uri = c.URI
			}
			fmt.Fprintf(tw, "\t%s\t%s", outDash(m.Status.RegisteredBy), outDash(uri))
		}
		fmt.Fprintln(tw)
	}
	return tw.Flush()
}

// printModelLineage writes a lineage as a readable chain: each version's
// artefact, then where it came from, then the version it was derived from.
func printModelLineage(w io.Writer, ms []*v1alpha1.ModelVersion) error {
	var b strings.Builder
	for _, m := range ms {
		head := []string{modelName(m), m.Spec.ArtifactURI, shortDigest(m.Spec.Digest)}
		if m.Spec.Framework != "" {
			head = append(head, m.Spec.Framework)
		}
		b.WriteString(strings.Join(head, "  ") + "\n")
		b.WriteString("  " + modelSourceLine(m) + "\n")
		if m.Spec.Parent != "" {
			b.WriteString("  derived from " + m.Spec.Parent + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// modelSourceLine says which job and checkpoint m was trained by.
func modelSourceLine(m *v1alpha1.ModelVersion) string {
	job := modelJob(m)
	if job == "" {
		return "no source job recorded"
	}
	s := "trained by job " + job
	if j := m.Status.Job; j != nil {
		var about []string
		if j.Queue != "" {
			about = append(about, "queue "+j.Queue)
		}
		if j.Owner != "" {
			about = append(about, "owner "+j.Owner)
		}
		if len(about) > 0 {
			s += " (" + strings.Join(about, ", ") + ")"
		}
	}
	c := m.Status.Checkpoint
	if c == nil {
		return s + ", no checkpoint recorded"
	}
	s += fmt.Sprintf(" from checkpoint step %d %s", c.Step, c.URI)
	if !c.Time.IsZero() {
		s += " (taken " + c.Time.UTC().Format(time.RFC3339) + ")"
	}
	return s
}

// completeModelVersionNames completes MODEL@VERSION names with the given
// prefix (any number of arguments): the versions of the model the prefix
// names once it has an "@", all versions before.
func completeModelVersionNames(dial modelsDial) cobra.CompletionFunc {
	return func(cmd *cobra.Command, _ []string, prefix string) ([]string, cobra.ShellCompDirective) {
		cl, done, err := dial(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		model, _, _ := strings.Cut(prefix, "@")
		if !strings.Contains(prefix, "@") {
			model = ""
		}
		resp, err := cl.List(cmd.Context(), &shoalv1.ListModelVersionsRequest{Model: model})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, o := range resp.Items {
			if m, err := decodeModelVersion(o); err == nil && strings.HasPrefix(modelName(m), prefix) {
				names = append(names, modelName(m))
				if len(names) == completionLimit {
					break
				}
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// completeModelNames completes the names of registered models (the MODEL
// of `shoal model list`).
func completeModelNames(dial modelsDial) cobra.CompletionFunc {
	return func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		cl, done, err := dial(cmd)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		defer done()
		resp, err := cl.List(cmd.Context(), &shoalv1.ListModelVersionsRequest{})
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		seen := map[string]bool{}
		for _, o := range resp.Items {
			m, err := decodeModelVersion(o)
			if err != nil || seen[m.Spec.Model] || !strings.HasPrefix(m.Spec.Model, prefix) {
				continue
			}
			seen[m.Spec.Model] = true
			names = append(names, m.Spec.Model)
		}
		sortStrings(names)
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
