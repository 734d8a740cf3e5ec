package dispatch

import (
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/shoal-dev/shoal/apis/v1alpha1"
	"github.com/shoal-dev/shoal/hub/ledger"
)

// PodName is the hub pod name of a member of an epoch. The epoch keeps a
// restarted gang's pods apart from the old ones still terminating.
func PodName(job string, epoch int64, index int32) string {
	return fmt.Sprintf("%s-e%d-%d", job, epoch, index)
}

// hostname is the member's stable host name under the job's headless Service.
func hostname(job string, index int32) string { return fmt.Sprintf("%s-%d", job, index) }

// memberPod builds the hub pod of one member.
func (d *Dispatcher) memberPod(j *v1alpha1.Job, r *ledger.Reservation, m ledger.Member) *corev1.Pod {
	t := j.Spec.Template.DeepCopy()
	idx := strconv.Itoa(int(m.Index))
	epoch := strconv.FormatInt(r.Epoch, 10)
	labels := map[string]string{}
	for k, v := range t.Labels {
		labels[k] = v
	}
	labels[LabelJob], labels[LabelMember], labels[LabelEpoch] = j.Name, idx, epoch
	ann := map[string]string{}
	for k, v := range t.Annotations {
		ann[k] = v
	}
	ann[AnnotationEpoch], ann[AnnotationGangSize] = epoch, strconv.Itoa(len(r.Members))
	ann[AnnotationTargetNode] = m.Node
	if r.Level != "" {
		ann[AnnotationTargetLevel] = r.Level
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: PodName(j.Name, r.Epoch, m.Index), Namespace: d.cfg.Namespace,
			Labels: labels, Annotations: ann},
		Spec: t.Spec,
	}
	p.Spec.NodeName = m.VirtualNode
	p.Spec.Tolerations = append(p.Spec.Tolerations, corev1.Toleration{Key: TaintVirtual,
		Operator: corev1.TolerationOpExists})
	if p.Spec.RestartPolicy == "" {
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
	}
	env := []corev1.EnvVar{
		{Name: "SHOAL_JOB", Value: j.Name},
		{Name: "SHOAL_GANG_SIZE", Value: strconv.Itoa(len(r.Members))},
		{Name: "SHOAL_MEMBER_INDEX", Value: idx},
		{Name: "SHOAL_EPOCH", Value: epoch},
	}
	if len(r.Clusters) == 1 {
		p.Spec.Hostname, p.Spec.Subdomain = hostname(j.Name, m.Index), j.Name
		env = append(env,
			corev1.EnvVar{Name: "MASTER_ADDR", Value: hostname(j.Name, 0) + "." + j.Name},
			corev1.EnvVar{Name: "WORLD_SIZE", Value: strconv.Itoa(len(r.Members))},
			corev1.EnvVar{Name: "RANK", Value: idx})
	}
	for i := range p.Spec.Containers {
		p.Spec.Containers[i].Env = append(p.Spec.Containers[i].Env, env...)
	}
	return p
}

// headlessService is the job's rendezvous Service (single-cluster gangs).
func (d *Dispatcher) headlessService(j *v1alpha1.Job) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: j.Name, Namespace: d.cfg.Namespace, Labels: map[string]string{LabelJob: j.Name}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{LabelJob: j.Name},
			PublishNotReadyAddresses: true},
	}
}

// memberState is what the dispatcher reads from a hub pod.
type memberState int

const (
	memberWaiting memberState = iota
	memberPrepared
	memberUnprepared // the agent reported it cannot prepare
	memberRunning
	memberSucceeded
	memberFailed
)

// stateOf classifies a hub pod.
func stateOf(p *corev1.Pod) (memberState, string) {
	switch p.Status.Phase {
	case corev1.PodSucceeded:
		return memberSucceeded, ""
	case corev1.PodFailed:
		return memberFailed, fmt.Sprintf("member %s failed: %s %s", p.Name, p.Status.Reason, p.Status.Message)
	case corev1.PodRunning:
		return memberRunning, ""
	}
	for _, c := range p.Status.Conditions {
		if c.Type != ConditionPrepared {
			continue
		}
		switch c.Status {
		case corev1.ConditionTrue:
			return memberPrepared, ""
		case corev1.ConditionFalse:
			return memberUnprepared, fmt.Sprintf("member %s could not prepare on %s: %s %s",
				p.Name, p.Annotations[AnnotationTargetNode], c.Reason, c.Message)
		}
	}
	return memberWaiting, ""
}

// epochOf returns the epoch label of a hub pod (0 when unparsable).
func epochOf(p *corev1.Pod) int64 {
	e, _ := strconv.ParseInt(p.Labels[LabelEpoch], 10, 64)
	return e
}
