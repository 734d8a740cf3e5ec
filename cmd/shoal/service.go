// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"

	"github.com/spf13/cobra"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// servicesDial returns the hub's Inference client and the connection's
// closer (servicesClient; a fake in tests).
type servicesDial func(*cobra.Command) (shoalv1.InferenceClient, func(), error)

// addServiceCommands adds `shoal service` to root.
func addServiceCommands(root *cobra.Command) {
	root.AddCommand(newServiceCommand(servicesClient, modelsClient))
}

// newServiceCommand is `shoal service` with its subcommands, talking to the
// hub through dial (models completes the MODEL@VERSION of set-model).
func newServiceCommand(dial servicesDial, models modelsDial) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "service",
		Aliases: []string{"svc"},
		Short:   "Serve model versions from replicas over the fleet: create, scale, roll out, inspect and delete inference services",
		Long: "An inference service (apiVersion " + v1alpha1.APIVersion + ", kind " + v1alpha1.KindInferenceService + ") " +
			"serves one registered model version (MODEL@VERSION) from replicas spread over the fleet's clusters. " +
			"Each replica is a job of the service's queue named <service>-<5 characters> and labelled " +
			v1alpha1.LabelInferenceService + "=<service>, so replicas are placed under the queue's quota, priority " +
			"and preemption like any job. The hub keeps spec.replicas.min replicas, scales up to max on the load " +
			"reported for the service (spec.autoscaling), rolls a new spec.model out replica by replica and rolls " +
			"back when the new replicas do not become ready. `shoal service endpoints` lists the replicas' " +
			"addresses for a router.",
	}
	names := completeServiceNames(dial, true)
	first := completeServiceNames(dial, false)
	get, describe, del := newServiceGetCommand(dial), newServiceDescribeCommand(dial), newServiceDeleteCommand(dial)
	get.ValidArgsFunction, describe.ValidArgsFunction, del.ValidArgsFunction = names, first, names
	setModel, scale := newServiceSetModelCommand(dial), newServiceScaleCommand(dial)
	endpoints, load := newServiceEndpointsCommand(dial), newServiceLoadCommand(dial)
	scale.ValidArgsFunction, endpoints.ValidArgsFunction, load.ValidArgsFunction = first, first, first
	setModel.ValidArgsFunction = func(cmd *cobra.Command, args []string, prefix string) ([]string, cobra.ShellCompDirective) {
		if len(args) == 1 && models != nil {
			return completeModelVersionNames(models)(cmd, nil, prefix)
		}
		return first(cmd, args, prefix)
	}
	cmd.AddCommand(newServiceCreateCommand(dial), newServiceUpdateCommand(dial), setModel, scale, get,
		newServiceListCommand(dial), describe, endpoints, load, del)
	return cmd
}

// servicesClient dials the hub and returns an Inference client and the connection's closer.
func servicesClient(cmd *cobra.Command) (shoalv1.InferenceClient, func(), error) {
	conn, err := dialHub(cmd)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewInferenceClient(conn), func() { _ = conn.Close() }, nil
}

// decodeService reads an InferenceService from an API object.
func decodeService(o *shoalv1.Object) (*v1alpha1.InferenceService, error) {
	var s v1alpha1.InferenceService
	if err := json.Unmarshal(o.GetJson(), &s); err != nil {
		return nil, fmt.Errorf("the hub sent an inference service this CLI cannot read (version skew?): %w", err)
	}
	return &s, nil
}

