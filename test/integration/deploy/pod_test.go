// SPDX-License-Identifier: Apache-2.0

package deploy_test

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/shoal-dev/shoal/internal/charts"
)

// In-cluster names a pod sees that a process here sees elsewhere.
const (
	inClusterServer = "https://kubernetes.default.svc"
	saMountPath     = "/var/run/secrets/kubernetes.io/serviceaccount"
)

// podContext is what the kubelet and the cluster would give the pod.
type podContext struct {
	// objs are the chart's rendered objects (the ConfigMaps and Secrets the
	// pod's volumes and environment name).
	objs []charts.Object
	// dir receives one directory per volume.
	dir string
	// server is the cluster's API server URL (what kubernetes.default.svc is).
	server string
	caPEM  []byte
	// token is the ServiceAccount token minted for the pod's ServiceAccount.
	token string
	podIP string
}

// process is one container of a rendered workload as a process here: its
// arguments and environment are the container's, with $(VAR) expanded as
// the kubelet does, and every mount path replaced by the directory that
// holds that volume's files.
type process struct {
	ServiceAccount string
	Args, Env      []string
	// Mounts maps each mount path to its directory.
	Mounts map[string]string
	// KubeconfigForToken is a kubeconfig holding only the pod's token (the
	// in-cluster config's server, CA and token file).
	KubeconfigForToken string
}

