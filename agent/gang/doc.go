// Package gang is the agent's half of the hub's two-phase gang dispatch
// (docs/scheduling.md).
//
// Prepare: Mutate, installed as the pod syncer's pre-create hook, puts the
// scheduling gate shoal.dev/gang on the local pod of every gang member (a
// hub pod with the shoal.dev/epoch annotation) and refuses members of an
// epoch older than one already seen for the same job. Run watches the gated
// local pods, checks that each fits on its target node (free GPUs there,
// counting the other prepared members that target it) and reports the pod
// condition shoal.dev/Prepared, True or False with a reason; the condition
// flows back to the hub pod with the rest of the status.
//
// Commit: when the hub stamps shoal.dev/commit=<epoch> on the hub pod,
// Commit lifts the gate on the local pod and the cluster's kube-scheduler
// binds it. A member already committed when the agent first sees it (an
// agent restart) is created without a gate.
package gang