// readService decodes the InferenceService of file strictly.
func readService(cmd *cobra.Command, file string) (*v1alpha1.InferenceService, error) {
	if file == "" {
		return nil, fmt.Errorf("-f needs a file, or - for stdin")
	}
	r, closeFn, err := readInput(cmd, file)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	s, err := v1alpha1.DecodeInferenceService(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	if s.Name == "" {
		return nil, fmt.Errorf("%s: the service has no metadata.name", file)
	}
	return s, nil
}

// updateService sends s as the service's new spec, guarded by rev when it
// is not 0, and returns the stored service.
func updateService(cmd *cobra.Command, cl shoalv1.InferenceClient, s *v1alpha1.InferenceService, rev int64) (*v1alpha1.InferenceService, error) {
	obj, err := sendService(cmd, cl, s, rev)
	if err != nil {
		return nil, outCallError("update inferenceservice/"+s.Name, err)
	}
	return decodeService(obj)
}

// sendService calls Update with s and rev.
func sendService(cmd *cobra.Command, cl shoalv1.InferenceClient, s *v1alpha1.InferenceService, rev int64) (*shoalv1.Object, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return nil, err
	}
	return cl.Update(cmd.Context(), &shoalv1.InferenceServiceRequest{Name: s.Name, Service: &shoalv1.Object{Json: b, Revision: rev}})
}

// getService reads the named service and its revision.
func getService(cmd *cobra.Command, cl shoalv1.InferenceClient, name string) (*v1alpha1.InferenceService, int64, error) {
	obj, err := cl.Get(cmd.Context(), &shoalv1.GetInferenceServiceRequest{Name: name})
	if err != nil {
		return nil, 0, outCallError("get inferenceservice/"+name, err)
	}
	s, err := decodeService(obj)
	return s, obj.GetRevision(), err
}

// changeAttempts bounds how often changeService reads a service again
// after it changed between the read and the update (load reports and the
// controller's status writes change it every few seconds).
const changeAttempts = 5

// changeService reads the named service, applies change to it and
// updates it guarded by the revision read, reading it again when it
// changed meanwhile; when change reports nothing to change, it returns the
// service as read and false.
func changeService(cmd *cobra.Command, dial servicesDial, name string, change func(*v1alpha1.InferenceService) bool) (*v1alpha1.InferenceService, bool, error) {
	cl, done, err := dial(cmd)
	if err != nil {
		return nil, false, err
	}
	defer done()
	for attempt := 1; ; attempt++ {
		s, rev, err := getService(cmd, cl, name)
		if err != nil {
			return nil, false, err
		}
		read := s.DeepCopy()
		if !change(s) {
			return read, false, nil
		}
		obj, err := sendService(cmd, cl, s, rev)
		if status.Code(err) == codes.Aborted && attempt < changeAttempts {
			continue
		}
		if err != nil {
			return nil, false, outCallError("update inferenceservice/"+name, err)
		}
		stored, err := decodeService(obj)
		return stored, true, err
	}
}

