// `listen`: webhooks on a laptop that the service cannot reach. It follows the organization's event
// log through the public API (GET /events, newest first, down to the last event it forwarded),
// reads each booking (GET /bookings/{id}) and POSTs to a local url the envelope and both signed
// header sets a delivery has, signed with a local secret, so the receiver's own verification runs
// unchanged. What differs from a delivery is said at start (see `notice`).
import { randomBytes, randomUUID } from 'node:crypto';
import { ApiError, type Booking, createClient, type Event } from './client.js';
import { signatureHeaders } from './signature.js';

export interface ListenOptions {
  baseUrl: string;
  apiKey: string;
  /** The local receiver, e.g. `http://localhost:3000/webhooks`. */
  forwardTo: string;
  /** Event types to forward: exact, `booking.*` or `*` (default: every one). */
  events?: readonly string[];
  /** The signing secret; by default a new one for this run. */
  secret?: string;
  /** Between two looks at the event log (default 2000, at least 500). */
  intervalMs?: number;
  /** Waits before each retry of a forward; their count is the retries (default 1, 2, 4, 8 s). */
  retryGapsMs?: readonly number[];
  /** One forward's time-out (default 10000, as a delivery's). */
  timeoutMs?: number;
  /** Where the lines go (default console.log). */
  log?: (line: string) => void;
}

export interface ListenSummary {
  forwarded: number;
  failed: number;
}

export interface Listener {
  secret: string;
  /** Stops looking and aborts a forward in flight; resolves when the loop has ended. */
  stop(): Promise<ListenSummary>;
  /** Resolves when the loop ends (after `stop`, or a key the API refuses). */
  done: Promise<ListenSummary>;
}

const PAGE = 100;
/** Pages read in one look: beyond them, older new events are left to GET /events. */
const MAX_PAGES = 10;

/** A secret of the form the service issues: `whsec_` and 32 random bytes in base64. */
export const newSecret = (): string => `whsec_${randomBytes(32).toString('base64')}`;

/** Whether `type` is one of the forwarded ones. */
export function wanted(patterns: readonly string[], type: string): boolean {
  if (patterns.length === 0) return true;
  return patterns.some(
    (p) => p === '*' || p === type || (p.endsWith('.*') && type.startsWith(p.slice(0, -1))),
  );
}

/** What a forward is not, said before the first one. */
export function notice(intervalMs: number, gaps: readonly number[]): string {
  const perMinute = Math.ceil(60_000 / intervalMs);
  const span = gaps.reduce((a, b) => a + b, 0) / 1000;
  return [
    'Not a real delivery:',
    `- data is the booking as GET /bookings/{id} reads it when forwarded, not as the change left it (null once it is deleted or no longer yours);`,
    `- events are found by polling GET /events every ${intervalMs / 1000} s (${perMinute} requests a minute of the key's 600, plus one read per event);`,
    `- X-SVC-Delivery is local to this run, and a refused forward is retried ${gaps.length} times over ${span} s, not 8 over an hour.`,
  ].join('\n');
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    if (signal.aborted) return resolve();
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done);
  });

function describe(booking: Booking | null): string {
  return booking
    ? `booking ${booking.reference ?? booking.id} ${booking.status}`
    : 'booking not readable now';
}

