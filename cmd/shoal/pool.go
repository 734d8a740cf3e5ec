// SPDX-License-Identifier: Apache-2.0

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	shoalv1 "github.com/shoal-dev/shoal/apis/proto/shoal/v1alpha1"
	"github.com/shoal-dev/shoal/apis/v1alpha1"
)

// poolsDial returns the hub's Pools client and the connection's closer
// (poolsClient; a fake in tests).
type poolsDial func(*cobra.Command) (shoalv1.PoolsClient, func(), error)

// addPoolCommands adds `shoal pool` to root.
func addPoolCommands(root *cobra.Command) {
	root.AddCommand(newPoolCommand(poolsClient))
}

// newPoolCommand is `shoal pool` with its subcommands, talking to the hub
// through dial.
func newPoolCommand(dial poolsDial) *cobra.Command {
	cmd := &cobra.Command{
		Use:     "pool",
		Aliases: []string{"pools"},
		Short:   "Manage GPU pools: named sets of the fleet's GPU nodes that queues are bound to; cordon, drain, scale to zero",
		Long: "A GPU pool (apiVersion " + v1alpha1.APIVersion + ", kind " + v1alpha1.KindGPUPool + ") is the set of " +
			"GPU nodes of the clusters its cluster selector matches, of the GPU products and node pools it names. " +
			"Queues bound to pools (`shoal queue update Q --pool NAME`) place their jobs only on their pools' nodes. " +
			"A pool can be cordoned (no new gang is placed on its nodes), drained (its nodes drained in their " +
			"clusters: gangs there are requeued) and marked scale-to-zero (the hub publishes its idle nodes for an " +
			"autoscaler). Changes are the admin's; every user may read pools (docs/pools.md).",
	}
	many, first := completePoolNames(dial, true), completePoolNames(dial, false)
	get, del := newPoolGetCommand(dial), newPoolDeleteCommand(dial)
	get.ValidArgsFunction, del.ValidArgsFunction = many, many
	state := []*cobra.Command{newPoolDescribeCommand(dial), newPoolCordonCommand(dial, true), newPoolCordonCommand(dial, false),
		newPoolDrainCommand(dial, true), newPoolDrainCommand(dial, false), newPoolScaleToZeroCommand(dial)}
	for _, c := range state {
		c.ValidArgsFunction = first
	}
	cmd.AddCommand(newPoolCreateCommand(dial), newPoolUpdateCommand(dial), get, newPoolListCommand(dial))
	cmd.AddCommand(state...)
	cmd.AddCommand(del)
	return cmd
}

// poolsClient dials the hub and returns a Pools client and the connection's closer.
func poolsClient(cmd *cobra.Command) (shoalv1.PoolsClient, func(), error) {
	conn, err := dialHub(cmd)
	if err != nil {
		return nil, nil, err
	}
	return shoalv1.NewPoolsClient(conn), func() { _ = conn.Close() }, nil
}

// decodePool reads a GPUPool from an API object.
func decodePool(o *shoalv1.Object) (*v1alpha1.GPUPool, error) {
	var p v1alpha1.GPUPool
	if err := json.Unmarshal(o.GetJson(), &p); err != nil {
		return nil, fmt.Errorf("the hub sent a GPU pool this CLI cannot read (version skew?): %w", err)
	}
	return &p, nil
}

// readPool decodes the GPUPool of file strictly.
func readPool(cmd *cobra.Command, file string) (*v1alpha1.GPUPool, error) {
	if file == "" {
		return nil, fmt.Errorf("-f needs a file, or - for stdin")
	}
	p, err := readManifest(cmd, file, v1alpha1.DecodeGPUPool)
	if err == nil && p.Name == "" {
		return nil, fmt.Errorf("%s: the pool has no metadata.name", file)
	}
	return p, err
}

// readManifest reads file (- for stdin) and decodes its one object with
// decode, strictly; errors name the file.
func readManifest[T any](cmd *cobra.Command, file string, decode func([]byte) (*T, error)) (*T, error) {
	r, closeFn, err := readInput(cmd, file)
	if err != nil {
		return nil, err
	}
	defer closeFn()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", file, err)
	}
	obj, err := decode(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	return obj, nil
}