func newServiceCreateCommand(dial servicesDial) *cobra.Command {
	var file, output string
	cmd := &cobra.Command{
		Use:   "create -f FILE|-",
		Short: "Create an inference service from a YAML or JSON file; its model version must be registered",
		Long: "Creates the " + v1alpha1.KindInferenceService + " of FILE (YAML or JSON, - for stdin). The hub refuses " +
			"a model version that is not registered (`shoal model register`) and a service whose replica job it " +
			"would refuse; you own the service and its replicas.",
		Example: "  shoal service create -f examples/inference-service.yaml\n" +
			"  shoal service create -f svc.json -o yaml",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			s, err := readService(cmd, file)
			if err != nil {
				return err
			}
			b, err := json.Marshal(s)
			if err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			obj, err := cl.Create(cmd.Context(), &shoalv1.InferenceServiceRequest{Service: &shoalv1.Object{Json: b}})
			if err != nil {
				return outCallError("create inferenceservice/"+s.Name, err)
			}
			stored, err := decodeService(obj)
			if err != nil {
				return err
			}
			return printServiceChange(cmd.OutOrStdout(), output, stored, "created")
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file with the "+v1alpha1.KindInferenceService+", - for stdin")
	_ = cmd.MarkFlagRequired("filename")
	outFlag(cmd, &output)
	return cmd
}

func newServiceUpdateCommand(dial servicesDial) *cobra.Command {
	var file, output string
	var revision int64
	cmd := &cobra.Command{
		Use:   "update -f FILE|- [--revision N]",
		Short: "Replace an inference service's spec from a file (a new model rolls out, new replica bounds rescale)",
		Long: "Replaces the spec of the service FILE names (its queue cannot change). A new spec.model starts a " +
			"rollout; new spec.replicas bounds rescale. With --revision N (the revision `shoal service get -o yaml` " +
			"shows as metadata.resourceVersion, or a previous update's) the update is refused when the service " +
			"changed since; without it the spec replaces whatever is stored.",
		Example: "  shoal service update -f examples/inference-service.yaml\n" +
			"  shoal service update -f svc.yaml --revision 1234",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			if revision < 0 {
				return fmt.Errorf("--revision %d: must be a store revision (more than 0), or 0 for none", revision)
			}
			s, err := readService(cmd, file)
			if err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			stored, err := updateService(cmd, cl, s, revision)
			if err != nil {
				return err
			}
			return printServiceChange(cmd.OutOrStdout(), output, stored, "updated")
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file with the "+v1alpha1.KindInferenceService+", - for stdin")
	_ = cmd.MarkFlagRequired("filename")
	cmd.Flags().Int64Var(&revision, "revision", 0, "refuse the update when the service changed since this store revision (0: no check)")
	outFlag(cmd, &output)
	return cmd
}

func newServiceSetModelCommand(dial servicesDial) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "set-model NAME MODEL@VERSION",
		Short: "Roll an inference service out to another model version (rolled back if the new replicas do not become ready)",
		Long: "Sets the service's spec.model, guarded by the revision read (read again when the service changed " +
			"meanwhile, as load reports change it): the hub then adds replicas of the new " +
			"version (spec.rollout.maxSurge at a time) and removes old ones as new ones become ready, and rolls " +
			"back when a new replica fails or none becomes ready within spec.rollout.progressDeadlineSeconds. " +
			"`shoal service get` shows the rollout in MODEL (old → new); `shoal service describe` shows its phase.",
		Example: "  shoal service set-model chat demo-llm@1.1",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			name, model := args[0], args[1]
			if err := checkModelVersionName(model); err != nil {
				return err
			}
			var from string
			stored, changed, err := changeService(cmd, dial, name, func(s *v1alpha1.InferenceService) bool {
				from = s.Spec.Model
				s.Spec.Model = model
				return from != model
			})
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, stored); ok {
				return err
			}
			if !changed {
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "inferenceservice/%s unchanged (spec.model is already %s)\n", name, model)
				return err
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "inferenceservice/%s model set: %s → %s (rolling out; `shoal service describe %s` follows it)\n",
				name, from, model, name)
			return err
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func newServiceScaleCommand(dial servicesDial) *cobra.Command {
	var output string
	var minR, maxR int32
	cmd := &cobra.Command{
		Use:   "scale NAME [--min N] [--max M]",
		Short: "Change an inference service's replica bounds (spec.replicas.min and max)",
		Long: "Sets spec.replicas, guarded by the revision read (read again when the service changed meanwhile). --min alone keeps max when it is still at least " +
			"min and the service autoscales; otherwise max becomes min (without spec.autoscaling a service runs " +
			"exactly min replicas). --max alone keeps min. min 0 (scale to zero) and max above min need " +
			"spec.autoscaling.",
		Example: "  shoal service scale chat --min 2\n  shoal service scale chat --min 1 --max 8",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			fl := cmd.Flags()
			setMin, setMax := fl.Changed("min"), fl.Changed("max")
			switch {
			case !setMin && !setMax:
				return fmt.Errorf("nothing to change: give --min, --max or both")
			case setMin && minR < 0:
				return fmt.Errorf("--min %d: must be 0 or more", minR)
			case setMax && maxR < 1:
				return fmt.Errorf("--max %d: must be at least 1", maxR)
			case setMin && setMax && maxR < minR:
				return fmt.Errorf("--max %d is below --min %d", maxR, minR)
			}
			stored, _, err := changeService(cmd, dial, args[0], func(s *v1alpha1.InferenceService) bool {
				s.Spec.Replicas = scaledReplicas(s.Spec, setMin, minR, setMax, maxR)
				return true
			})
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, stored); ok {
				return err
			}
			r := stored.Spec.Replicas
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "inferenceservice/%s scaled (replicas min %d, max %d)\n", args[0], r.Min, r.Max)
			return err
		},
	}
	cmd.Flags().Int32Var(&minR, "min", 0, "the replicas kept (0: scale to zero, with spec.autoscaling)")
	cmd.Flags().Int32Var(&maxR, "max", 0, "the most replicas the autoscaler may run")
	outFlag(cmd, &output)
	return cmd
}

