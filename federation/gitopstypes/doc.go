// Package gitopstypes declares the plain GitOps types the hub and the agent
// share: a cluster's Git source and the sync status the agent reports. It
// holds no logic beyond validation and small helpers, so both sides can
// import it without pulling in Git or Kubernetes clients.
package gitopstypes
