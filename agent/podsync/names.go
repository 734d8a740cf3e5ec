package podsync

// Labels and annotations the syncer reads and writes.
const (
	// LabelManaged marks namespaces and pods the agent manages.
	LabelManaged = "shoal.dev/managed"
	// LabelVirtual and TaintVirtual mark the virtual nodes.
	LabelVirtual = "shoal.dev/virtual"
	// AnnotationHubUID is the UID of a local pod's hub pod.
	AnnotationHubUID = "shoal.dev/hub-uid"
	// AnnotationVirtualNode is the virtual node the hub pod is bound to.
	AnnotationVirtualNode = "shoal.dev/virtual-node"
	// AnnotationTargetNode names the local node the hub placed the pod on.
	AnnotationTargetNode = "shoal.dev/target-node"
	// AnnotationTargetDomain names the topology domain the hub placed the pod in.
	AnnotationTargetDomain = "shoal.dev/target-domain"
	// AnnotationTargetLevel is the level of the target domain.
	AnnotationTargetLevel = "shoal.dev/target-level"
	// ReasonLocalPodDeleted is the hub pod's status reason when its local pod
	// was deleted by someone else than the agent.
	ReasonLocalPodDeleted = "LocalPodDeleted"
	// ReasonDeleted is the terminated reason of containers of a pod deleted on the hub.
	ReasonDeleted = "DeletedOnHub"
	// LabelClique is the GFD label of the NVLink clique.
	LabelClique = "nvidia.com/gpu.clique"
)
