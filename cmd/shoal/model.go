// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// modelsDial returns the hub's Models client and the connection's closer
// (modelsClient; a fake in tests).
type modelsDial func(*cobra.Command) (shoalv1.ModelsClient, func(), error)

// addModelCommands adds `shoal model` to root.
func addModelCommands(root *cobra.Command) {
	root.AddCommand(newModelCommand(modelsClient))
}

// newModelCommand is `shoal model` with its subcommands, talking to the hub
// through dial.
func newModelCommand(dial modelsDial) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "model",
		Short: "Register immutable model versions and show their lineage (training job, checkpoint, parent)",
		Long: "A model version (apiVersion " + v1alpha1.APIVersion + ", kind " + v1alpha1.KindModelVersion + ") is " +
			"an artefact a training job produced, named MODEL@VERSION: where it is, its digest, the job and " +
			"checkpoint it came from and the version it was derived from. Versions never change; " +
			"`shoal model lineage` follows one back to its root (docs/models.md).",
	}
	completion := completeModelVersionNames(dial)
	get, lineage := newModelGetCommand(dial), newModelLineageCommand(dial)
	get.ValidArgsFunction, lineage.ValidArgsFunction = completion, completion
	list := newModelListCommand(dial)
	list.ValidArgsFunction = completeModelNames(dial)
	cmd.AddCommand(newModelRegisterCommand(dial), get, list, lineage)
	return cmd
}

// modelsClient dials the hub and returns a Models client and the connection's closer.
func modelsClient(cmd *cobra.Command) (shoalv1.ModelsClient, func(), error) {
	conn, err := dialHub(cmd)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewModelsClient(conn), func() { _ = conn.Close() }, nil
}

// decodeModelVersion reads a ModelVersion from an API object.
func decodeModelVersion(o *shoalv1.Object) (*v1alpha1.ModelVersion, error) {
	var m v1alpha1.ModelVersion
	if err := json.Unmarshal(o.GetJson(), &m); err != nil {
		return nil, fmt.Errorf("the hub sent a model version this CLI cannot read (version skew?): %w", err)
	}
	return &m, nil
}

// modelName is the name of m: its metadata.name, or MODEL@VERSION of its spec.
func modelName(m *v1alpha1.ModelVersion) string {
	if m.Name != "" {
		return m.Name
	}
	return v1alpha1.ModelVersionName(m.Spec.Model, m.Spec.Version)
}

// checkModelVersionName refuses an argument that is not MODEL@VERSION
// before anything is sent.
func checkModelVersionName(name string) error {
	if _, _, err := v1alpha1.ParseModelVersionName(name); err != nil {
		if m, _, _ := strings.Cut(name, "@"); m != "" {
			return fmt.Errorf("%w (e.g. %s@1.0; `shoal model list %s` shows its versions)", err, m, m)
		}
		return fmt.Errorf("%w (e.g. llama@1.0)", err)
	}
	return nil
}

// modelFlags are the flags that build a ModelVersion on the command line.
type modelFlags struct {
	file           string
	model          string
	version        string
	artifact       string
	digest         string
	framework      string
	job            string
	checkpointStep int64
	parent         string
}

// modelSpecFlags are the flags that -f replaces.
var modelSpecFlags = []string{"model", "version", "artifact", "digest", "framework", "job", "checkpoint-step", "parent"}

