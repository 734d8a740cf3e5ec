// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/record"
)

// vkSuccessReasons are the reasons of the events virtual-kubelet's pod
// controller records when the provider created, updated or deleted a pod
// (node/pod.go: "Create pod in provider successfully", ...).
var vkSuccessReasons = map[string]bool{
	"ProviderCreateSuccess": true, "ProviderUpdateSuccess": true, "ProviderDeleteSuccess": true,
}

// quietRecorder drops virtual-kubelet's Normal success events and passes
// every other event on. Each member would otherwise get two or three
// events on the hub cluster (created, updated at its commit, deleted):
// for a gang start a fifth of the writes to the hub cluster's API server,
// saying what the hub pod's status says already. Warnings (a provider
// that failed) are kept.
type quietRecorder struct{ record.EventRecorder }

// dropped says whether quietRecorder drops an event.
func dropped(eventtype, reason string) bool {
	return eventtype == corev1.EventTypeNormal && vkSuccessReasons[reason]
}

func (q quietRecorder) Event(o runtime.Object, eventtype, reason, message string) {
	if dropped(eventtype, reason) {
		return
	}
	q.EventRecorder.Event(o, eventtype, reason, message)
}

func (q quietRecorder) Eventf(o runtime.Object, eventtype, reason, format string, args ...any) {
	if dropped(eventtype, reason) {
		return
	}
	q.EventRecorder.Eventf(o, eventtype, reason, format, args...)
}

func (q quietRecorder) AnnotatedEventf(o runtime.Object, annotations map[string]string, eventtype, reason, format string, args ...any) {
	if dropped(eventtype, reason) {
		return
	}
	q.EventRecorder.AnnotatedEventf(o, annotations, eventtype, reason, format, args...)
}