// getPool reads pool name and the revision it is stored at; what names the
// call in an error ("get", "describe").
func getPool(cmd *cobra.Command, cl shoalv1.PoolsClient, what, name string) (*v1alpha1.GPUPool, int64, error) {
	obj, err := cl.Get(cmd.Context(), &shoalv1.GetPoolRequest{Name: name})
	if err != nil {
		return nil, 0, outCallError(what+" gpupool/"+name, err)
	}
	p, err := decodePool(obj)
	if err != nil {
		return nil, 0, err
	}
	return p, obj.Revision, nil
}

// sendPool calls Create, or Update guarded by rev when it is not 0, with p
// and returns the stored pool.
func sendPool(cmd *cobra.Command, cl shoalv1.PoolsClient, p *v1alpha1.GPUPool, create bool, rev int64) (*v1alpha1.GPUPool, error) {
	b, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	req := &shoalv1.PoolRequest{Name: p.Name, Pool: &shoalv1.Object{Json: b, Revision: rev}}
	call, verb := cl.Update, "update"
	if create {
		call, verb = cl.Create, "create"
	}
	obj, err := call(cmd.Context(), req)
	if err != nil {
		return nil, outCallError(verb+" gpupool/"+p.Name, err)
	}
	return decodePool(obj)
}

// printPoolResult writes the stored pool for -o yaml|json, else the line
// "gpupool/NAME <done>".
func printPoolResult(cmd *cobra.Command, output string, p *v1alpha1.GPUPool, done string) error {
	if ok, err := outStructured(cmd.OutOrStdout(), output, p); ok {
		return err
	}
	_, err := fmt.Fprintf(cmd.OutOrStdout(), "gpupool/%s %s\n", p.Name, done)
	return err
}

// poolFlags are the flags that build a GPUPool on the command line.
type poolFlags struct {
	file        string
	selector    map[string]string
	products    []string
	nodePools   []string
	scaleToZero bool
}

// poolSpecFlags are the flags that -f replaces.
var poolSpecFlags = []string{"cluster-selector", "product", "node-pool", "scale-to-zero"}

// build returns the pool of -f, or the one NAME and the flags describe.
func (f *poolFlags) build(cmd *cobra.Command, args []string) (*v1alpha1.GPUPool, error) {
	fl := cmd.Flags()
	var given []string
	for _, name := range poolSpecFlags {
		if fl.Changed(name) {
			given = append(given, "--"+name)
		}
	}
	if fl.Changed("filename") {
		if len(args) > 0 {
			given = append([]string{"NAME"}, given...)
		}
		if len(given) > 0 {
			return nil, fmt.Errorf("give either -f FILE or NAME with flags, not both (-f with %s)", strings.Join(given, ", "))
		}
		return readPool(cmd, f.file)
	}
	if len(args) != 1 {
		return nil, fmt.Errorf("name the pool (e.g. shoal pool create training-h100 --product NVIDIA-H100-80GB-HBM3) or give -f FILE")
	}
	p := &v1alpha1.GPUPool{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.APIVersion, Kind: v1alpha1.KindGPUPool},
		ObjectMeta: metav1.ObjectMeta{Name: args[0]},
		Spec: v1alpha1.GPUPoolSpec{
			GPUProducts: f.products,
			NodePools:   f.nodePools,
			ScaleToZero: f.scaleToZero,
		},
	}
	if len(f.selector) > 0 {
		p.Spec.ClusterSelector = &metav1.LabelSelector{MatchLabels: f.selector}
	}
	return p, nil
}