// planProcess turns the only container of workload (a Deployment or a
// StatefulSet the chart rendered) into a process.
func planProcess(t *testing.T, workload charts.Object, pc podContext) *process {
	t.Helper()
	tmpl, _, _ := unstructured.NestedMap(workload.Object, "spec", "template", "spec")
	var spec corev1.PodSpec
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(tmpl, &spec); err != nil {
		t.Fatalf("%s %s: pod spec: %v", workload.GetKind(), workload.GetName(), err)
	}
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 0 {
		t.Fatalf("%s %s: %d containers, want 1 and no init containers", workload.GetKind(), workload.GetName(), len(spec.Containers))
	}
	c := spec.Containers[0]
	if len(c.Command) != 0 {
		t.Fatalf("%s %s: the chart overrides the image's entrypoint with %v", workload.GetKind(), workload.GetName(), c.Command)
	}
	claims := map[string]bool{}
	vcts, _, _ := unstructured.NestedSlice(workload.Object, "spec", "volumeClaimTemplates")
	for _, v := range vcts {
		name, _, _ := unstructured.NestedString(v.(map[string]any), "metadata", "name")
		claims[name] = true
	}
	volumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		volumes[v.Name] = v
	}
	p := &process{ServiceAccount: spec.ServiceAccountName, Mounts: map[string]string{}}
	// Each volume's files, written once every mount path is known.
	volFiles := map[string]map[string][]byte{}

	// The ServiceAccount volume the kubelet projects into every pod.
	sa := filepath.Join(pc.dir, "serviceaccount")
	writeFiles(t, sa, map[string][]byte{"token": []byte(pc.token), "ca.crt": pc.caPEM, "namespace": []byte(workload.GetNamespace())}, 0o600)
	p.Mounts[saMountPath] = sa
	for _, m := range c.VolumeMounts {
		dir := filepath.Join(pc.dir, "volumes", m.Name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		p.Mounts[m.MountPath] = dir
		v, ok := volumes[m.Name]
		switch {
		case !ok && claims[m.Name]: // a PersistentVolumeClaim: empty at first
		case !ok:
			t.Fatalf("%s: mount %s names no volume", workload.GetName(), m.Name)
		case v.EmptyDir != nil:
		case v.ConfigMap != nil:
			data, found := configMapData(pc.objs, v.ConfigMap.Name)
			if !found && (v.ConfigMap.Optional == nil || !*v.ConfigMap.Optional) {
				t.Fatalf("%s: volume %s: the chart renders no ConfigMap %s", workload.GetName(), m.Name, v.ConfigMap.Name)
			}
			volFiles[dir] = data
		case v.Secret != nil:
			data, found := secretData(t, pc.objs, v.Secret.SecretName)
			if !found && (v.Secret.Optional == nil || !*v.Secret.Optional) {
				t.Fatalf("%s: volume %s: the chart renders no Secret %s", workload.GetName(), m.Name, v.Secret.SecretName)
			}
			volFiles[dir] = data
		default:
			t.Fatalf("%s: volume %s: a kind this test does not provide", workload.GetName(), m.Name)
		}
	}
	// Files: the in-cluster names inside them (the hub's kubeconfig) are
	// replaced like the arguments.
	for dir, files := range volFiles {
		for name, content := range files {
			files[name] = []byte(p.substitute(string(content), pc.server))
		}
		writeFiles(t, dir, files, 0o600)
	}

	env := map[string]string{}
	for _, from := range c.EnvFrom {
		if from.ConfigMapRef == nil {
			t.Fatalf("%s: envFrom other than a ConfigMap", workload.GetName())
		}
		data, found := configMapData(pc.objs, from.ConfigMapRef.Name)
		if !found && (from.ConfigMapRef.Optional == nil || !*from.ConfigMapRef.Optional) {
			t.Fatalf("%s: envFrom: the chart renders no ConfigMap %s", workload.GetName(), from.ConfigMapRef.Name)
		}
		for k, v := range data {
			env[from.Prefix+k] = string(v)
		}
	}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = expand(e.Value, env)
		case e.ValueFrom.FieldRef != nil:
			switch e.ValueFrom.FieldRef.FieldPath {
			case "status.podIP":
				env[e.Name] = pc.podIP
			case "metadata.namespace":
				env[e.Name] = workload.GetNamespace()
			case "metadata.name":
				env[e.Name] = workload.GetName() + "-0"
			default:
				t.Fatalf("%s: env %s: field %s", workload.GetName(), e.Name, e.ValueFrom.FieldRef.FieldPath)
			}
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			data, _ := secretData(t, pc.objs, ref.Name)
			v, ok := data[ref.Key]
			if !ok && (ref.Optional == nil || !*ref.Optional) {
				t.Fatalf("%s: env %s: no key %s in Secret %s", workload.GetName(), e.Name, ref.Key, ref.Name)
			}
			if ok {
				env[e.Name] = string(v)
			}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			data, _ := configMapData(pc.objs, ref.Name)
			v, ok := data[ref.Key]
			if !ok && (ref.Optional == nil || !*ref.Optional) {
				t.Fatalf("%s: env %s: no key %s in ConfigMap %s", workload.GetName(), e.Name, ref.Key, ref.Name)
			}
			if ok {
				env[e.Name] = string(v)
			}
		case e.ValueFrom.ResourceFieldRef != nil:
			env[e.Name] = resourceField(t, workload.GetName(), c, e.ValueFrom.ResourceFieldRef)
		default:
			t.Fatalf("%s: env %s: a source this test does not provide", workload.GetName(), e.Name)
		}
	}
	for _, a := range c.Args {
		p.Args = append(p.Args, p.substitute(expand(a, env), pc.server))
	}
	for k, v := range env {
		p.Env = append(p.Env, k+"="+v)
	}
	sort.Strings(p.Env)

	// The in-cluster config, as a kubeconfig: same server, CA and token.
	p.KubeconfigForToken = filepath.Join(pc.dir, "in-cluster.kubeconfig")
	writeFiles(t, pc.dir, map[string][]byte{"in-cluster.kubeconfig": []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: in-cluster, cluster: {server: %q, certificate-authority: %q}}]
