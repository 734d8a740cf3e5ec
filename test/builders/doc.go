// SPDX-License-Identifier: Apache-2.0

// Package builders holds the shared fluent builders of Shoal's tests, in the
// style of kueue's pkg/util/testing wrappers: every test builds its Jobs,
// Queues, Nodes and Pods through them instead of a private helper.
//
//	j := testjob.New("a").Queue("q").Members(4).GPUs(8).Obj()
//	q := testqueue.New("org/team").Weight(2).Quota("h100", 64).Obj()
//	n := testnode.New("n1").GPUs(8).Label(k, v).Obj()
//	p := testpod.New("p").Node("n1").GPUs(4).Running().Obj()
//
// Builders only use apis and Kubernetes types, so the tests of any package
// (federation and apis included) may import them.
package builders
