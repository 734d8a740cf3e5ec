// SPDX-License-Identifier: Apache-2.0

package placement

import (
	"slices"
	"unique"

	"github.com/shoal-dev/shoal/federation/inventory"
)

// cycle is the state of one Schedule call.
type cycle struct {
	s         *Snapshot
	in        *Input
	pending   []*Gang // in's pending gangs (pendingRefs)
	cfg       config
	qt        *queueTree
	res       []resv
	resByGang map[string]int32
	resIDs    idFilter // resByGang's gangs, ever (a first test before a lookup)
	held      int      // GPUs of the domains held
	total     int
	headSeen  map[string]bool
	gen       uint64          // this cycle's Snapshot.cycles: allocation.placedIn of the gangs it places
	waiting   map[string]bool // preemptors with victims still terminating
	preempted int
	attempts  int
	blocked   bool
	victims   []victim            // the preemptible running gangs, cheapest first (preemptible)
	vnodes    []vnode             // their nodes (victim.lo, hi)
	chosen    int                 // victims chosen so far
	candCache map[int32]candMemo  // candidates by preemptor priority
	uses      map[usesKey][]usage // candidateUses cache
	admits    map[unique.Handle[admitKey]]admitMemo
	at        []int32 // decide's buffer of a placement's nodes
	fails     map[failKey]failMemo
	filters   map[filterKeyT]filters // request's resolved filters
	d         Decision
}

// admitKey and admitMemo remember a quota answer of decide (admitAny over a
// gang's candidate usages) while the queue tree's version stays the same:
// admitAny reads nothing else that changes within a cycle.
type admitKey struct {
	queue string
	uses  usesKey // candidateUses key
	gpus  int
}

type admitMemo struct {
	version uint64
	why     *Unschedulable // nil: admitted
}

// admitAny is c.qt.admitAny over g's candidate usages, remembered while
// the tree does not change; each refusal returned is a fresh copy.
func (c *cycle) admitAny(g *Gang, cls *classMemo) *Unschedulable {
	var k unique.Handle[admitKey]
	if cls != nil {
		k = cls.admit
	} else {
		k = unique.Make(admitKey{g.Queue, usesKeyOf(g), g.GPUs()})
	}
	m, ok := c.admits[k]
	if !ok || m.version != c.qt.version {
		why := c.qt.admitAny(g.Queue, c.candidateUses(g), k.Value().gpus) // may add the queue: read the version after
		m = admitMemo{c.qt.version, why}
		c.admits[k] = m
	}
	if m.why == nil {
		return nil
	}
	why := *m.why
	return &why
}

// resv is a reservation active in this cycle.
type resv struct {
	gang  string
	level int
	dom   int32
	nodes []int32
	live  bool
}

// Schedule runs one scheduling cycle: it orders the pending gangs, places
// every gang that fits (booking it in s), preempts for gangs that outrank
// running ones, and holds domains for big gangs at the head of their queue
// so that smaller gangs backfill around them without starving them.
func Schedule(s *Snapshot, in Input, opts ...Option) Decision {
	cfg := defaults()
	for _, o := range opts {
		o(&cfg)
	}
	c := &cycle{s: s, in: &in, cfg: cfg, resByGang: map[string]int32{}, headSeen: map[string]bool{},
		waiting: map[string]bool{}, uses: map[usesKey][]usage{},
		admits: map[unique.Handle[admitKey]]admitMemo{}, fails: map[failKey]failMemo{},
		candCache: map[int32]candMemo{}, filters: map[filterKeyT]filters{}}
	s.cycles++
	c.gen = s.cycles
	c.total, _ = s.GPUs()
	c.qt = newQueueTree(in.Queues, s.capacityByProduct())
	c.chargeRunning()
	term := make(map[string]string, len(in.Terminating))
	for v, p := range in.Terminating {
		term[v] = p
		c.waiting[p] = true
	}
	c.in.Terminating = term
	defer s.clearHolds()
	c.pending = pendingRefs(c.in, &s.scratch.refs)
	c.restoreReservations()
	order := sortPending(c.pending, cfg.order, &s.scratch.order)
	if cfg.order == OrderFIFO {
		for _, g := range order {
			c.decide(g)
		}
	} else {
		c.fairShare(order)
	}
	for _, r := range c.res {
		if r.live {
			res := Reservation{Gang: r.gang, Level: levelNames[r.level], Domain: s.levels[r.level][r.dom].name}
			for _, i := range r.nodes {
				res.Nodes = append(res.Nodes, s.clusters[s.nodes[i].cluster].name+"/"+s.nodeNames[i])
			}
			c.d.Reservations = append(c.d.Reservations, res)
		}
	}
	return c.d
}