users: [{name: sa, user: {tokenFile: %q}}]
contexts: [{name: in-cluster, context: {cluster: in-cluster, user: sa}}]
current-context: in-cluster
`, pc.server, filepath.Join(sa, "ca.crt"), filepath.Join(sa, "token")))}, 0o600)
	return p
}

// substitute replaces the pod's mount paths (the longest that matches
// first) and the in-cluster API server address in s, in one pass: a
// directory here is not replaced again (it may start with /tmp, a mount path).
func (p *process) substitute(s, server string) string {
	paths := make([]string, 0, len(p.Mounts))
	for m := range p.Mounts {
		paths = append(paths, m)
	}
	sort.Slice(paths, func(i, j int) bool { return len(paths[i]) > len(paths[j]) })
	pairs := make([]string, 0, 2*len(paths)+2)
	for _, m := range paths {
		pairs = append(pairs, m, p.Mounts[m])
	}
	return strings.NewReplacer(append(pairs, inClusterServer, server)...).Replace(s)
}

// expand replaces $(VAR) by env's VAR as the kubelet does: an unknown
// variable stays as written, $$ is a $.
func expand(s string, env map[string]string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '$' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		switch s[i+1] {
		case '$':
			b.WriteByte('$')
			i++
		case '(':
			end := strings.IndexByte(s[i:], ')')
			if end < 0 {
				b.WriteString(s[i:])
				return b.String()
			}
			name := s[i+2 : i+end]
			if v, ok := env[name]; ok {
				b.WriteString(v)
			} else {
				b.WriteString(s[i : i+end+1])
			}
			i += end
		default:
			b.WriteByte('$')
		}
	}
	return b.String()
}

func configMapData(objs []charts.Object, name string) (map[string][]byte, bool) {
	for _, o := range objs {
		if o.GetKind() == "ConfigMap" && o.GetName() == name {
			data, _, _ := unstructured.NestedStringMap(o.Object, "data")
			out := map[string][]byte{}
			for k, v := range data {
				out[k] = []byte(v)
			}
			return out, true
		}
	}
	return nil, false
}

func secretData(t *testing.T, objs []charts.Object, name string) (map[string][]byte, bool) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Secret" || o.GetName() != name {
			continue
		}
		out := map[string][]byte{}
		data, _, _ := unstructured.NestedStringMap(o.Object, "data")
		for k, v := range data {
			b, err := base64.StdEncoding.DecodeString(v)
			if err != nil {
				t.Fatalf("Secret %s: key %s: %v", name, k, err)
			}
			out[k] = b
		}
		sd, _, _ := unstructured.NestedStringMap(o.Object, "stringData")
		for k, v := range sd {
			out[k] = []byte(v)
		}
		return out, true
	}
	return nil, false
}

func writeFiles(t *testing.T, dir string, files map[string][]byte, mode os.FileMode) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), content, mode); err != nil {
			t.Fatal(err)
		}
	}
}

// flagValue returns the value of --name in args, and whether it is there.
func flagValue(args []string, name string) (string, bool) {
	for _, a := range args {
		if v, ok := strings.CutPrefix(a, "--"+name+"="); ok {
			return v, true
		}
	}
	return "", false
}

// resourceField is the value the kubelet gives an env var from a resource
// field of container c: the quantity divided by the divisor (1 by
// default), rounded up. Only the container's own memory limit is provided.
func resourceField(t *testing.T, workload string, c corev1.Container, ref *corev1.ResourceFieldSelector) string {
	t.Helper()
	if ref.Resource != "limits.memory" || (ref.ContainerName != "" && ref.ContainerName != c.Name) {
		t.Fatalf("%s: resource field %s of container %q: not provided by this test", workload, ref.Resource, ref.ContainerName)
	}
	q, ok := c.Resources.Limits[corev1.ResourceMemory]
	if !ok {
		t.Fatalf("%s: resource field limits.memory of a container without a memory limit", workload)
	}
	divisor := int64(1)
	if !ref.Divisor.IsZero() {
		divisor = ref.Divisor.Value()
	}
	return strconv.FormatInt((q.Value()+divisor-1)/divisor, 10)
}