// scaledReplicas is sp's replica bounds with the flags given applied: a
// min alone keeps max when the service autoscales and max is still at
// least min, and is also the max otherwise.
func scaledReplicas(sp v1alpha1.InferenceServiceSpec, setMin bool, minR int32, setMax bool, maxR int32) v1alpha1.ServiceReplicas {
	r := sp.Replicas
	if setMin {
		r.Min = minR
		if !setMax && (sp.Autoscaling == nil || r.Max < minR) {
			r.Max = max(minR, 1)
		}
	}
	if setMax {
		r.Max = maxR
	}
	return r
}

func newServiceLoadCommand(dial servicesDial) *cobra.Command {
	var output string
	cmd := &cobra.Command{
		Use:   "load NAME VALUE",
		Short: "Report the load a gateway sees for an inference service (requests queued or in flight): the autoscaler's signal",
		Long: "Records VALUE as your load report for the service (source user:<you>): the autoscaler aims at " +
			"ceil(load / spec.autoscaling.targetPerReplica) replicas, the load being the sum of every source's " +
			"latest report (gateways', and the agents' when spec.autoscaling.metric is set). A report counts until " +
			"your next one replaces it, or for 60 s.",
		Example: "  shoal service load chat 42",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			name := args[0]
			value, err := strconv.ParseInt(args[1], 10, 64)
			if err != nil || value < 0 {
				return fmt.Errorf("load %q: must be a whole number, 0 or more", args[1])
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			obj, err := cl.ReportLoad(cmd.Context(), &shoalv1.ReportServiceLoadRequest{Name: name, Value: value})
			if err != nil {
				return outCallError("report load of inferenceservice/"+name, err)
			}
			s, err := decodeService(obj)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, s); ok {
				return err
			}
			total := "-"
			if l := s.Status.Load; l != nil {
				total = fmt.Sprintf("%d from %d source(s)", l.Value, len(l.Sources))
			}
			_, err = fmt.Fprintf(cmd.OutOrStdout(), "inferenceservice/%s load %d reported (load now %s)\n", name, value, total)
			return err
		},
	}
	outFlag(cmd, &output)
	return cmd
}

func newServiceDeleteCommand(dial servicesDial) *cobra.Command {
	return &cobra.Command{
		Use:     "delete NAME...",
		Short:   "Delete inference services; their replicas are cancelled",
		Example: "  shoal service delete chat",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			for _, name := range args {
				if _, err := cl.Delete(cmd.Context(), &shoalv1.GetInferenceServiceRequest{Name: name}); err != nil {
					return outCallError("delete inferenceservice/"+name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "inferenceservice/%s deleted (its replicas are cancelled)\n", name)
			}
			return nil
		},
	}
}

// printServiceChange writes the stored service (-o yaml|json) or the line
// "inferenceservice/NAME <verb>".
func printServiceChange(w io.Writer, output string, s *v1alpha1.InferenceService, verb string) error {
	if ok, err := outStructured(w, output, s); ok {
		return err
	}
	_, err := fmt.Fprintf(w, "inferenceservice/%s %s\n", s.Name, verb)
	return err
}