func newPoolCreateCommand(dial poolsDial) *cobra.Command {
	var f poolFlags
	var output string
	cmd := &cobra.Command{
		Use: "create NAME [--cluster-selector K=V,...] [--product P]... [--node-pool NP]... [--scale-to-zero] | " +
			"-f FILE",
		Short: "Create a GPU pool from a file or from flags (the clusters, GPU products and node pools of its nodes)",
		Long: "Creates a pool from a " + v1alpha1.KindGPUPool + " in YAML or JSON (-f FILE, - for stdin), or named NAME " +
			"from flags: --cluster-selector chooses clusters by their labels (none: every cluster), --product the " +
			"GPU products (nvidia.com/gpu.product) of its nodes and --node-pool their node pools (the node label " +
			v1alpha1.LabelNodePool + " or the cloud provider's node-pool label); none: any. --product and " +
			"--node-pool repeat.",
		Example: "  shoal pool create training-h100 --product NVIDIA-H100-80GB-HBM3 --node-pool train\n" +
			"  shoal pool create eu-spot --cluster-selector region=eu,tier=spot --scale-to-zero\n" +
			"  shoal pool create -f examples/gpu-pool.yaml",
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			p, err := f.build(cmd, args)
			if err != nil {
				return err
			}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			stored, err := sendPool(cmd, cl, p, true, 0)
			if err != nil {
				return err
			}
			return printPoolResult(cmd, output, stored, "created")
		},
	}
	fl := cmd.Flags()
	fl.StringVarP(&f.file, "filename", "f", "", "file with the "+v1alpha1.KindGPUPool+", - for stdin")
	fl.StringToStringVar(&f.selector, "cluster-selector", nil, "the clusters' labels, e.g. region=eu,tier=spot (default: every cluster)")
	fl.StringSliceVar(&f.products, "product", nil, "a GPU product of its nodes, e.g. NVIDIA-H100-80GB-HBM3 (repeatable; default: any)")
	fl.StringSliceVar(&f.nodePools, "node-pool", nil, "a node pool of its nodes, e.g. train (repeatable; default: any node)")
	fl.BoolVar(&f.scaleToZero, "scale-to-zero", false, "publish the pool's idle nodes for an autoscaler to release")
	outFlag(cmd, &output)
	return cmd
}

func newPoolUpdateCommand(dial poolsDial) *cobra.Command {
	var file, output string
	var revision int64
	cmd := &cobra.Command{
		Use:   "update -f FILE [--revision N]",
		Short: "Replace a GPU pool's spec with the one of a file",
		Long: "Replaces the spec of the pool the file names. With --revision (the revision of the pool you read), a " +
			"pool changed since is refused instead of overwritten. To cordon, drain or mark a pool scale-to-zero, " +
			"`shoal pool cordon|drain|scale-to-zero NAME` change only that field.",
		Example: "  shoal pool get training-h100 -o yaml > pool.yaml && $EDITOR pool.yaml && shoal pool update -f pool.yaml",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := outCheck(output); err != nil {
				return err
			}
			if !cmd.Flags().Changed("filename") {
				return fmt.Errorf("update needs -f FILE (- for stdin); `shoal pool get NAME -o yaml` prints the pool to edit")
			}
			if revision < 0 {
				return fmt.Errorf("--revision %d: must be 0 or more", revision)
			}
			p, err := readPool(cmd, file)
			if err != nil {
				return err
			}
			p.Status = v1alpha1.GPUPoolStatus{}
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			stored, err := sendPool(cmd, cl, p, false, revision)
			if err != nil {
				return err
			}
			return printPoolResult(cmd, output, stored, "updated")
		},
	}
	cmd.Flags().StringVarP(&file, "filename", "f", "", "file with the "+v1alpha1.KindGPUPool+", - for stdin")
	cmd.Flags().Int64Var(&revision, "revision", 0, "refuse the update if the stored pool's revision is not this one (0: replace whatever is stored)")
	outFlag(cmd, &output)
	return cmd
}

func newPoolDeleteCommand(dial poolsDial) *cobra.Command {
	return &cobra.Command{
		Use:   "delete NAME...",
		Short: "Delete GPU pools; refused while a queue is bound to one",
		Args:  cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			cl, done, err := dial(cmd)
			if err != nil {
				return err
			}
			defer done()
			for _, name := range args {
				if _, err := cl.Delete(cmd.Context(), &shoalv1.GetPoolRequest{Name: name}); err != nil {
					return outCallError("delete gpupool/"+name, err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "gpupool/%s deleted\n", name)
			}
			return nil
		},
	}
}

// changePool reads pool name, applies change to its spec and, when the
// spec changed, stores it guarded by the revision read. It writes
// "gpupool/NAME <done> (state S)", or that nothing changed.
func changePool(cmd *cobra.Command, dial poolsDial, name, done string, change func(*v1alpha1.GPUPoolSpec)) error {
	cl, closeConn, err := dial(cmd)
	if err != nil {
		return err
	}
	defer closeConn()
	p, rev, err := getPool(cmd, cl, "get", name)
	if err != nil {
		return err
	}
	before := p.Spec.DeepCopy()
	change(&p.Spec)
	if reflect.DeepEqual(before, &p.Spec) {
		_, err := fmt.Fprintf(cmd.OutOrStdout(), "gpupool/%s unchanged (already %s; state %s)\n", p.Name, done, poolState(p))
		return err
	}
	p.Status = v1alpha1.GPUPoolStatus{}
	stored, err := sendPool(cmd, cl, p, false, rev)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintf(cmd.OutOrStdout(), "gpupool/%s %s (state %s)\n", stored.Name, done, poolState(stored))
	return err
}