func newModelRegisterCommand(dial modelsDial) *cobra.Command {
	var f modelFlags
	var output string
	cmd := &cobra.Command{
		Use: "register -f FILE | --model M --version V --artifact URI --digest sha256:HEX [--framework F] " +
			"[--job J [--checkpoint-step N]] [--parent M@V]",
		Short: "Register a model version: its artefact, digest, source job and checkpoint, and parent version",
		Long: "Registers a model version, named MODEL@VERSION, from a " + v1alpha1.KindModelVersion + " in YAML or JSON " +
			"(-f FILE, - for stdin) or from flags.\n\n" +
			"Versions are immutable: registering the same spec again changes nothing (\"unchanged\"), and another " +
			"spec under a name already taken is refused; register a new version instead.\n\n" +
			"The source job (--job) must exist and be readable by you. The hub records a copy of it (name, uid, " +
			"queue, owner, phase) and of its latest checkpoint, so the lineage outlives the job. --checkpoint-step " +
			"states which checkpoint the artefact was made from; since the hub keeps only a job's latest checkpoint, " +
			"a step other than the latest is refused.\n\n" +
			"The parent (--parent MODEL@VERSION, e.g. a fine-tune's base) must be registered first.\n\n" +
			"See docs/models.md.",
		Example: "  shoal model register --model llama --version 1.0 --artifact s3://models/llama/1.0 \\\n" +
			"      --digest sha256:$(sha256sum model.safetensors | cut -d' ' -f1) --framework pytorch --job llama-pretrain\n" +
			"  shoal model register --model llama-chat --version 2.0 --artifact s3://models/llama-chat/2.0 \\\n" +
			"      --digest sha256:… --job llama-sft --checkpoint-step 1200 --parent llama@1.0\n" +
			"  shoal model register -f model.yaml -o yaml",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			m, err := f.build(cmd)
			if err != nil {
				return err
			}
			b, err := json.Marshal(m)
			if err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			var hdr metadata.MD
			obj, err := cl.Register(cmd.Context(), &shoalv1.RegisterModelVersionRequest{Version: &shoalv1.Object{Json: b}},
				grpc.Header(&hdr))
			if err != nil {
				return outCallError("register modelversion/"+modelName(m), err)
			}
			stored, err := decodeModelVersion(obj)
			if err != nil {
				return err
			}
			if ok, err := outStructured(cmd.OutOrStdout(), output, stored); ok {
				return err
			}
			res := ""
			if r := hdr.Get(v1alpha1.SubmitResultHeader); len(r) == 1 {
				res = r[0]
			}
			return printModelRegistered(cmd.OutOrStdout(), stored, res)
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", "file with the "+v1alpha1.KindModelVersion+", - for stdin")
	fl.StringVar(&f.model, "model", "", "the model's name (a DNS label), e.g. llama")
	fl.StringVar(&f.version, "version", "", "the version (letters, digits, '.', '_', '-'), e.g. 1.0")
	fl.StringVar(&f.artifact, "artifact", "", "where the artefact is, an absolute URI: s3://…, gs://…, file:///…")
	fl.StringVar(&f.digest, "digest", "", "the artefact's digest: sha256: and 64 lower-case hex digits")
	fl.StringVar(&f.framework, "framework", "", "what the artefact is for: pytorch, jax, onnx, …")
	fl.StringVar(&f.job, "job", "", "the training job that produced it (must exist and be readable by you)")
	fl.Int64Var(&f.checkpointStep, "checkpoint-step", 0, "with --job: the step of the checkpoint it was made from "+
		"(default: the job's latest; another step is refused)")
	fl.StringVar(&f.parent, "parent", "", "the version it was derived from, MODEL@VERSION (registered first)")
	_ = cmd.RegisterFlagCompletionFunc("job", completeJobNames)
	_ = cmd.RegisterFlagCompletionFunc("parent", completeModelVersionNames(dial))
	outFlag(cmd, &output)
	return cmd
}

// build returns the version of -f, or the one the flags describe.
func (f *modelFlags) build(cmd *cobra.Command) (*v1alpha1.ModelVersion, error) {
	fl := cmd.Flags()
	var given []string
	for _, name := range modelSpecFlags {
		if fl.Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if fl.Changed("filename") {
		if len(given) > 0 {
			return nil, fmt.Errorf("give either -f FILE or the flags, not both (-f with %s)", strings.Join(given, ", "))
		}
		if f.file == "" {
			return nil, fmt.Errorf("-f needs a file, or - for stdin")
		}
		return readModelVersion(cmd, f.file)
	}
	var missing []string
	for _, r := range []struct{ name, val string }{
		{"--model", f.model}, {"--version", f.version}, {"--artifact", f.artifact}, {"--digest", f.digest},
	} {
		if strings.TrimSpace(r.val) == "" {
			missing = append(missing, r.name)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("register needs -f FILE, or --model, --version, --artifact and --digest: missing %s",
			strings.Join(missing, ", "))
	}
	if fl.Changed("checkpoint-step") {
		switch {
		case f.job == "":
			return nil, fmt.Errorf("--checkpoint-step names a checkpoint of the source job: give --job too")
		case f.checkpointStep < 0:
			return nil, fmt.Errorf("--checkpoint-step %d: must be 0 or more", f.checkpointStep)
		}
	}
	if f.parent != "" {
		if _, _, err := v1alpha1.ParseModelVersionName(f.parent); err != nil {
			return nil, fmt.Errorf("--parent: %w, e.g. --parent llama@1.0", err)
		}
	}
	m := &v1alpha1.ModelVersion{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindModelVersion},
		ObjectMeta: metav1.ObjectMeta{Name: v1alpha1.ModelVersionName(f.model, f.version)},
		Spec: v1alpha1.ModelVersionSpec{
			Model:       f.model,
			Version:     f.version,
			ArtifactURI: f.artifact,
			Digest:      f.digest,
			Framework:   f.framework,
			Parent:      f.parent,
		},
	}
	if f.job != "" {
		m.Spec.Source = &v1alpha1.ModelSource{Job: f.job}
		if fl.Changed("checkpoint-step") {
			step := f.checkpointStep
			m.Spec.Source.CheckpointStep = &step
		}
	}
	return m, nil
}

// readModelVersion decodes the ModelVersion of file strictly.
func readModelVersion(cmd *cobra.Command, file string) (*v1alpha1.ModelVersion, error) {
	return readManifest(cmd, file, v1alpha1.DecodeModelVersion)
}

// printModelRegistered writes the line that says what the registration
// did: result is the hub's SubmitResultHeader ("created" or "existing").
func printModelRegistered(w io.Writer, m *v1alpha1.ModelVersion, result string) error {
	verb := "registered"
	if result == "existing" {
		verb = "unchanged (already registered with the same spec)"
	}
	_, err := fmt.Fprintf(w, "modelversion/%s %s\n", modelName(m), verb)
	return err
}
