// Shoal fleet view: the pages. Each view returns the page's element from
// the fleet state; app.js renders the current one after every change.
'use strict';

function cond(conds, type) { return (conds || []).find((c) => c.type === type); }

function sortedJobs() {
  return [...fleet.jobs.values()].sort((a, b) =>
    String((b.status || {}).submitTime || '').localeCompare(String((a.status || {}).submitTime || '')) ||
    a.metadata.name.localeCompare(b.metadata.name));
}

function jobLink(name) { return h('a', {href: '#/jobs/' + encodeURIComponent(name)}, name); }

function section(title, ...kids) { return h('section', {}, h('h2', {}, title), kids); }

// ---- clusters ----

function viewClusters() {
  const cs = [...fleet.clusters.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  let gpus = 0, free = 0;
  const rows = cs.map((c) => {
    const st = c.status || {}, inv = st.inventory || {};
    gpus += inv.gpus || 0; free += inv.freeGPUs || 0;
    const ready = cond(st.conditions, 'Ready');
    const beat = st.lastHeartbeat;
    const stale = beat && Date.now() - Date.parse(beat) > 30000;
    const products = Object.entries(inv.products || {}).map(([p, n]) => n + '× ' + p).join(', ');
    return h('tr', {'data-cluster': c.metadata.name},
      h('td', {'data-field': 'name'}, h('b', {}, c.metadata.name)),
      h('td', {'data-field': 'state'}, badge(st.state || 'Pending')),
      h('td', {'data-field': 'ready', title: ready ? ready.message : ''},
        ready ? [badge(ready.status, ready.status === 'True' ? 'ok' : 'bad'), ' ', ready.reason] : '—'),
      h('td', {'data-field': 'heartbeat', class: stale ? 'warn' : ''}, since(beat), beat ? ' ago' : ''),
      h('td', {'data-field': 'gpus', class: 'n'}, inv.gpus || 0),
      h('td', {'data-field': 'free', class: 'n'}, inv.freeGPUs || 0),
      h('td', {'data-field': 'unhealthy', class: 'n'}, inv.unhealthyGPUs || 0),
      h('td', {'data-field': 'nodes', class: 'n'}, inv.nodes || 0),
      h('td', {}, products || '—'),
      h('td', {}, st.agentVersion || '—'),
      h('td', {class: 'conds'}, (st.conditions || []).map((x) =>
        h('span', {class: 'chip ' + (x.status === 'True' ? 'ok' : x.status === 'False' ? 'bad' : ''),
          title: (x.reason || '') + ': ' + (x.message || '')}, x.type))));
  });
  return section('Clusters',
    h('p', {class: 'summary'}, cs.length + ' clusters, ', h('b', {'data-total': 'gpus'}, gpus), ' GPUs, ',
      h('b', {'data-total': 'free'}, free), ' free'),
    table({id: 'clusters'}, ['Cluster', 'State', 'Ready', 'Heartbeat', 'GPUs', 'Free', 'Unhealthy', 'Nodes',
      'Products', 'Agent', 'Conditions'], rows));
}

// ---- GPU map ----

function viewGPUs() {
  const booked = bookedByNode(fleet.jobs.values());
  const legend = h('p', {class: 'legend'}, GPU_STATES.map((s) => [h('i', {class: 'gpu ' + s}), ' ' + s + ' ']));
  const cs = [...fleet.clusters.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  return section('GPU map', legend, cs.map((c) => {
    const name = c.metadata.name, inv = fleet.inventories.get(name);
    if (!inv) return h('div', {class: 'cluster-map', 'data-cluster': name}, h('h3', {}, name), h('p', {class: 'muted'}, 'no inventory yet'));
    const sums = clusterStates(inv, c, booked);
    const total = GPU_STATES.reduce((n, s) => n + sums[s], 0);
    return h('div', {class: 'cluster-map', 'data-cluster': name, 'data-gpus': total},
      h('h3', {}, name, ' ', badge((c.status || {}).state || 'Pending'), ' ',
        h('span', {class: 'muted'}, total + ' GPUs: ',
          GPU_STATES.filter((s) => sums[s]).map((s) => h('span', {'data-state': s}, sums[s] + ' ' + s)).map((e, i) => i ? [', ', e] : e))),
      renderTopology(topology(inv.nodes || []), c, booked));
  }));
}

function renderTopology(blocks, cluster, booked) {
  const boxes = [];
  for (const [block, racks] of blocks) {
    const inner = [];
    for (const [rack, domains] of racks) {
      const rackKids = [];
      for (const [nv, nodes] of domains) {
        const ns = [...nodes.values()].map((n) => renderNode(n, cluster, booked));
        rackKids.push(nv ? h('div', {class: 'box nvlink'}, h('span', {class: 'lbl'}, 'NVLink ' + nv), ns) : ns);
      }
      inner.push(rack ? h('div', {class: 'box rack'}, h('span', {class: 'lbl'}, 'rack ' + rack), rackKids) : rackKids);
    }
    boxes.push(block ? h('div', {class: 'box block'}, h('span', {class: 'lbl'}, 'block ' + block), inner) : inner);
  }
  return h('div', {class: 'topo'}, boxes);
}

function renderNode(n, cluster, booked) {
  const s = nodeStates(n, cluster, booked.get(cluster.metadata.name + '/' + n.name));
  const cells = [];
  GPU_STATES.forEach((st) => { for (let i = 0; i < s[st]; i++) cells.push(h('i', {class: 'gpu ' + st, title: st})); });
  const attrs = {class: 'box node', 'data-node': n.name,
    title: [n.name, n.product, n.ready ? 'Ready' : 'NotReady', n.unschedulable ? 'cordoned' : ''].filter(Boolean).join(' · ')};
  GPU_STATES.forEach((st) => { attrs['data-' + st] = s[st]; });
  const mig = Object.entries(n.mig || {}).map(([r, m]) => h('div', {class: 'mig'}, r.replace('nvidia.com/', '') + ' ' + (m.used || 0) + '/' + m.allocatable));
  return h('div', attrs, h('span', {class: 'lbl'}, n.name), h('div', {class: 'cells'}, cells), mig);
}

// ---- queues ----

function viewQueues() {
  const qs = [...fleet.queues.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const rows = [];
  for (const q of qs) {
    const name = q.metadata.name, spec = q.spec || {}, st = q.status || {};
    const classes = [...new Set([...Object.keys(spec.quotas || {}), ...Object.keys(st.usedGPUs || {})])].sort();
    const depth = name.split('/').length - 1;
    (classes.length ? classes : ['']).forEach((cls, i) => {
      const quota = (spec.quotas || {})[cls], used = (st.usedGPUs || {})[cls] || 0;
      const nominal = quota ? quota.nominal || 0 : null;
      const limit = quota && quota.borrowingLimit !== undefined ? quota.borrowingLimit : null;
      rows.push(h('tr', {'data-queue': name, 'data-class': cls},
        h('td', {class: 'depth' + depth}, i ? '' : name),
        h('td', {class: 'n'}, i ? '' : (spec.weight || 1)),
        h('td', {'data-field': 'class'}, cls || '—'),
        h('td', {class: 'n', 'data-field': 'nominal'}, nominal === null ? '—' : nominal),
        h('td', {class: 'n', 'data-field': 'borrowingLimit'}, quota ? (limit === null ? 'unlimited' : limit) : '—'),
        h('td', {class: 'n', 'data-field': 'used'}, used),
        h('td', {class: 'n', 'data-field': 'borrowed'}, (st.borrowedGPUs || {})[cls] || 0),
        h('td', {}, useBar(used, nominal)),
        h('td', {class: 'n', 'data-field': 'pending'}, i ? '' : (st.pendingJobs || 0)),
        h('td', {class: 'n', 'data-field': 'active'}, i ? '' : (st.activeJobs || 0))));
    });
  }
  return section('Queues', table({id: 'queues'}, ['Queue', 'Weight', 'GPU class', 'Nominal', 'Borrowing limit',
    'Used', 'Borrowed', 'Use of nominal', 'Pending jobs', 'Active jobs'], rows));
}

function useBar(used, nominal) {
  if (!nominal) return used ? h('span', {class: 'muted'}, 'borrowing') : '';
  const pct = Math.round(100 * used / nominal);
  return h('span', {class: 'bar', title: pct + '% of nominal'},
    h('span', {class: 'fill' + (pct > 100 ? ' over' : ''), 'data-pct': Math.min(pct, 100)}), h('span', {class: 'pct'}, pct + '%'));
}

// ---- GPU pools ----

function viewPools() {
  const ps = [...fleet.pools.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const rows = ps.map((p) => {
    const spec = p.spec || {}, st = p.status || {};
    const state = spec.drain ? 'Draining' : spec.cordoned ? 'Cordoned' : 'Open';
    const chooses = [(spec.gpuProducts || []).join(', '), (spec.nodePools || []).map((n) => 'node pool ' + n).join(', ')]
      .filter(Boolean).join('; ');
    return h('tr', {'data-pool': p.metadata.name},
      h('td', {'data-field': 'name'}, h('b', {}, p.metadata.name)),
      h('td', {'data-field': 'state'}, badge(state, state === 'Open' ? 'ok' : 'warn'), spec.scaleToZero ? [' ', badge('scale to zero', 'info')] : ''),
      h('td', {}, chooses || 'any GPU'),
      h('td', {'data-field': 'clusters'}, (st.clusters || []).join(', ') || '—'),
      h('td', {class: 'n', 'data-field': 'nodes'}, st.nodes || 0),
      h('td', {class: 'n', 'data-field': 'gpus'}, st.gpus || 0),
      h('td', {class: 'n', 'data-field': 'used'}, st.usedGPUs || 0),
      h('td', {class: 'n', 'data-field': 'free'}, st.freeGPUs || 0),
      h('td', {class: 'n', 'data-field': 'idle', title: (st.idleNodes || []).map((n) => n.cluster + '/' + n.node).join(' ')},
        spec.scaleToZero ? (st.idleNodes || []).length : '—'),
      h('td', {'data-field': 'queues'}, (st.queues || []).join(', ') || '—'),
      h('td', {}, since(st.updateTime)));
  });
  return section('GPU pools', table({id: 'pools'}, ['Pool', 'State', 'Chooses', 'Clusters', 'Nodes', 'GPUs', 'Used',
    'Free', 'Idle nodes', 'Queues', 'Updated'], rows));
}

// ---- inference services ----

function viewServices() {
  const ss = [...fleet.services.values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
  const rows = [];
  for (const s of ss) {
    const spec = s.spec || {}, st = s.status || {}, reps = spec.replicas || {}, ro = st.rollout;
    const model = ro && ro.phase === 'Progressing' ? (ro.from || st.model) + ' → ' + ro.to : st.model || spec.model;
    const eps = st.endpoints || [];
    rows.push(h('tr', {'data-service': s.metadata.name},
      h('td', {'data-field': 'name'}, h('b', {}, s.metadata.name)),
      h('td', {}, spec.queue),
      h('td', {'data-field': 'model'}, model),
      h('td', {class: 'n', 'data-field': 'ready'}, (st.readyReplicas || 0) + '/' + (st.replicas || 0)),
      h('td', {class: 'n', 'data-field': 'desired'}, st.desiredReplicas || 0),
      h('td', {class: 'n'}, (reps.min || 0) + '–' + (reps.max || reps.min || 0)),
      h('td', {class: 'n', 'data-field': 'load', title: ((st.load || {}).sources || []).map((x) => x.source + ': ' + x.value).join(', ')},
        st.load ? st.load.value : '—'),
      h('td', {'data-field': 'rollout'}, ro ? [badge(ro.phase, ro.phase === 'RolledBack' ? 'bad' : 'info'), ' ', ro.to] : '—'),
      h('td', {'data-field': 'clusters'}, [...new Set(eps.map((e) => e.cluster).filter(Boolean))].sort().join(', ') || '—')));
    for (const e of eps) {
      rows.push(h('tr', {class: 'endpoint', 'data-endpoint': e.replica, 'data-service-of': s.metadata.name},
        h('td', {}, '↳ ', jobLink(e.replica)), h('td', {}, e.cluster || ''),
        h('td', {}, e.model), h('td', {'data-field': 'ready'}, badge(e.ready ? 'Ready' : 'NotReady', e.ready ? 'ok' : 'warn')),
        h('td', {colspan: 5, 'data-field': 'address'}, e.address ? e.address + ':' + e.port : '—')));
    }
  }
  return section('Inference services', table({id: 'services'}, ['Service', 'Queue', 'Model', 'Ready', 'Desired', 'Min–max',
    'Load', 'Rollout', 'Clusters'], rows));
}

// ---- jobs ----

function jobRow(j) {
  const st = j.status || {}, ms = st.members || [];
  return h('tr', {'data-job': j.metadata.name},
    h('td', {}, jobLink(j.metadata.name)),
    h('td', {}, (j.spec || {}).queue),
    h('td', {'data-field': 'phase'}, badge(st.phase || 'Pending')),
    h('td', {}, st.owner || ''),
    h('td', {class: 'n'}, jobGPUs(j)),
    h('td', {class: 'n'}, ms.filter((m) => m.phase === 'Running').length + '/' + jobMembers(j)),
    h('td', {'data-field': 'clusters'}, [...new Set(ms.map((m) => m.cluster).filter(Boolean))].join(', ') || '—'),
    h('td', {}, since(st.submitTime)));
}

function viewJobs() {
  const js = sortedJobs();
  return section('Jobs', table({id: 'jobs'}, ['Job', 'Queue', 'Phase', 'Owner', 'GPUs', 'Running', 'Clusters', 'Age'], js.map(jobRow)));
}

function waitReason(j) {
  const st = j.status || {}, placed = cond(st.conditions, 'Placed');
  return {reason: (placed && placed.status === 'False' && placed.reason) || 'Pending',
    message: (placed && placed.message) || (st.placement && st.placement.explanation) || ''};
}

function viewWaiting() {
  const js = sortedJobs().filter((j) => ((j.status || {}).phase || 'Pending') === 'Pending');
  return section('Waiting jobs', table({id: 'waiting'}, ['Job', 'Queue', 'GPUs', 'Waiting', 'Reason', 'Scheduler says'],
    js.map((j) => {
      const w = waitReason(j);
      return h('tr', {'data-job': j.metadata.name},
        h('td', {}, jobLink(j.metadata.name)), h('td', {}, (j.spec || {}).queue),
        h('td', {class: 'n'}, jobGPUs(j)), h('td', {}, since((j.status || {}).submitTime)),
        h('td', {'data-field': 'reason'}, badge(w.reason, 'warn')), h('td', {'data-field': 'message', class: 'msg'}, w.message));
    })));
}

// ---- one job ----

// timeline is the job's steps through the two-phase dispatch, from its
// status timestamps and conditions: each step and when it was entered.
function timeline(j) {
  const st = j.status || {}, cs = st.conditions || [];
  const placed = cond(cs, 'Placed'), disp = cond(cs, 'Dispatched'), running = cond(cs, 'Running'), fin = cond(cs, 'Finished');
  const at = (c, ok) => (c && (!ok || c.status === 'True') ? c.lastTransitionTime : null);
  const steps = [
    {step: 'submitted', t: st.submitTime},
    {step: 'placed', t: at(placed, true) || (st.placement && st.placement.clusters ? st.placement.time : null)},
    {step: 'preparing', t: st.dispatch && st.dispatch.phase === 'Preparing' ? st.dispatch.time : null},
    {step: 'committed', t: disp && disp.reason === 'Committed' ? disp.lastTransitionTime : null},
    {step: 'running', t: st.startTime || at(running, true)},
    {step: 'finished', t: st.completionTime || at(fin, true)},
  ];
  if (!steps[2].t && steps[1].t && (steps[3].t || steps[4].t)) {
    // Only the latest dispatch decision keeps its time: the prepare began
    // with the booking (the dispatcher decides Preparing right after it).
    Object.assign(steps[2], {t: steps[1].t, inferred: true});
  }
  return steps;
}

// SEGMENT names the time from a step to the next one.
const SEGMENT = {submitted: 'queued', placed: 'booked', preparing: 'preparing', committed: 'starting',
  running: 'running', finished: 'finished'};

function renderTimeline(j) {
  const steps = timeline(j).filter((s) => s.t);
  const end = steps.length && steps[steps.length - 1].step === 'finished' ? Date.parse(steps[steps.length - 1].t) : Date.now();
  const start = steps.length ? Date.parse(steps[0].t) : end;
  const span = Math.max(end - start, 1);
  return h('div', {class: 'timeline', id: 'timeline'},
    h('div', {class: 'track'}, steps.map((s, i) => {
      const t0 = Date.parse(s.t), t1 = i + 1 < steps.length ? Date.parse(steps[i + 1].t) : end;
      return h('span', {class: 'seg ' + s.step, 'data-step': s.step, 'data-pct': Math.max(2, Math.round(100 * (t1 - t0) / span)),
        title: s.step + ' at ' + s.t + ' for ' + age(t1 - t0)}, SEGMENT[s.step] + ' ' + age(t1 - t0));
    })),
    h('ol', {class: 'steps'}, steps.map((s, i) => h('li', {'data-step': s.step}, h('b', {}, s.step), ' ',
      s.inferred ? 'with the booking' : [new Date(s.t).toLocaleTimeString(),
        i ? ' (+' + age(Date.parse(s.t) - Date.parse(steps[i - 1].t)) + ')' : '']))));
}

function viewJob(name) {
  const j = fleet.jobs.get(name);
  if (!j) return section('Job ' + name, h('p', {class: 'muted'}, fleet.loaded.jobs ? 'no such job' : 'loading…'));
  const st = j.status || {}, spec = j.spec || {}, pl = st.placement || {};
  const w = waitReason(j);
  return h('section', {'data-job': name},
    h('h2', {}, 'Job ', name, ' ', badge(st.phase || 'Pending')),
    h('p', {class: 'summary'}, 'queue ', h('b', {}, spec.queue), ' · ', jobMembers(j), ' members · ', jobGPUs(j), ' GPUs',
      spec.priorityClass ? ' · ' + spec.priorityClass : '', ' · owner ', st.owner || '—', ' · epoch ', st.epoch || 0,
      ' · restarts ', st.restarts || 0),
    (st.phase || 'Pending') === 'Pending' ? h('p', {class: 'waiting'}, 'Waiting: ', h('b', {'data-field': 'reason'}, w.reason), ' ', w.message) : null,
    h('h3', {}, 'Timeline'), renderTimeline(j),
    h('h3', {}, 'Members'),
    table({id: 'members'}, ['#', 'Role', 'Cluster', 'Node', 'Domain', 'Phase'], (st.members || []).map((m) =>
      h('tr', {'data-member': m.index}, h('td', {class: 'n'}, m.index), h('td', {}, m.role || ''),
        h('td', {'data-field': 'cluster'}, m.cluster || ''), h('td', {}, m.node || ''), h('td', {}, m.domain || ''),
        h('td', {}, badge(m.phase || 'Pending'))))),
    h('h3', {}, 'Placement'),
    h('p', {}, pl.clusters ? ['on ', pl.clusters.join(', '), pl.domain ? ' in ' + pl.domain : '', '. '] : '', h('span', {class: 'msg'}, pl.explanation || '')),
    st.dispatch ? h('p', {}, 'Dispatch epoch ', st.dispatch.epoch, ': ', badge(st.dispatch.phase, 'info'), ' ',
      st.dispatch.reason || '', ' ', h('span', {class: 'msg'}, st.dispatch.message || '')) : null,
    h('h3', {}, 'Conditions'),
    table({id: 'conditions'}, ['Type', 'Status', 'Reason', 'Message', 'Since'], (st.conditions || []).map((c) =>
      h('tr', {}, h('td', {}, c.type), h('td', {}, badge(c.status, c.status === 'True' ? 'ok' : 'bad')),
        h('td', {}, c.reason), h('td', {class: 'msg'}, c.message), h('td', {}, since(c.lastTransitionTime))))));
}
