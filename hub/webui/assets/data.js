// Shoal fleet view: the data, read only from the hub's REST face (/v1/...)
// with the browser's own credentials. Jobs follow the watch stream; the
// rest is read again every REFRESH_MS.
'use strict';

const REFRESH_MS = 5000;

const fleet = {
  clusters: new Map(),    // name -> v1alpha1.Cluster
  inventories: new Map(), // name -> federation/inventory.Cluster
  queues: new Map(),      // name -> v1alpha1.Queue
  services: new Map(),    // name -> v1alpha1.InferenceService
  pools: new Map(),       // name -> v1alpha1.GPUPool
  jobs: new Map(),        // name -> v1alpha1.Job
  whoami: null,
  // live is the jobs watch stream's state: 'connecting' (asked, not
  // answered yet), 'live' (the hub answered: events arrive as they happen)
  // or 'reconnecting' (it ended or failed; listing again).
  live: 'connecting',
  loaded: {},             // resource -> true once read
  errors: {},             // resource -> last error message
  refreshed: null,        // Date of the last periodic refresh
  listeners: [],
};

// onChange registers fn to run (once per animation frame) after any change.
function onChange(fn) { fleet.listeners.push(fn); }

let changePending = false;
function changed() {
  if (changePending) return;
  changePending = true;
  requestAnimationFrame(() => { changePending = false; fleet.listeners.forEach((fn) => fn()); });
}

// record decodes a stored object in its REST form, {"json": …, "revision": "12"}:
// json is the object itself, or its base64 (grpc-gateway's form of bytes).
function record(o) {
  if (!o || o.json === undefined) return o;
  const j = typeof o.json === 'string' ? JSON.parse(new TextDecoder().decode(
    Uint8Array.from(atob(o.json), (c) => c.charCodeAt(0)))) : o.json;
  return j ? Object.assign(j, {revision: o.revision}) : null; // json is null for an empty record
}

async function getJSON(path) {
  const r = await fetch(path, {headers: {Accept: 'application/json'}, credentials: 'same-origin'});
  if (!r.ok) {
    let msg = r.status + ' ' + r.statusText;
    try { const b = await r.json(); if (b.message) msg += ': ' + b.message; } catch (e) { /* not JSON */ }
    throw new Error(path + ': ' + msg);
  }
  return r.json();
}

// listAll reads every page of a list; it returns the items and the store
// revision of the first page (a watch from it misses nothing).
async function listAll(path) {
  const items = [];
  let cont = '', revision = null;
  do {
    const sep = path.includes('?') ? '&' : '?';
    const body = await getJSON(path + sep + 'options.limit=500' + (cont ? '&options.continue=' + encodeURIComponent(cont) : ''));
    (body.items || []).forEach((o) => items.push(record(o)));
    const meta = body.meta || {};
    if (revision === null) revision = meta.revision || '0';
    cont = meta.continue || '';
  } while (cont);
  return {items, revision};
}

async function load(name, fn) {
  try {
    await fn();
    delete fleet.errors[name];
    fleet.loaded[name] = true;
    document.body.dataset[name + 'Loaded'] = 'true';
  } catch (e) {
    fleet.errors[name] = e.message;
  }
}

function byName(items) { return new Map(items.filter(Boolean).map((o) => [o.metadata.name, o])); }

// items reads a list that is not paged (services, pools): {"items": [...]}.
async function items(path) { return ((await getJSON(path)).items || []).map(record); }

// refresh reads the clusters, queues, inference services and GPU pools,
// and the inventories when wanted (the GPU map shows them).
async function refresh(withInventories) {
  await Promise.all([
    load('whoami', async () => { if (!fleet.whoami) fleet.whoami = await getJSON('/v1/whoami'); }),
    load('clusters', async () => { fleet.clusters = byName((await listAll('/v1/clusters')).items); }),
    load('queues', async () => { fleet.queues = byName((await listAll('/v1/queues')).items); }),
    load('services', async () => { fleet.services = byName(await items('/v1/services')); }),
    load('pools', async () => { fleet.pools = byName(await items('/v1/pools')); }),
  ]);
  if (withInventories) {
    await load('inventories', async () => {
      const names = [...fleet.clusters.keys()];
      const invs = await Promise.all(names.map((n) =>
        getJSON('/v1/clusters/' + encodeURIComponent(n) + '/inventory').then(record, () => null)));
      fleet.inventories = new Map(names.map((n, i) => [n, invs[i]]).filter(([, v]) => v));
    });
  }
  fleet.refreshed = new Date();
  changed();
}

// watchJobs lists the jobs, then follows /v1/jobs:watch from the list's
// revision (newline-delimited JSON, one {"result": WatchEvent} a line);
// when the stream ends it lists again and re-watches.
async function watchJobs() {
  for (;;) {
    try {
      const l = await listAll('/v1/jobs');
      fleet.jobs = byName(l.items);
      fleet.loaded.jobs = true;
      document.body.dataset.jobsLoaded = 'true';
      delete fleet.errors.jobs;
      setLive('connecting');
      await follow('/v1/jobs:watch?revision=' + encodeURIComponent(l.revision));
    } catch (e) {
      fleet.errors.jobs = e.message;
    }
    setLive('reconnecting');
    await new Promise((r) => setTimeout(r, 2000));
  }
}

async function follow(path) {
  const r = await fetch(path, {headers: {Accept: 'application/json'}, credentials: 'same-origin'});
  if (!r.ok) throw new Error(path + ': ' + r.status + ' ' + r.statusText);
  setLive('live');
  const reader = r.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  for (;;) {
    const {value, done} = await reader.read();
    if (done) return;
    buf += value;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i).trim();
      buf = buf.slice(i + 1);
      if (line) applyEvent(JSON.parse(line));
    }
  }
}

function applyEvent(msg) {
  if (msg.error) throw new Error('watch: ' + (msg.error.message || JSON.stringify(msg.error)));
  const ev = msg.result || msg;
  if (!ev.object) return;
  const job = record(ev.object);
  if (!job) return;
  const name = job.metadata.name;
  if (ev.type === 'DELETED' || ev.type === 3) fleet.jobs.delete(name);
  else fleet.jobs.set(name, job);
  changed();
}

function setLive(state) {
  fleet.live = state;
  document.body.dataset.live = state;
  changed();
}