/** Starts following the log; the first look only notes where the log stands. */
export async function listen(options: ListenOptions): Promise<Listener> {
  const log = options.log ?? ((line: string) => console.log(line));
  const intervalMs = Math.max(options.intervalMs ?? 2000, 500);
  const gaps = options.retryGapsMs ?? [1000, 2000, 4000, 8000];
  const timeoutMs = options.timeoutMs ?? 10_000;
  const patterns = options.events ?? [];
  const secret = options.secret ?? newSecret();
  const stopping = new AbortController();
  const summary: ListenSummary = { forwarded: 0, failed: 0 };
  const api = createClient({
    baseUrl: options.baseUrl,
    apiKey: options.apiKey,
    retry: {
      onRetry: (attempt, waitMs, error) =>
        log(
          `the API answered ${error instanceof ApiError ? error.code : String(error)}; retry ${attempt} in ${waitMs} ms`,
        ),
    },
  });
  const forwardTo = new URL(options.forwardTo).toString();

  const me = await api.getIntegration();
  let bookmark: string | null = (await api.listEvents({ query: { limit: 1 } })).data[0]?.id ?? null;
  log(`Forwarding the events of organization ${me.organization.id} from ${options.baseUrl} to ${forwardTo}.`);
  log('Signing secret (verify with it as with a webhook secret):');
  log(secret);
  log(notice(intervalMs, gaps));

  async function forward(event: Event, data: Booking | null): Promise<void> {
    const body = JSON.stringify({
      id: event.id,
      type: event.type,
      version: event.version,
      created_at: event.created_at,
      organization: { id: me.organization.id },
      resource: event.resource,
      changes: event.changes,
      previous_status: event.previous_status,
      data,
    });
    const delivery = randomUUID();
    for (let attempt = 1; ; attempt += 1) {
      const outcome = await post(body, event, delivery, attempt);
      if (stopping.signal.aborted) return;
      if (outcome === null) {
        summary.forwarded += 1;
        log(`forwarded ${event.type} ${event.id} ${describe(data)} (attempt ${attempt})`);
        return;
      }
      const gap = gaps[attempt - 1];
      if (gap === undefined) {
        summary.failed += 1;
        log(
          `FAILED ${event.type} ${event.id} after ${attempt} attempts: ${outcome}; it stays in GET /events, going on`,
        );
        return;
      }
      log(`${event.type} ${event.id}: ${outcome}; attempt ${attempt + 1} in ${gap / 1000} s`);
      await sleep(gap, stopping.signal);
    }
  }

  /** One POST: null when the receiver answered 2xx, else what went wrong. */
  async function post(body: string, event: Event, delivery: string, attempt: number): Promise<string | null> {
    const timestamp = Math.floor(Date.now() / 1000);
    try {
      const res = await fetch(forwardTo, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          'user-agent': 'SVC-Webhooks/1',
          'x-svc-event': event.type,
          'x-svc-event-id': event.id,
          'x-svc-delivery': delivery,
          'x-svc-attempt': String(attempt),
          ...signatureHeaders(secret, event.id, timestamp, Buffer.from(body)),
        },
        body,
        redirect: 'manual',
        signal: AbortSignal.any([stopping.signal, AbortSignal.timeout(timeoutMs)]),
      });
      await res.arrayBuffer().catch(() => undefined);
      return res.status >= 200 && res.status < 300 ? null : `the receiver answered ${res.status}`;
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      return `the receiver is unreachable (${cause ?? (error as Error).name})`;
    }
  }

  /** The events after the bookmark, oldest first (at most MAX_PAGES pages of them). */
  async function newEvents(): Promise<Event[]> {
    const found: Event[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_PAGES; page += 1) {
      const res = await api.listEvents({
        query: { limit: PAGE, ...(cursor ? { cursor } : {}) },
        signal: stopping.signal,
      });
      for (const event of res.data) {
        if (event.id === bookmark) return found.reverse();
        found.push(event);
      }
      if (!res.next_cursor) return found.reverse();
      cursor = res.next_cursor;
    }
    log(`more than ${PAGE * MAX_PAGES} events since the last look: the older ones are left to GET /events`);
    return found.reverse();
  }

  async function readBooking(id: string): Promise<Booking | null> {
    try {
      return await api.getBooking({ path: { id }, signal: stopping.signal });
    } catch (error) {
      if (error instanceof ApiError && error.status === 404) return null;
      throw error;
    }
  }

  async function look(): Promise<void> {
    for (const event of await newEvents()) {
      if (stopping.signal.aborted) return;
      if (wanted(patterns, event.type)) await forward(event, await readBooking(event.resource.id));
      // Past this event even when its forward failed: that was reported, the log keeps it.
      bookmark = event.id;
    }
  }

  async function loop(): Promise<ListenSummary> {
    while (!stopping.signal.aborted) {
      try {
        await look();
      } catch (error) {
        if (stopping.signal.aborted) break;
        // A key revoked or without a scope will not heal by itself: stop and say why.
        if (error instanceof ApiError && [401, 403].includes(error.status)) {
          log(`stopped: the API refused the key (${error.code}): ${error.message}`);
          break;
        }
        log(
          `could not read the event log (${error instanceof ApiError ? error.code : String(error)}); trying again`,
        );
      }
      await sleep(intervalMs, stopping.signal);
    }
    return summary;
  }

  const done = loop();
  return {
    secret,
    done,
    stop() {
      stopping.abort();
      return done;
    },
  };
}