// chargeRunning charges every running gang to its queue and sets usage.
// The snapshot keeps the running gangs' GPUs summed by queue, MIG resource
// and node class (sumRunning), so the tree is charged once per sum, not
// once per gang or node.
func (c *cycle) chargeRunning() {
	use := usage{}
	for _, al := range c.s.offAllocs {
		clear(use)
		c.s.addOffUse(use, al)
		c.qt.charge(al.Gang.Queue, nil, use)
	}
	for k, g := range c.s.runSums {
		clear(use)
		c.s.addUse(use, k.class, k.mig, g)
		p := c.s.classes[k.class].product
		for n := c.qt.get(k.queue); n != nil; n = n.parent {
			n.shareOK = false
			n.alloc[p] += g
			for key, g := range use {
				n.held[key] += g
			}
		}
	}
	for q, u := range c.in.Usage {
		for n := c.qt.get(q); n != nil; n = n.parent {
			n.shareOK = false
			n.usage += u
		}
	}
}

// decide places one gang or says why it waits.
func (c *cycle) decide(g *Gang) {
	if c.cfg.strict && c.blocked {
		c.wait(g, &Unschedulable{ReasonBlocked, "a gang ahead in FIFO order does not fit yet"})
		return
	}
	if err := validate(g); err != nil {
		c.wait(g, &Unschedulable{ReasonNoMatchingNodes, err.Error()})
		return
	}
	var cls *classMemo
	if m, ok := classOf(g); ok {
		cls = &m
	}
	if why := c.admitAny(g, cls); why != nil {
		c.wait(g, why) // no product it accepts is within quota: hold and preempt nothing
		return
	}
	var rid int32
	hasRes := false
	if len(c.resByGang) > 0 && c.resIDs.mayHold(g.ID) { // most gangs hold none: no lookup by ID per gang
		rid, hasRes = c.resByGang[g.ID]
	}
	key, memo := c.waitKey(g, hasRes, cls)
	if memo {
		if m, ok := c.fails[key]; ok && m.version == c.s.version {
			// Nothing a placement reads changed since a gang of the same
			// class did not fit: neither does g, for the same reason (the
			// class's explanation, shared: Wait.Why is read only).
			memoHits.Add(1)
			c.waitFor(g, nil, rid, hasRes, m.why)
			return
		}
	}
	r := c.request(g, rid, hasRes)
	picks, level, dom, ok := c.s.place(r)
	if ok {
		use := c.s.useOf(g, picks)
		if why := c.qt.admit(g.Queue, use, 1); why != nil {
			c.wait(g, why)
			return
		}
		p := c.s.placement(g, picks, level, dom, len(r.roles) > 0)
		var at []int32 // the assignments' nodes, so that Assume need not find them by name
		if len(r.roles) == 0 && len(g.Roles) == 0 && c.s.uniqueNames {
			c.at = append(c.at[:0], c.s.scratch.assigned...)
			at = c.at
		}
		// Taken before MinDomains places again into the scratch picks.
		var byProduct map[string]int
		if len(g.Roles) == 0 {
			byProduct = c.s.gpusByProduct(g, picks)
		} else {
			byProduct = c.s.roleGPUsByProduct(g, picks)
		}
		if c.cfg.quality {
			p.Quality = &Quality{
				NVLinkDomains: c.s.DomainsUsed(p, inventory.LevelNVLink), MinNVLinkDomains: c.s.MinDomains(*g, inventory.LevelNVLink),
				Racks: c.s.DomainsUsed(p, inventory.LevelRack), MinRacks: c.s.MinDomains(*g, inventory.LevelRack),
			}
		}
		al, err := c.s.assume(*g, p, c.in.Now, at)
		if err != nil {
			c.wait(g, &Unschedulable{ReasonFragmented, err.Error()})
			return
		}
		c.qt.charge(g.Queue, byProduct, use)
		al.placedIn = c.gen
		if hasRes {
			c.drop(rid)
		}
		c.d.Placements = append(c.d.Placements, p)
		return
	}
	why := &Unschedulable{Reason: ReasonInsufficientGPUs, Message: "does not fit now"}
	if !c.cfg.terse {
		why = c.s.why(r)
	}
	if memo {
		c.fails[key] = failMemo{c.s.version, why}
	}
	c.waitFor(g, r, rid, hasRes, why)
}

// request prepares g for a decision in this cycle. The filters of a gang
// whose filters are only products and sharing (filterKey) are resolved
// once per cycle for all gangs with the same: they read nothing else of
// the gang, and nothing that changes within a cycle (the clusters' labels
// and the node classes).
func (c *cycle) request(g *Gang, rid int32, hasRes bool) *request {
	var r *request
	if k, ok := filterKey(g); !ok || !memoWaits {
		r = c.s.newRequest(g, c.cfg.place)
	} else if f, ok := c.filters[k]; ok {
		r = c.s.requestOf(g, c.cfg.place)
		r.clusterOK, r.classOK, r.fit = f.clusterOK, f.classOK, f.fit
	} else {
		r = c.s.newRequest(g, c.cfg.place)
		c.filters[k] = filters{slices.Clone(r.clusterOK), slices.Clone(r.classOK), slices.Clone(r.fit)}
	}
	if hasRes {
		r.holder = rid
	}
	if g.Estimate > 0 {
		r.endsAt = c.in.Now.Add(g.Estimate).UnixNano()
	}
	return r
}

