// The modelmetrics page: polls this server's JSON API (never anything else) and renders the
// deployments list or one deployment. At most two requests are in flight, each aborted after a
// timeout; a failed or late poll marks the page stale and keeps the last good data on screen.
'use strict';

const TOKEN_KEY = 'modelmetrics-token';
const REQUEST_TIMEOUT_MS = 4000;
const MAX_IN_FLIGHT = 2;

const state = {
  token: null,
  intervalMs: 5000,
  inFlight: 0,
  lastOk: 0,         // Date.now() of the last successful poll
  lastError: '',
  timer: null,
  charts: new Map(), // chart id -> Chart
  route: '',
};

// ---- small DOM helpers (text only: nothing from the API is parsed as HTML) ----
function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null) continue;
    if (k === 'class') node.className = v;
    else if (k === 'text') node.textContent = v;
    else node.setAttribute(k, v);
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

function table(headers, rows, attrs) {
  return el('table', attrs || {},
    el('thead', {}, el('tr', {}, ...headers.map((h) => el('th', { text: h })))),
    el('tbody', {}, ...rows));
}

// A measured number (zero included), with its exact value kept in data-value.
function numCell(value, unit, key) {
  return el('td', { class: 'num', 'data-value': String(value), 'data-key': key },
    formatValue(value, unit));
}

// No value reported: not a zero, not a missing[] entry.
function noValueCell(key) {
  return el('td', { class: 'novalue', title: 'no value reported', 'data-key': key }, '—');
}

function missingCell(reason, key) {
  return el('td', { 'data-key': key, 'data-missing': 'true' },
    el('span', { class: 'badge missing', title: reason }, 'missing'));
}

function formatValue(value, unit) {
  if (typeof value !== 'number' || !isFinite(value)) return String(value);
  if (unit === 'seconds') {
    if (value === 0) return '0 s';
    if (Math.abs(value) < 1) return `${(value * 1000).toPrecision(4).replace(/\.?0+$/, '')} ms`;
    return `${value.toPrecision(4).replace(/\.?0+$/, '')} s`;
  }
  if (unit === 'fraction') return `${(value * 100).toPrecision(4).replace(/\.?0+$/, '')} %`;
  const text = Number.isInteger(value) || Math.abs(value) >= 1000
    ? Math.round(value).toLocaleString('en-US')
    : value.toPrecision(4).replace(/\.?0+$/, '');
  return unit && unit !== 'ratio' ? `${text} ${unit}` : text;
}

// ---- the API ----
async function api(path) {
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), REQUEST_TIMEOUT_MS);
  try {
    const response = await fetch(path, {
      headers: { Authorization: `Bearer ${state.token}` },
      signal: controller.signal,
      cache: 'no-store',
    });
    if (response.status === 401 || response.status === 403) {
      const error = new Error('the access token was refused');
      error.unauthorized = true;
      throw error;
    }
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return await response.json();
  } finally {
    clearTimeout(timer);
  }
}

function setFreshness(kind, text) {
  const node = document.getElementById('freshness');
  node.dataset.state = kind;
  node.textContent = text;
}

function markFresh() {
  state.lastOk = Date.now();
  state.lastError = '';
  setFreshness('live', 'live');
}

function markFailed(error) {
  if (error && error.unauthorized) {
    setFreshness('unauthorized', 'unauthorized');
    document.getElementById('main').replaceChildren(el('p', { class: 'banner error', id: 'unauthorized' },
      'This page needs the access token modelmetrics ui printed: open the URL it printed.'));
    stopPolling();
    return;
  }
  state.lastError = error ? String(error.message || error) : 'no answer';
  const since = state.lastOk ? `${Math.round((Date.now() - state.lastOk) / 1000)} s` : 'ever';
  setFreshness('stale', `stale: no answer for ${since} (${state.lastError})`);
}

