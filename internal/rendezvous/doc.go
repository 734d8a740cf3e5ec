// SPDX-License-Identifier: Apache-2.0

// Package rendezvous is the logic of shoal-rendezvous, the test program that
// checks a gang's rendezvous contract the way a distributed training job uses
// it: every member reads MASTER_ADDR, MASTER_PORT, WORLD_SIZE and RANK (and the
// torchrun/Kubeflow aliases) from its environment, the member that holds rank
// 0 listens on MASTER_PORT, every member connects to MASTER_ADDR:MASTER_PORT,
// and once the master has seen every rank of the world it sends the whole
// world to every member, which prints it.
//
// One process runs per member (pod). A member holds LOCAL_WORLD_SIZE
// consecutive ranks starting at RANK (its processes), so WORLD_SIZE =
// members × LOCAL_WORLD_SIZE and RANK = NODE_RANK × LOCAL_WORLD_SIZE; one
// connection carries all of a member's ranks.
//
// The wire protocol is JSON lines over TCP: a member sends one Hello line;
// the master answers with one Reply line, carrying either the world or the
// error that ended the rendezvous, and closes the connection.
package rendezvous
