// SPDX-License-Identifier: Apache-2.0

// Package registry owns the hub's records of workload clusters: join tokens,
// registration (signing the agent's certificate), heartbeats, the latest
// inventory report of each cluster, cluster liveness (Ready, NotReady, Lost),
// cordon and removal, and the GitOps parts of a cluster (the source an admin
// sets, the status the agent reports, the commit a rollout pins). It is the
// only writer of the "clusters", "clusterleases", "clusteruids",
// "clusternames", "inventories" and "jointokens" kinds of the store.
//
// # Cluster names
//
// A cluster name is a DNS label of at most 20 characters that does not
// overlap another cluster's ("a" and "a-b" cannot both register: the node
// prefix shoal-a- would cover both). The registered names form one record,
// written in the registration and removal transactions.
//
// # Join tokens
//
// A token is "<id>.<secret>" (6 and 16 characters of [a-z0-9], like
// kubeadm). The JoinToken record is stored under its id and keeps only the
// SHA-256 of the secret. Register refuses an unknown, wrong, expired, revoked
// or used-up token, and consumes one use in the same etcd transaction that
// creates the Cluster record and the cluster-UID index entry, so concurrent
// registrations can never use a token more often than it allows nor register
// one cluster UID or name twice.
//
// # Agent certificates
//
// The Cluster record carries the serial of the agent certificate signed at
// registration (annotation shoal.dev/agent-certificate-serial). An agent call
// is authorized only while its certificate is the current one of a
// registered cluster: removing the cluster, or registering it again, revokes
// the old certificate at once, without a revocation list that grows forever.
//
// # Inventory ordering
//
// Reports carry (session ID, generation). The agent picks a random session ID
// at start and numbers reports from 1. A report of the held session is
// accepted only when its generation is newer; a report of another session
// replaces the held one (the agent restarted). An empty session ID is treated
// as a session of its own.
//
// Inventories are stored gzipped (a 5,000-node inventory is ~950 KB of JSON,
// ~25 KB gzipped), so large clusters stay under etcd's request size limit.
//
// # GitOps
//
// SetGitOpsSource validates a source (as the agent will, and refusing a URL
// that carries credentials: the hub never holds them; a source names a
// Secret in the workload cluster) and drops a rollout pin.
// ReportGitOpsStatus stores an agent's report (unchanged reports write
// nothing for a minute) and answers with the source to sync: the cluster's
// source with the defaults filled in and, while a rollout pins the cluster,
// Ref.Commit set to the pinned commit. hub/rollout asks for pins with
// PinGitOps.
//
// # Liveness
//
// Heartbeats set status.lastHeartbeat. Run re-evaluates every cluster on an
// interval: silent for longer than the grace → NotReady; longer than the
// fence timeout → Lost. The clock is injected (k8s.io/utils/clock).
//
// A heartbeat renews the cluster's Lease (lease.go) and rewrites the
// Cluster record only when something else in it changes or its copy of
// the times is half the grace old; readers of the times apply the lease
// (Lease.Apply), and every write that evaluates the state is guarded by
// the lease's revision as well as the record's.
//
// # Drains
//
// Drain (spec.drain, cordoned too) and DrainNode (spec.drainedNodes) ask
// for gangs to be moved; hub/dispatch moves them and hub/scheduler keeps
// new ones off. Each sweep sets the Drained condition from the ledger's
// reservations still on the drained cluster or nodes (False naming them,
// True when none is left); a drained cluster with none left is Cordoned,
// reason Drained. Cordon(false) ends a cluster drain.
package registry
