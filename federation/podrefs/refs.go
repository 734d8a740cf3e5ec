// SPDX-License-Identifier: Apache-2.0

package podrefs

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kind is the kind of a referenced object.
type Kind string

// The kinds of object a pod spec references in its namespace.
const (
	ConfigMap      Kind = "ConfigMap"
	Secret         Kind = "Secret"
	ServiceAccount Kind = "ServiceAccount"
)

// DefaultServiceAccount is the ServiceAccount every namespace has; it is
// never a reference.
const DefaultServiceAccount = "default"

// Ref is one reference of a pod spec to an object in its namespace.
type Ref struct {
	Kind Kind
	Name string
	// Path is the field that names the object
	// ("spec.volumes[0].secret.secretName" under the root given).
	Path *field.Path
	// Optional: the pod starts without the object (optional: true).
	Optional bool
}

// Object is the kind and name of a referenced object.
type Object struct {
	Kind Kind
	Name string
}

// Object returns the object r names.
func (r Ref) Object() Object { return Object{Kind: r.Kind, Name: r.Name} }

// References returns every reference of spec, at root (the path of spec,
// e.g. spec.template.spec), in field order: containers and init containers
// (env valueFrom configMapKeyRef and secretKeyRef, envFrom), volumes
// (configMap, secret, projected configMap and secret sources, and the
// secrets of volume plugins), imagePullSecrets and the serviceAccountName
// (the deprecated serviceAccount when it is empty) unless it is "default".
// Empty names are skipped (the API validation refuses them).
func References(spec *corev1.PodSpec, root *field.Path) []Ref {
	w := &walker{}
	for i := range spec.InitContainers {
		w.container(&spec.InitContainers[i], root.Child("initContainers").Index(i))
	}
	for i := range spec.Containers {
		w.container(&spec.Containers[i], root.Child("containers").Index(i))
	}
	for i := range spec.Volumes {
		w.volume(&spec.Volumes[i], root.Child("volumes").Index(i))
	}
	for i, s := range spec.ImagePullSecrets {
		w.add(Secret, s.Name, root.Child("imagePullSecrets").Index(i).Child("name"), nil)
	}
	switch {
	case spec.ServiceAccountName != "":
		if spec.ServiceAccountName != DefaultServiceAccount {
			w.add(ServiceAccount, spec.ServiceAccountName, root.Child("serviceAccountName"), nil)
		}
	case spec.DeprecatedServiceAccount != "" && spec.DeprecatedServiceAccount != DefaultServiceAccount:
		w.add(ServiceAccount, spec.DeprecatedServiceAccount, root.Child("serviceAccount"), nil)
	}
	return w.refs
}

// Required returns the references that are not optional.
func Required(refs []Ref) []Ref {
	var out []Ref
	for _, r := range refs {
		if !r.Optional {
			out = append(out, r)
		}
	}
	return out
}

// Objects returns the distinct objects refs name, in first-reference order,
// each with whether every reference to it is optional.
func Objects(refs []Ref) ([]Object, map[Object]bool) {
	var out []Object
	optional := map[Object]bool{}
	for _, r := range refs {
		o := r.Object()
		opt, seen := optional[o]
		if !seen {
			out = append(out, o)
			opt = true
		}
		optional[o] = opt && r.Optional
	}
	return out, optional
}

type walker struct{ refs []Ref }

func (w *walker) add(k Kind, name string, p *field.Path, optional *bool) {
	if name == "" {
		return
	}
	w.refs = append(w.refs, Ref{Kind: k, Name: name, Path: p, Optional: optional != nil && *optional})
}

func (w *walker) container(c *corev1.Container, p *field.Path) {
	for i, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		vp := p.Child("env").Index(i).Child("valueFrom")
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			w.add(ConfigMap, r.Name, vp.Child("configMapKeyRef", "name"), r.Optional)
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil {
			w.add(Secret, r.Name, vp.Child("secretKeyRef", "name"), r.Optional)
		}
	}
	for i, e := range c.EnvFrom {
		ep := p.Child("envFrom").Index(i)
		if r := e.ConfigMapRef; r != nil {
			w.add(ConfigMap, r.Name, ep.Child("configMapRef", "name"), r.Optional)
		}
		if r := e.SecretRef; r != nil {
			w.add(Secret, r.Name, ep.Child("secretRef", "name"), r.Optional)
		}
	}
}

func (w *walker) volume(v *corev1.Volume, p *field.Path) {
	if s := v.ConfigMap; s != nil {
		w.add(ConfigMap, s.Name, p.Child("configMap", "name"), s.Optional)
	}
	if s := v.Secret; s != nil {
		w.add(Secret, s.SecretName, p.Child("secret", "secretName"), s.Optional)
	}
	if s := v.Projected; s != nil {
		for i, src := range s.Sources {
			sp := p.Child("projected", "sources").Index(i)
			if c := src.ConfigMap; c != nil {
				w.add(ConfigMap, c.Name, sp.Child("configMap", "name"), c.Optional)
			}
			if c := src.Secret; c != nil {
				w.add(Secret, c.Name, sp.Child("secret", "name"), c.Optional)
			}
		}
	}
	w.pluginSecrets(v, p)
}

// pluginSecrets adds the Secrets volume plugins read from the pod's
// namespace (CSI node-publish, CephFS, RBD, iSCSI, FlexVolume, Azure File,
// ScaleIO, StorageOS).
func (w *walker) pluginSecrets(v *corev1.Volume, p *field.Path) {
	ref := func(name string, path ...string) {
		w.add(Secret, name, p.Child(path[0], path[1:]...), nil)
	}
	switch {
	case v.CSI != nil && v.CSI.NodePublishSecretRef != nil:
		ref(v.CSI.NodePublishSecretRef.Name, "csi", "nodePublishSecretRef", "name")
	case v.CephFS != nil && v.CephFS.SecretRef != nil:
		ref(v.CephFS.SecretRef.Name, "cephfs", "secretRef", "name")
	case v.RBD != nil && v.RBD.SecretRef != nil:
		ref(v.RBD.SecretRef.Name, "rbd", "secretRef", "name")
	case v.ISCSI != nil && v.ISCSI.SecretRef != nil:
		ref(v.ISCSI.SecretRef.Name, "iscsi", "secretRef", "name")
	case v.FlexVolume != nil && v.FlexVolume.SecretRef != nil:
		ref(v.FlexVolume.SecretRef.Name, "flexVolume", "secretRef", "name")
	case v.AzureFile != nil:
		ref(v.AzureFile.SecretName, "azureFile", "secretName")
	case v.ScaleIO != nil && v.ScaleIO.SecretRef != nil:
		ref(v.ScaleIO.SecretRef.Name, "scaleIO", "secretRef", "name")
	case v.StorageOS != nil && v.StorageOS.SecretRef != nil:
		ref(v.StorageOS.SecretRef.Name, "storageos", "secretRef", "name")
	}
}