// ---- routing and polling ----
function route() {
  const hash = location.hash || '#/';
  const match = hash.match(/^#\/d\/([^/]+)\/([^/]+)$/);
  if (!match) return null;
  try {
    return { ns: decodeURIComponent(match[1]), name: decodeURIComponent(match[2]) };
  } catch (error) {  // a malformed escape (URIError): say so instead of failing the page
    return { error: `This link is not a deployment's address: ${hash} (${error.message}).` };
  }
}

function renderRouteError(target) {
  document.getElementById('main').replaceChildren(
    el('p', { class: 'note', id: 'route-error', role: 'alert' }, target.error),
    el('p', {}, el('a', { href: '#/' }, 'All deployments')));
}

async function poll() {
  if (state.inFlight >= MAX_IN_FLIGHT) return;  // the previous poll is still out
  const target = route();
  if (target && target.error) return renderRouteError(target);
  state.inFlight++;
  try {
    if (target) {
      const detail = await api(`/api/v1/deployments/${encodeURIComponent(target.ns)}/${encodeURIComponent(target.name)}`);
      renderDeployment(target, detail);
      adoptInterval(detail.pollIntervalMs);
    } else {
      const list = await api('/api/v1/deployments');
      renderList(list);
      adoptInterval(list.pollIntervalMs);
    }
    markFresh();
  } catch (error) {
    markFailed(error);
  } finally {
    state.inFlight--;
  }
}

function adoptInterval(ms) {
  if (!ms || ms === state.intervalMs) return;
  state.intervalMs = ms;
  document.getElementById('interval').textContent = String(ms / 1000);
  startPolling();
}

function startPolling() {
  stopPolling();
  state.timer = setInterval(poll, state.intervalMs);
}

function stopPolling() {
  if (state.timer) clearInterval(state.timer);
  state.timer = null;
}

function onRoute() {
  if (!state.timer) startPolling();
  for (const chart of state.charts.values()) chart.destroy();
  state.charts.clear();
  document.getElementById('main').replaceChildren(el('p', { class: 'note' }, 'Loading…'));
  const target = route();
  document.getElementById('crumb').textContent =
    target ? (target.error ? 'bad link' : `${target.ns}/${target.name}`) : 'deployments';
  poll();
}

// ---- the deployments list ----
function renderList(list) {
  const rows = list.items.map((item) => {
    const key = `${item.namespace}/${item.name}`;
    const health = item.partial === undefined
      ? el('span', { class: 'badge stale' }, 'no read yet')
      : el('span', { class: `badge ${item.partial ? 'partial' : 'ok'}` }, item.partial ? 'partial' : 'complete');
    const count = (field) => (item[field] === null || item[field] === undefined
      ? noValueCell(`${key}|${field}`) : numCell(item[field], '', `${key}|${field}`));
    return el('tr', { 'data-deployment': key, 'data-partial': String(item.partial) },
      el('td', {}, el('a', { href: `#/d/${encodeURIComponent(item.namespace)}/${encodeURIComponent(item.name)}` }, key)),
      el('td', { text: item.engine }),
      el('td', {}, health, item.status.stale ? el('span', { class: 'badge stale', title: item.status.error || 'no recent read' }, ' stale') : null),
      count('missing'), count('running'), count('waiting'),
      el('td', { text: item.timestamp || '' }));
  });
  const main = el('section', {},
    el('h2', {}, `Deployments${list.namespace ? ` in ${list.namespace}` : ''} (${list.items.length})`),
    list.listError ? el('p', { class: 'banner error' }, `listing failed: ${list.listError}`) : null,
    list.leftOut ? el('p', { class: 'banner stale' }, `${list.leftOut} more not shown`) : null,
    table(['deployment', 'engine', 'health', 'missing', 'running', 'waiting', 'read at'], rows, { id: 'deployments' }));
  document.getElementById('main').replaceChildren(main);
  document.getElementById('main').dataset.renderedMs = String(performance.now());
}

// ---- one deployment ----
function windowRows(list, missing) {
  return list.map((w) => {
    const key = `${w.pod}|${w.name}|${w.scope}`;
    return el('tr', {},
      el('td', { text: w.pod }), el('td', { text: w.name }), el('td', { text: w.scope }),
      numCell(w.value, w.unit, key), el('td', { class: 'num', text: String(w.samples) }),
      el('td', { class: 'num', text: `${w.windowSeconds.toFixed(1)} s` }), el('td', { text: w.source }));
  });
}

function renderDeployment(target, detail) {
  const s = detail.snapshot;
  const main = document.getElementById('main');
  const parts = [];
  if (detail.status.stale) {
    parts.push(el('p', { class: 'banner stale', id: 'stale' },
      `Stale: ${detail.status.error || 'no recent read'}; showing the read of ${detail.status.lastRead || 'never'}.`));
  }
  if (!s) {
    parts.push(el('p', { class: 'note' }, 'No snapshot read yet.'));
    main.replaceChildren(...parts);
    return;
  }
  parts.push(el('section', { id: 'summary', 'data-timestamp': s.timestamp, 'data-partial': String(s.partial) },
    el('h2', {}, `${s.metadata.namespace}/${s.metadata.name} `,
      el('span', { class: `badge ${s.partial ? 'partial' : 'ok'}` }, s.partial ? 'partial' : 'complete')),
    el('span', { id: 'updated', 'data-timestamp': s.timestamp }, `read at ${s.timestamp} · engine ${detail.engine}`)));

  if (String(detail.engine).toLowerCase() === 'vllm-omni') parts.push(renderPipeline(s));

  const gaugeRows = [];
  for (const [kind, list] of [['processing', s.processing || []], ['queueing', s.queueing || []]]) {
    for (const g of list) {
      gaugeRows.push(el('tr', {}, el('td', { text: kind }), el('td', { text: g.name }), el('td', { text: g.scope }),
        numCell(g.value, g.unit, `${kind}|${g.name}|${g.scope}`), el('td', { class: 'num', text: String(g.podCount) }),
        el('td', { text: g.source })));
    }
  }
  parts.push(el('section', { id: 'gauges' }, el('h2', {}, 'Gauges by scope'),
    gaugeRows.length ? table(['', 'name', 'scope', 'value', 'pods', 'source'], gaugeRows) : el('p', { class: 'novalue' }, 'no gauge reported')));

  // A modelmetrics extension: the share of each role's KV cache in use, over its readable Pods.
  const usedRows = (s.utilization || []).map((u) => el('tr', {},
    el('td', { text: u.name }), el('td', { text: u.scope }),
    numCell(u.mean, u.unit, `utilization|${u.name}|${u.scope}|mean`),
    numCell(u.max, u.unit, `utilization|${u.name}|${u.scope}|max`),
    el('td', { class: 'num', text: String(u.podCount) }), el('td', { text: u.source })));
  parts.push(el('section', { id: 'utilization' }, el('h2', {}, 'KV-cache utilization by role'),
    usedRows.length ? table(['name', 'scope', 'mean', 'max', 'pods', 'source'], usedRows) : el('p', { class: 'novalue' }, 'no utilization reported')));

  const cacheRows = (s.cacheHits || []).map((h) => el('tr', {},
    el('td', { text: h.pod }), el('td', { text: h.scope }), numCell(h.rate, 'fraction', `cache|${h.pod}|${h.scope}`),
    el('td', { class: 'num', text: `${h.hits} / ${h.queries}` }), el('td', { text: h.source })));
  parts.push(el('section', { id: 'cache' }, el('h2', {}, 'Cache hits per Pod and scope'),
    cacheRows.length ? table(['pod', 'scope', 'hit rate', 'hits / queries', 'source'], cacheRows) : el('p', { class: 'novalue' }, 'no cache hit value reported')));

  for (const [id, title, list] of [['latency', 'Latency (mean of the window)', s.latency], ['traffic', 'Traffic', s.traffic], ['transfer', 'Transfer', s.transfer]]) {
    const rows = windowRows(list || []);
    parts.push(el('section', { id }, el('h2', {}, title),
      rows.length ? table(['pod', 'name', 'scope', 'value', 'samples', 'window', 'source'], rows) : el('p', { class: 'novalue' }, 'no value reported')));
  }

  const missingRows = (s.missing || []).map((m) => el('tr', { class: 'missing', 'data-source': m.source, 'data-pod': m.pod },
    el('td', { text: m.pod || '(deployment)' }), el('td', { text: m.source }),
    el('td', {}, el('span', { class: 'badge missing' }, 'missing'), ' ', m.reason)));
  parts.push(el('section', { id: 'missing' }, el('h2', {}, `missing[] (${missingRows.length})`),
    missingRows.length ? table(['pod', 'source', 'reason'], missingRows) : el('p', { class: 'note' }, 'nothing missing')));

  const chartSection = el('section', { id: 'history' }, el('h2', {}, 'Last 15 minutes'), el('div', { class: 'charts' }));
  parts.push(chartSection);
  // Charts survive re-renders: their canvases are moved into the new section.
  const old = document.querySelector('#history .charts');
  main.replaceChildren(...parts);
  renderCharts(chartSection.querySelector('.charts'), detail.history, old);
  main.dataset.renderedMs = String(performance.now());
}

// The omni pipeline as a stage x replica grid, with its transfer edges.
function renderPipeline(s) {
  const cells = new Map();  // "stage.replica" -> {label -> {value, unit}}
  const stages = new Map(); // stage -> {label -> {value, unit}}
  const add = (map, key, label, value, unit, samples) => {
    if (!map.has(key)) map.set(key, {});
    const slot = map.get(key);
    const prior = slot[label];
    // Windows of several Pods: their mean weighted by samples; gauges: their sum (already).
    if (prior && samples) {
      const total = prior.samples + samples;
      slot[label] = { value: (prior.value * prior.samples + value * samples) / total, unit, samples: total };
    } else slot[label] = { value, unit, samples: samples || 0 };
  };
  for (const g of [...(s.processing || []), ...(s.queueing || [])]) {
    const m = g.scope.match(/^stage\/(\d+)(?:\.(\d+))?$/);
    if (!m) continue;
    if (m[2] !== undefined) add(cells, `${m[1]}.${m[2]}`, g.name, g.value, g.unit);
    else add(stages, m[1], g.name, g.value, g.unit);
  }
  const edges = new Map();
  for (const w of [...(s.latency || []), ...(s.traffic || []), ...(s.transfer || [])]) {
    let m = w.scope.match(/^stage\/(\d+)\.(\d+)$/);
    if (m) { add(cells, `${m[1]}.${m[2]}`, w.name, w.value, w.unit, w.samples); continue; }
    m = w.scope.match(/^stage\/(\d+)$/);
    if (m) { add(stages, m[1], w.name, w.value, w.unit, w.samples); continue; }
    m = w.scope.match(/^edge\/(.+)$/);
    if (m) add(edges, m[1], w.name, w.value, w.unit, w.samples);
  }
  const missingFor = new Map();
  for (const m of s.missing || []) {
    const scope = (m.source.match(/\((stage|edge)\/([^)]+)\)$/) || [])[2];
    if (scope) missingFor.set(scope, m.reason);
  }
  const stageIds = [...new Set([...stages.keys(), ...[...cells.keys()].map((k) => k.split('.')[0])])]
    .sort((a, b) => a - b);
  // The replicas that report something (a value or a missing entry), not every number up to the
  // largest: a Pod labelled replica="99999999" must not make the page draw 100 million cells.
  const replicaIds = [...new Set([...cells.keys(), ...missingFor.keys()]
    .filter((k) => /^\d+\.\d+$/.test(k)).map((k) => Number(k.split('.')[1])))].sort((a, b) => a - b);
  if (!replicaIds.length) replicaIds.push(0);
  const grid = el('div', { class: 'grid', id: 'pipeline-grid' });
  grid.style.gridTemplateColumns = `120px repeat(${replicaIds.length}, 1fr)`;  // CSSOM: allowed by the CSP
  for (const stage of stageIds) {
    const info = stages.get(stage) || {};
    grid.append(el('div', { class: 'stage-label', 'data-stage': stage }, `stage ${stage}`,
      ...Object.entries(info).map(([k, v]) => el('div', { class: 'kv' }, el('span', { text: k }), el('span', { class: 'num' }, formatValue(v.value, v.unit))))));
    for (const r of replicaIds) {
      const key = `${stage}.${r}`;
      const values = cells.get(key);
      const cell = el('div', { class: 'cell', 'data-cell': key }, el('h4', {}, `replica ${r}`));
      if (values) {
        for (const [k, v] of Object.entries(values)) cell.append(el('div', { class: 'kv' }, el('span', { text: k }), el('span', { class: 'num', 'data-value': String(v.value) }, formatValue(v.value, v.unit))));
      } else if (missingFor.has(key)) {
        cell.append(el('span', { class: 'badge missing', title: missingFor.get(key) }, 'missing'));
      } else {
        cell.append(el('span', { class: 'novalue', title: 'no value reported' }, '—'));
      }
      grid.append(cell);
    }
  }
  const edgeRows = [...edges.entries()].sort().map(([edge, values]) => el('tr', { 'data-edge': edge },
    el('td', { text: edge.replace('->', ' → ') }),
    ...['transfer-size', 'transfer-tx', 'transfer-in-flight', 'transfer-rx'].map((k) => (values[k]
      ? el('td', { class: 'num' }, formatValue(values[k].value, values[k].unit)) : el('td', { class: 'novalue' }, '—')))));
  return el('section', { id: 'pipeline' }, el('h2', {}, 'Pipeline: stage × replica'), grid,
    el('h2', {}, 'Transfer edges'),
    edgeRows.length ? table(['edge', 'size', 'tx', 'in flight', 'rx'], edgeRows, { class: 'edges' }) : el('p', { class: 'novalue' }, 'no transfer reported'));
}

