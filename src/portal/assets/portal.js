// The delivery portal's page, in plain JavaScript (no framework, nothing fetched from elsewhere).
// It reads and writes through /portal/api, the public API's webhook and event routes reached with
// the portal's session cookie. Text from the server is always set as text, never as HTML.

const API = '/portal/api';
const EVENT_TYPES = [
  'booking.created',
  'booking.updated',
  'booking.assigned',
  'booking.started',
  'booking.completed',
  'booking.cancelled',
  'booking.no_show',
  'booking.deleted',
];
/** Deliveries in these states change on their own: the page refreshes while one is shown. */
const MOVING = new Set(['pending', 'delivering']);
const REFRESH_MS = 1000;

const main = document.getElementById('main');
const notice = document.getElementById('notice');
let refreshTimer = null;

class ApiError extends Error {
  constructor(status, error) {
    super(error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = error?.code ?? 'unknown';
    this.requestId = error?.request_id ?? null;
  }
}

async function api(method, path, body) {
  const init = { method, credentials: 'same-origin', headers: {} };
  if (body !== undefined) {
    init.headers['content-type'] = 'application/json';
    init.body = JSON.stringify(body);
  }
  const res = await fetch(API + path, init);
  if (res.status === 204) return null;
  const data = await res.json().catch(() => null);
  if (!res.ok) throw new ApiError(res.status, data?.error);
  return data;
}

/** An element with attributes (`on*` as listeners) and children (strings become text nodes). */
function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on')) el.addEventListener(name.slice(2), value);
    else el.setAttribute(name, value === true ? '' : String(value));
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) continue;
    el.append(typeof child === 'string' || typeof child === 'number' ? String(child) : child);
  }
  return el;
}

/** A timestamp as `2026-11-27 10:04:05 UTC`: the same for every reader of a shared screen. */
const when = (iso) => (iso ? `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC` : '—');
const badge = (text, kind = text) => h('span', { class: `badge ${kind}` }, text);

function table(headings, rows) {
  return h(
    'div',
    { class: 'table' },
    h(
      'table',
      {},
      h(
        'thead',
        {},
        h(
          'tr',
          {},
          headings.map((t) => h('th', {}, t)),
        ),
      ),
      h('tbody', {}, rows),
    ),
  );
}

function say(text, kind = 'error') {
  notice.textContent = text;
  notice.className = kind === 'error' ? '' : kind;
  notice.hidden = false;
}

function show(...nodes) {
  clearTimeout(refreshTimer);
  notice.hidden = true;
  main.replaceChildren(...nodes.filter(Boolean));
}

/** A session that ended (expired, signed out, link used twice) ends the page too. */
function denied(message) {
  clearTimeout(refreshTimer);
  document.getElementById('nav').hidden = true;
  document.getElementById('who').hidden = true;
  notice.hidden = true;
  main.replaceChildren(
    h(
      'div',
      { class: 'denied', id: 'denied' },
      h('h2', {}, 'This portal session has ended'),
      h('p', {}, message),
      h('p', { class: 'muted' }, 'Ask the platform for a new portal link.'),
    ),
  );
}

function failed(error) {
  if (error instanceof ApiError && error.status === 401) return denied(error.message);
  const id = error instanceof ApiError && error.requestId ? ` (${error.code}, ${error.requestId})` : '';
  say(`${error.message}${id}`);
}

function webhookState(w) {
  if (w.active) return badge('active');
  if (w.disabled_reason === 'paused') return badge('paused');
  return badge(`disabled: ${w.disabled_reason ?? 'unknown'}`, 'disabled');
}

async function webhooksView() {
  const { data } = await api('GET', '/webhooks');
  const rows = data.map((w) =>
    h(
      'tr',
      { 'data-webhook': w.id },
      h('td', { class: 'wrap' }, h('a', { href: `#/webhooks/${w.id}` }, w.url)),
      h('td', {}, webhookState(w)),
      h('td', { class: 'num' }, w.consecutive_failures),
      h('td', { class: 'wrap' }, w.events.join(', ')),
      h('td', {}, w.description ?? ''),
    ),
  );
  show(
    h('h2', {}, 'Webhooks'),
    data.length === 0
      ? h('p', { class: 'muted' }, 'This integration has no webhooks.')
      : table(['URL', 'State', 'Consecutive failures', 'Events', 'Description'], rows),
  );
}

