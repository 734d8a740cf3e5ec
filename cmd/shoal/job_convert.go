// SPDX-License-Identifier: Apache-2.0

package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/internal/convert"
)

func newJobConvertCommand() *cobra.Command {
	var file, queue string
	cmd := &cobra.Command{
		Use:   "convert -f FILE|-",
		Short: "Turn a Kubeflow PyTorchJob or a JobSet manifest into a Shoal Job with roles",
		Long: "Reads one " + convert.PyTorchJobKind + " (" + convert.PyTorchJobAPIVersion + ") or " + convert.JobSetKind +
			" (" + convert.JobSetAPIVersion + ") manifest, prints the Shoal Job on stdout and names on stderr every " +
			"field of the source the job does not carry, and every choice the source did not make. " +
			"It exits non-zero only when the input cannot be read.",
		Example: "  shoal job convert -f pytorchjob.yaml > job.yaml\n" +
			"  shoal job convert -f jobset.yaml --queue research/nlp | shoal job submit -f -",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			r, closeFn, err := readInput(cmd, file)
			if err != nil {
				return err
			}
			defer closeFn()
			data, err := io.ReadAll(r)
			if err != nil {
				return fmt.Errorf("read %s: %w", file, err)
			}
			return convertJob(cmd.OutOrStdout(), cmd.ErrOrStderr(), data, convert.Options{Queue: queue})
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "the PyTorchJob or JobSet manifest, - for stdin")
	_ = cmd.MarkFlagRequired("filename")
	cmd.Flags().StringVar(&queue, "queue", "", "the Shoal queue of the job (default: the source's, else \""+convert.DefaultQueue+"\")")
	return cmd
}

// convertJob writes the converted job to out and the fields it dropped,
// the choices it made and the problems shoal job submit would report to
// errOut.
func convertJob(out, errOut io.Writer, data []byte, opts convert.Options) error {
	res, err := convert.Convert(data, opts)
	if err != nil {
		return err
	}
	y, err := convert.YAML(res.Job)
	if err != nil {
		return err
	}
	if _, err := out.Write(y); err != nil {
		return err
	}
	for _, d := range res.Dropped {
		fmt.Fprintln(errOut, "not carried: "+d)
	}
	for _, n := range res.Notes {
		fmt.Fprintln(errOut, "note: "+n)
	}
	j := res.Job.DeepCopy()
	v1alpha1.SetJobDefaults(j)
	for _, fe := range v1alpha1.ValidateJob(j) {
		fmt.Fprintln(errOut, "invalid as a Shoal job (fix before submitting): "+fe.Error())
	}
	return nil
}