// One chart per (area, name), one line per Pod and scope; x in minutes before now.
function renderCharts(container, history, oldContainer) {
  const groups = new Map();
  for (const series of (history && history.series) || []) {
    const id = `${series.area}|${series.name}`;
    if (!groups.has(id)) groups.set(id, []);
    groups.get(id).push(series);
  }
  const now = Date.now() / 1000;
  const keep = new Set();
  for (const [id, list] of [...groups.entries()].slice(0, 60)) {
    keep.add(id);
    const datasets = list.slice(0, 12).map((series) => ({
      label: [series.pod, series.scope].filter(Boolean).join(' '),
      data: series.points.map(([t, v]) => ({ x: (t - now) / 60, y: v })),
      borderWidth: 1.5, pointRadius: 1.5, tension: 0,
    }));
    let chart = state.charts.get(id);
    let box = oldContainer && [...oldContainer.children].find((c) => c.dataset.chart === id);
    if (!box) {
      box = el('div', { class: 'chart', 'data-chart': id }, el('h3', {}, `${id.replace('|', ' · ')} (${list[0].unit || ''})`), el('canvas', {}));
    }
    container.append(box);
    if (!chart && typeof Chart !== 'undefined') {
      chart = new Chart(box.querySelector('canvas'), {
        type: 'line',
        data: { datasets },
        options: {
          animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
          plugins: { legend: { display: datasets.length <= 6, labels: { boxWidth: 8, font: { size: 10 } } } },
          scales: { x: { type: 'linear', min: -15, max: 0, title: { display: true, text: 'minutes ago' } } },
        },
      });
      state.charts.set(id, chart);
    } else if (chart) {
      chart.data.datasets = datasets;
      chart.update('none');
    }
  }
  for (const [id, chart] of state.charts) {
    if (!keep.has(id)) { chart.destroy(); state.charts.delete(id); }
  }
}

// ---- start ----
// A token in the URL's fragment replaces the tab's, and leaves the address bar.
function adoptTokenFromUrl() {
  const fromUrl = (location.hash.match(/[#&]token=([0-9A-Za-z_-]+)/) || [])[1];
  if (!fromUrl) return;
  sessionStorage.setItem(TOKEN_KEY, fromUrl);
  history.replaceState(null, '', `${location.pathname}#/`);
  state.token = fromUrl;
}

function start() {
  adoptTokenFromUrl();
  state.token = sessionStorage.getItem(TOKEN_KEY);
  document.getElementById('interval').textContent = String(state.intervalMs / 1000);
  if (!state.token) {
    markFailed({ unauthorized: true });
    return;
  }
  window.addEventListener('hashchange', () => {
    adoptTokenFromUrl();
    onRoute();
  });
  onRoute();
  startPolling();
  // The freshness badge also ages between polls.
  setInterval(() => {
    if (state.lastOk && Date.now() - state.lastOk > 2 * state.intervalMs + REQUEST_TIMEOUT_MS) markFailed(new Error('no answer'));
  }, 1000);
}

start();
