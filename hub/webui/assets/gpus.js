// Shoal fleet view: the GPU states of a node, as docs/metrics.md defines
// them for shoal_fleet_gpus, from the cluster's inventory report and the
// jobs' member placements.
'use strict';

const GPU_STATES = ['free', 'allocated', 'reserved', 'unhealthy', 'cordoned'];

// memberGPUs is the whole GPUs one member of the job asks for (its role's
// for a job with roles).
function memberGPUs(job, member) {
  const spec = job.spec || {};
  if (member && member.role && spec.roles) {
    const r = spec.roles.find((x) => x.name === member.role);
    return (r && r.gpusPerMember) || 0;
  }
  return (spec.gang && spec.gang.gpusPerMember) || 0;
}

// jobGPUs is the whole GPUs the whole gang asks for.
function jobGPUs(job) {
  const spec = job.spec || {};
  if (spec.roles && spec.roles.length) {
    return spec.roles.reduce((n, r) => n + (r.members || 0) * (r.gpusPerMember || 0), 0);
  }
  return ((spec.gang && spec.gang.members) || 0) * ((spec.gang && spec.gang.gpusPerMember) || 0);
}

// jobMembers is the gang's member count.
function jobMembers(job) {
  const spec = job.spec || {};
  if (spec.roles && spec.roles.length) return spec.roles.reduce((n, r) => n + (r.members || 0), 0);
  return (spec.gang && spec.gang.members) || 0;
}

// bookedByNode maps "cluster/node" to the GPUs of placed members that do
// not run yet: their pods are gated, so the inventory does not count them.
function bookedByNode(jobs) {
  const out = new Map();
  for (const j of jobs) {
    const st = j.status || {};
    if (st.phase !== 'Placed' && st.phase !== 'Running') continue;
    for (const m of st.members || []) {
      if (!m.node || !m.cluster || (m.phase && m.phase !== 'Pending' && m.phase !== 'Prepared')) continue;
      const k = m.cluster + '/' + m.node;
      out.set(k, (out.get(k) || 0) + memberGPUs(j, m));
    }
  }
  return out;
}

// nodeStates splits a node's GPU capacity into the five states.
function nodeStates(node, cluster, booked) {
  const state = (cluster && cluster.status && cluster.status.state) || 'Pending';
  const drained = ((cluster && cluster.spec && cluster.spec.drainedNodes) || []).includes(node.name);
  let gpus = node.gpus || 0;
  let unhealthy = Math.max(0, (node.capacityGPUs || gpus) - gpus);
  let used = Math.min(node.usedGPUs || 0, gpus);
  const usable = state === 'Ready' || state === 'Cordoned' || state === 'Draining';
  if (!node.ready || !usable) { unhealthy += gpus; gpus = 0; used = 0; }
  const reserved = state === 'Ready' ? Math.min(gpus - used, booked || 0) : 0;
  const rest = gpus - used - reserved;
  const schedulable = state === 'Ready' && node.ready && !node.unschedulable && !drained;
  return {free: schedulable ? rest : 0, allocated: used, reserved, unhealthy, cordoned: schedulable ? 0 : rest};
}

// clusterStates sums nodeStates over a cluster's inventory.
function clusterStates(inv, cluster, booked) {
  const sum = {free: 0, allocated: 0, reserved: 0, unhealthy: 0, cordoned: 0};
  for (const n of (inv && inv.nodes) || []) {
    const s = nodeStates(n, cluster, booked.get(cluster.metadata.name + '/' + n.name));
    GPU_STATES.forEach((k) => { sum[k] += s[k]; });
  }
  return sum;
}

// topology groups a cluster's nodes cluster → block → rack → NVLink domain
// → node; a level the nodes do not label is skipped, never invented.
function topology(nodes) {
  const groups = new Map();
  const at = (m, key) => { if (!m.has(key)) m.set(key, new Map()); return m.get(key); };
  for (const n of nodes) {
    const nv = n.clique ? 'clique ' + n.clique : '';
    at(at(at(groups, n.block || ''), n.rack || ''), nv).set(n.name, n);
  }
  return groups;
}
