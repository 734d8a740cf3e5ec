// SPDX-License-Identifier: Apache-2.0

package vnode

import (
	"time"

	"golang.org/x/time/rate"
	"k8s.io/client-go/util/workqueue"
)

// Pod controller queue limits. virtual-kubelet's default (client-go's
// controller rate limiter) shares one 10/s bucket with a burst of 100 among
// all pods of a node, and every create, commit and status change of every
// member passes through it: a 64-member gang (about five status changes
// per member) drained it and its last members waited seconds to be
// reported. The bucket here is sized for gangs of hundreds; the API
// clients' QPS still bounds the writes. Failed items back off per item.
const (
	queueQPS        = 1000
	queueBurst      = 2000
	queueRetryBase  = 5 * time.Millisecond
	queueRetryLimit = 30 * time.Second
)

// queueRateLimiter returns a fresh limiter for one pod controller queue.
func queueRateLimiter() workqueue.TypedRateLimiter[any] {
	return workqueue.NewTypedMaxOfRateLimiter(
		workqueue.NewTypedItemExponentialFailureRateLimiter[any](queueRetryBase, queueRetryLimit),
		&workqueue.TypedBucketRateLimiter[any]{Limiter: rate.NewLimiter(rate.Limit(queueQPS), queueBurst)},
	)
}