function deliveryRow(d) {
  return h(
    'tr',
    { 'data-delivery': d.id, 'data-status': d.status, 'data-event-type': d.event_type },
    h('td', {}, when(d.created_at)),
    h('td', {}, d.event_type),
    h('td', {}, badge(d.status)),
    h('td', { class: 'num' }, `${d.attempt} / ${d.max_attempts}`),
    h('td', { class: 'num' }, d.last_status ?? '—'),
    h('td', { class: 'wrap' }, d.last_error ?? ''),
    h('td', { class: 'num' }, d.last_duration_ms),
    h('td', {}, when(d.delivered_at)),
    h('td', {}, when(d.next_retry_at)),
  );
}

function rotateForm(webhook, done) {
  const minutes = h('input', { type: 'number', min: 0, max: 1440, value: 60, name: 'overlap_minutes' });
  return h(
    'form',
    {
      class: 'actions',
      id: 'rotate-form',
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const rotated = await api('POST', `/webhooks/${webhook.id}/rotate-secret`, {
            overlap_minutes: Number(minutes.value),
          });
          done(rotated);
        } catch (error) {
          failed(error);
        }
      },
    },
    h('label', {}, 'Keep the previous secret valid for ', minutes, ' minutes'),
    h('button', { type: 'submit', class: 'primary' }, 'Rotate now'),
  );
}

function secretBox(rotated) {
  return h(
    'div',
    { class: 'secret', id: 'new-secret' },
    h('strong', {}, 'New signing secret: shown once, copy it now'),
    h('code', {}, rotated.secret),
    h(
      'span',
      { class: 'muted' },
      `The previous secret is accepted until ${when(rotated.previous_secret_valid_until)}.`,
    ),
  );
}

async function webhookView(id) {
  const [webhook, { data }] = await Promise.all([
    api('GET', `/webhooks/${id}`),
    api('GET', `/webhooks/${id}/deliveries?limit=50`),
  ]);
  const extra = h('div', {});
  const act = (label, fn, attrs = {}) =>
    h(
      'button',
      {
        type: 'button',
        ...attrs,
        onclick: async () => {
          try {
            await fn();
          } catch (error) {
            failed(error);
          }
        },
      },
      label,
    );
  show(
    h('h2', {}, h('a', { href: '#/' }, 'Webhooks'), ' / ', webhook.url),
    h(
      'dl',
      { class: 'facts' },
      h('dt', {}, 'State'),
      h('dd', { id: 'state' }, webhookState(webhook)),
      h('dt', {}, 'Consecutive failures'),
      h('dd', { id: 'failures' }, webhook.consecutive_failures),
      h('dt', {}, 'Events'),
      h('dd', {}, webhook.events.join(', ')),
      h('dt', {}, 'Description'),
      h('dd', {}, webhook.description ?? '—'),
    ),
    h(
      'div',
      { class: 'actions' },
      act('Send a test', async () => {
        await api('POST', `/webhooks/${id}/test`);
        await webhookView(id);
        say('Test delivery queued.', 'info');
      }),
      webhook.active
        ? act('Pause', () => patchActive(id, false), { id: 'pause' })
        : act('Resume', () => patchActive(id, true), { id: 'resume' }),
      act('Rotate secret…', async () => {
        extra.replaceChildren(rotateForm(webhook, (rotated) => extra.replaceChildren(secretBox(rotated))));
      }),
    ),
    extra,
    h('h2', {}, 'Deliveries'),
    data.length === 0
      ? h('p', { class: 'muted' }, 'No deliveries yet.')
      : table(
          [
            'Created',
            'Event',
            'Status',
            'Attempt',
            'Last HTTP status',
            'Last error',
            'Duration (ms)',
            'Delivered',
            'Next retry',
          ],
          data.map(deliveryRow),
        ),
  );
  // A delivery on its way is shown as it moves; the page stops asking once none is.
  if (data.some((d) => MOVING.has(d.status)) && location.hash === `#/webhooks/${id}`) {
    refreshTimer = setTimeout(() => refreshDeliveries(id), REFRESH_MS);
  }
}

async function refreshDeliveries(id) {
  try {
    const { data } = await api('GET', `/webhooks/${id}/deliveries?limit=50`);
    if (location.hash !== `#/webhooks/${id}`) return;
    const body = main.querySelector('tbody');
    if (body) body.replaceChildren(...data.map(deliveryRow));
    else return webhookView(id);
    if (data.some((d) => MOVING.has(d.status)))
      refreshTimer = setTimeout(() => refreshDeliveries(id), REFRESH_MS);
  } catch (error) {
    failed(error);
  }
}

async function patchActive(id, active) {
  await api('PATCH', `/webhooks/${id}`, { active });
  await webhookView(id);
  say(active ? 'Webhook resumed.' : 'Webhook paused: no deliveries are sent until it is resumed.', 'info');
}

