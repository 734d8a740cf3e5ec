// Shoal fleet view: the router and the render loop. Pages are #/clusters,
// #/gpus, #/queues, #/pools, #/services, #/jobs, #/jobs/<name> and #/waiting.
'use strict';

const PAGES = [
  {path: 'clusters', title: 'Clusters', view: viewClusters, count: () => fleet.clusters.size},
  {path: 'gpus', title: 'GPU map', view: viewGPUs, count: () => {
    let free = 0, all = 0;
    for (const c of fleet.clusters.values()) { const i = (c.status || {}).inventory || {}; free += i.freeGPUs || 0; all += i.gpus || 0; }
    return free + '/' + all;
  }},
  {path: 'queues', title: 'Queues', view: viewQueues, count: () => fleet.queues.size},
  {path: 'pools', title: 'Pools', view: viewPools, count: () => fleet.pools.size},
  {path: 'services', title: 'Services', view: viewServices, count: () => fleet.services.size},
  {path: 'jobs', title: 'Jobs', view: viewJobs, count: () => fleet.jobs.size},
  {path: 'waiting', title: 'Waiting', view: viewWaiting,
    count: () => [...fleet.jobs.values()].filter((j) => ((j.status || {}).phase || 'Pending') === 'Pending').length},
];

function route() {
  const parts = location.hash.replace(/^#\/?/, '').split('/');
  const path = parts[0] || 'clusters';
  if (path === 'jobs' && parts.length > 1) return {path: 'job', name: decodeURIComponent(parts.slice(1).join('/'))};
  return {path: PAGES.some((p) => p.path === path) ? path : 'clusters'};
}

function render() {
  const r = route();
  document.getElementById('nav').replaceChildren(...PAGES.map((p) =>
    h('a', {href: '#/' + p.path, class: p.path === r.path || (r.path === 'job' && p.path === 'jobs') ? 'on' : ''},
      p.title, ' ', h('span', {class: 'count', 'data-count': p.path}, p.count()))));
  const main = document.getElementById('main');
  const page = r.path === 'job' ? viewJob(r.name) : PAGES.find((p) => p.path === r.path).view();
  const errs = Object.entries(fleet.errors).map(([k, v]) => h('p', {class: 'error', 'data-error': k}, v));
  main.replaceChildren(...errs, page);
  for (const e of main.querySelectorAll('[data-pct]')) e.style.width = e.dataset.pct + '%';
  document.body.dataset.page = r.path;
  const who = fleet.whoami;
  document.getElementById('who').textContent = who ? who.user + ' (' + who.method + ')' : '';
  const live = document.getElementById('live');
  live.className = 'live ' + fleet.live;
  live.textContent = fleet.live === 'connecting' ? 'watching' : fleet.live;
  live.title = {connecting: 'job updates: watch stream asked for', live: 'job updates: watch stream open',
    reconnecting: 'job updates: watch stream ended, listing again'}[fleet.live];
  document.getElementById('footer').textContent = fleet.refreshed ?
    'clusters, queues, pools and services read ' + fleet.refreshed.toLocaleTimeString() + ', every ' + REFRESH_MS / 1000 + 's; jobs follow the watch stream' : '';
}

onChange(render);
window.addEventListener('hashchange', () => { render(); if (route().path === 'gpus') refresh(true); });
setInterval(tickAges, 1000);
setInterval(() => refresh(route().path === 'gpus'), REFRESH_MS);
refresh(route().path === 'gpus');
watchJobs();