// waitFor leaves g waiting for why, after a preemption or a reservation
// for it where it may have one. r is g's request, or nil when it did not
// need one to know that g does not fit (it is then prepared again only for
// a preemption search or a reservation).
func (c *cycle) waitFor(g *Gang, r *request, rid int32, hasRes bool, why *Unschedulable) {
	req := func() *request {
		if r == nil {
			r = c.request(g, rid, hasRes)
		}
		return r
	}
	c.blocked = true
	head := !c.headSeen[g.Queue]
	c.headSeen[g.Queue] = true
	switch {
	case len(c.waiting) > 0 && c.waiting[g.ID]:
		why = &Unschedulable{ReasonPreempting, "waiting for preempted gangs to leave; " + why.Message}
	case c.cfg.preemption && c.preempted < c.cfg.maxPreemptors && c.attempts < 4*c.cfg.maxPreemptors && !c.young(g) &&
		c.preempt(g, req()):
		why = &Unschedulable{ReasonPreempting, "preempting lower-priority gangs; " + why.Message}
	case !hasRes && head && c.cfg.maxReservations > 0:
		c.reserve(g, req())
	}
	c.wait(g, why)
}

func (c *cycle) wait(g *Gang, why *Unschedulable) {
	if c.d.Waiting == nil {
		if n := len(c.pending) - len(c.d.Placements); cap(c.in.WaitBuffer) >= n {
			c.d.Waiting = c.in.WaitBuffer[:0]
		} else {
			c.d.Waiting = make([]Wait, 0, n) // room for every gang left
		}
	}
	c.d.Waiting = append(c.d.Waiting, Wait{Gang: g.ID, Ref: g.Ref, Why: why})
}

// fairShare walks priority bands; within a band it repeatedly takes the
// next gang of the queue with the lowest weighted share, descending the tree.
func (c *cycle) fairShare(order []*Gang) {
	for lo := 0; lo < len(order); {
		hi := lo
		for hi < len(order) && order[hi].Priority == order[lo].Priority {
			hi++
		}
		c.queueBand(order[lo:hi])
		for g := c.pick(); g != nil; g = c.pick() {
			c.decide(g)
		}
		lo = hi
	}
}

// queueBand puts a band's gangs in their queues' pending lists, in
// order. The lists are carved from one array the snapshot keeps from
// cycle to cycle (scratch.pend), each with room for exactly its queue's
// gangs of the band: at 35,000 waiting gangs, growing them anew each cycle
// was a tenth of what a cycle allocated. A band's lists are drained (pick)
// before the next band is queued.
func (c *cycle) queueBand(band []*Gang) {
	leaves := c.s.scratch.leaves[:0]
	leafOf := c.s.scratch.leafOf[:0] // each gang's queue, found once
	for _, g := range band {
		leaf := c.qt.get(g.Queue)
		leafOf = append(leafOf, leaf)
		if leaf.banded == 0 {
			leaves = append(leaves, leaf)
		}
		leaf.banded++
	}
	buf := c.s.scratch.pend
	if cap(buf) < len(band) {
		buf = make([]*Gang, len(band))
		c.s.scratch.pend = buf
	}
	buf = buf[:len(band)]
	at := 0
	for _, leaf := range leaves {
		leaf.pending = buf[at : at : at+leaf.banded]
		at += leaf.banded
		leaf.banded = 0
	}
	for i, g := range band {
		leaf := leafOf[i]
		leaf.pending = append(leaf.pending, g)
		for n := leaf; n != nil; n = n.parent {
			n.active++
		}
	}
	clear(leaves)
	clear(leafOf)
	c.s.scratch.leaves, c.s.scratch.leafOf = leaves[:0], leafOf[:0]
}

// pick takes the next gang: at each level the child (or the queue itself)
// with the lowest share that still has pending gangs.
func (c *cycle) pick() *Gang {
	n := c.qt.root
	if n.active == 0 {
		return nil
	}
	for {
		var best *qnode
		bestShare := 0.0
		for _, ch := range n.children {
			if ch.active == 0 {
				continue
			}
			if sh := c.qt.share(ch); best == nil || sh < bestShare {
				best, bestShare = ch, sh
			}
		}
		own := n.next < len(n.pending)
		if own && (best == nil || c.qt.share(n) <= bestShare) {
			g := n.pending[n.next]
			n.next++
			for x := n; x != nil; x = x.parent {
				x.active--
			}
			if n.next == len(n.pending) {
				n.pending, n.next = n.pending[:0], 0
			}
			return g
		}
		if best == nil {
			return nil
		}
		n = best
	}
}