// newPoolCordonCommand returns `shoal pool cordon NAME`, or uncordon.
func newPoolCordonCommand(dial poolsDial, cordon bool) *cobra.Command {
	use, short, done := "cordon NAME", "Place no new gang on a pool's nodes (running gangs stay)", "cordoned"
	long := "cordon sets the pool's spec.cordoned: the scheduler places no new gang on its nodes; gangs " +
		"running there go on. `shoal pool uncordon NAME` ends it."
	if !cordon {
		use, short, done = "uncordon NAME", "Let new gangs onto a pool's nodes again (ends a drain too)", "uncordoned"
		long = "uncordon clears the pool's spec.cordoned and spec.drain: new gangs may be placed on its nodes again."
	}
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return changePool(cmd, dial, args[0], done, func(s *v1alpha1.GPUPoolSpec) {
				s.Cordoned = cordon
				if !cordon {
					s.Drain = false
				}
			})
		},
	}
}

// newPoolDrainCommand returns `shoal pool drain NAME`, or undrain.
func newPoolDrainCommand(dial poolsDial, drain bool) *cobra.Command {
	if drain {
		return &cobra.Command{
			Use:   "drain NAME",
			Short: "Cordon a pool and drain its nodes in their clusters: gangs with members there are requeued",
			Long: "drain sets the pool's spec.cordoned and spec.drain: no new gang is placed on its nodes, and the hub " +
				"drains them in their clusters, so every gang with a member there is stopped and requeued elsewhere " +
				"(reason Drained). `shoal pool describe NAME` lists the nodes drained; `shoal pool undrain NAME` " +
				"ends the drain and keeps the pool cordoned, `shoal pool uncordon NAME` ends both.",
			Args: cobra.ExactArgs(1),
			RunE: func(cmd *cobra.Command, args []string) error {
				return changePool(cmd, dial, args[0], "draining", func(s *v1alpha1.GPUPoolSpec) {
					s.Cordoned, s.Drain = true, true
				})
			},
		}
	}
	var uncordon bool
	cmd := &cobra.Command{
		Use:   "undrain NAME [--uncordon]",
		Short: "End a pool's drain (the nodes it drained are unmarked in their clusters); it stays cordoned unless --uncordon",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			done := "undrained"
			if uncordon {
				done = "undrained and uncordoned"
			}
			return changePool(cmd, dial, args[0], done, func(s *v1alpha1.GPUPoolSpec) {
				s.Drain = false
				if uncordon {
					s.Cordoned = false
				}
			})
		},
	}
	cmd.Flags().BoolVar(&uncordon, "uncordon", false, "uncordon the pool too: new gangs may be placed on its nodes again")
	return cmd
}

// newPoolScaleToZeroCommand returns `shoal pool scale-to-zero NAME --on|--off`.
func newPoolScaleToZeroCommand(dial poolsDial) *cobra.Command {
	var on, off bool
	cmd := &cobra.Command{
		Use:   "scale-to-zero NAME --on|--off",
		Short: "Publish a pool's idle nodes for an autoscaler to release (--on), or stop (--off)",
		Long: "With spec.scaleToZero the hub publishes the pool's nodes with no GPU in use, and since when " +
			"(status.idleNodes, `shoal pool describe NAME`, the metric shoal_pool_idle_nodes), for a cluster " +
			"autoscaler or a provider to release.",
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if on == off {
				return fmt.Errorf("give either --on or --off")
			}
			done := "scale-to-zero on"
			if off {
				done = "scale-to-zero off"
			}
			return changePool(cmd, dial, args[0], done, func(s *v1alpha1.GPUPoolSpec) { s.ScaleToZero = on })
		},
	}
	cmd.Flags().BoolVar(&on, "on", false, "publish the pool's idle nodes")
	cmd.Flags().BoolVar(&off, "off", false, "stop publishing them")
	return cmd
}