function eventFilters(params) {
  const type = h(
    'select',
    { name: 'type' },
    h('option', { value: '' }, 'All types'),
    EVENT_TYPES.map((t) => h('option', { value: t, selected: params.get('type') === t }, t)),
  );
  const booking = h('input', {
    name: 'booking',
    placeholder: 'Booking UUID',
    size: 38,
    value: params.get('booking') ?? '',
  });
  return h(
    'form',
    {
      class: 'filters',
      onsubmit: (event) => {
        event.preventDefault();
        const next = new URLSearchParams();
        if (type.value) next.set('type', type.value);
        if (booking.value.trim()) next.set('booking', booking.value.trim());
        location.hash = `#/events?${next}`;
      },
    },
    h('label', {}, 'Type', type),
    h('label', {}, 'Booking', booking),
    h('button', { type: 'submit', class: 'primary' }, 'Filter'),
  );
}

function eventRow(e) {
  const filterByBooking = `#/events?${new URLSearchParams({ booking: e.resource.id })}`;
  return h(
    'tr',
    { 'data-event': e.id },
    h('td', {}, when(e.created_at)),
    h('td', {}, e.type),
    h('td', {}, h('a', { href: filterByBooking, class: 'mono' }, e.resource.id)),
    h('td', {}, e.reference ?? ''),
    h('td', {}, e.previous_status ?? ''),
    h('td', { class: 'wrap' }, e.changes.join(', ')),
  );
}

async function eventsView(params) {
  const query = new URLSearchParams({ limit: '50' });
  if (params.get('type')) query.set('type', params.get('type'));
  if (params.get('booking')) query.set('resource_id', params.get('booking'));
  const page = await api('GET', `/events?${query}`);
  const body = h('tbody', {}, page.data.map(eventRow));
  let cursor = page.next_cursor;
  const more = h(
    'button',
    {
      type: 'button',
      hidden: !page.has_more,
      onclick: async () => {
        try {
          const next = await api('GET', `/events?${new URLSearchParams({ limit: '50', cursor })}`);
          body.append(...next.data.map(eventRow));
          cursor = next.next_cursor;
          more.hidden = !next.has_more;
        } catch (error) {
          failed(error);
        }
      },
    },
    'Older events',
  );
  const headings = ['Created', 'Type', 'Booking', 'Reference', 'Previous status', 'Changes'];
  show(
    h('h2', {}, 'Event log'),
    eventFilters(params),
    h(
      'div',
      { class: 'table' },
      h(
        'table',
        {},
        h(
          'thead',
          {},
          h(
            'tr',
            {},
            headings.map((t) => h('th', {}, t)),
          ),
        ),
        body,
      ),
    ),
    page.data.length === 0 ? h('p', { class: 'muted' }, 'No events match.') : null,
    h('div', { class: 'actions' }, more),
  );
}

async function route() {
  const [path, search = ''] = location.hash.replace(/^#/, '').split('?');
  const webhook = /^\/webhooks\/([^/]+)$/.exec(path);
  try {
    if (webhook) await webhookView(decodeURIComponent(webhook[1]));
    else if (path === '/events') await eventsView(new URLSearchParams(search));
    else await webhooksView();
  } catch (error) {
    if (error instanceof ApiError && error.status === 404) {
      show(h('h2', {}, 'Not found'), h('p', { id: 'not-found' }, error.message));
    } else failed(error);
  }
}

/** The link's token is in the fragment: exchanged once for the session cookie, then removed. */
async function start() {
  const token = /^#token=([A-Za-z0-9_-]+)$/.exec(location.hash)?.[1];
  // A used link still opens the page while the browser holds that link's session (a reload).
  let linkRefused = null;
  if (token) {
    history.replaceState(null, '', `${location.pathname}#/`);
    try {
      await api('POST', '/session', { token });
    } catch (error) {
      if (!(error instanceof ApiError && error.status === 401)) return failed(error);
      linkRefused = error;
    }
  }
  let session;
  try {
    session = await api('GET', '/session');
  } catch (error) {
    return failed(linkRefused ?? error);
  }
  const who = document.getElementById('who');
  who.textContent = `${session.organization.name} · ${session.integration.name} · until ${when(session.expires_at)}`;
  who.hidden = false;
  document.getElementById('nav').hidden = false;
  document.getElementById('sign-out').addEventListener('click', async () => {
    await api('DELETE', '/session').catch(() => null);
    denied('You signed out.');
  });
  window.addEventListener('hashchange', route);
  await route();
}

start();
