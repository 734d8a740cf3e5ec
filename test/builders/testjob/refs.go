// SPDX-License-Identifier: Apache-2.0

package testjob

import (
	corev1 "k8s.io/api/core/v1"
)

// ConfigMapEnv appends to the first container an environment variable
// read from key of ConfigMap configMap.
func (w *Wrapper) ConfigMapEnv(name, configMap, key string) *Wrapper {
	c := &w.j.Spec.Template.Spec.Containers[0]
	c.Env = append(c.Env, corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: configMap}, Key: key}}})
	return w
}

// SecretVolume adds a volume of Secret secret, mounted at mountPath in the
// first container.
func (w *Wrapper) SecretVolume(volume, secret, mountPath string) *Wrapper {
	s := &w.j.Spec.Template.Spec
	s.Volumes = append(s.Volumes, corev1.Volume{Name: volume,
		VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}})
	c := &s.Containers[0]
	c.VolumeMounts = append(c.VolumeMounts, corev1.VolumeMount{Name: volume, MountPath: mountPath, ReadOnly: true})
	return w
}
