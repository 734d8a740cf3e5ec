package dispatch

// The dispatch protocol between the hub and the agents (docs/scheduling.md).
const (
	// LabelJob names the member's job on hub pods (and the headless Service).
	LabelJob = "shoal.dev/job"
	// LabelMember is the member's index in the gang.
	LabelMember = "shoal.dev/member"
	// LabelEpoch is the placement epoch the member belongs to.
	LabelEpoch = "shoal.dev/epoch"
	// AnnotationEpoch carries the epoch for agents (refusing stale ones).
	AnnotationEpoch = "shoal.dev/epoch"
	// AnnotationGangSize is the gang's member count.
	AnnotationGangSize = "shoal.dev/gang-size"
	// AnnotationTargetNode names the workload-cluster node the member targets.
	AnnotationTargetNode = "shoal.dev/target-node"
	// AnnotationTargetDomain and AnnotationTargetLevel name its topology domain.
	AnnotationTargetDomain = "shoal.dev/target-domain"
	AnnotationTargetLevel  = "shoal.dev/target-level"
	// AnnotationCommit, set to the epoch, tells the agent to lift the gate.
	AnnotationCommit = "shoal.dev/commit"
	// ConditionPrepared is the pod condition the agent reports: True when
	// the local pod exists behind its gate and fits; False with a reason
	// when it cannot.
	ConditionPrepared = "shoal.dev/Prepared"
	// TaintVirtual is the taint of the virtual nodes.
	TaintVirtual = "shoal.dev/virtual"
	// ConditionDispatched is the job condition recording the two-phase
	// decision: Unknown/Preparing, True/Committed, False/Aborting.
	ConditionDispatched = "Dispatched"
)

// Reasons of the Dispatched condition.
const (
	ReasonPreparing = "Preparing"
	ReasonCommitted = "Committed"
	ReasonAborting  = "Aborting"
)
