// Pagination cursors: opaque, signed, bound to the list they came from.
//
// A cursor is `base64url(payload).base64url(HMAC-SHA256)`. The payload holds the key id, the list
// name and the position (created_at in ms, id) and nothing else: no organization, no filters. The
// organization is still bound: it is part of the signed text without being carried, so a cursor
// replayed by another organization fails verification. Signing keys are derived from the master key
// and the key id; rotating (operator API) retires every older key, which invalidates every cursor.
// A cursor signed under a master-key fallback (SVC_MASTER_KEY_FALLBACKS) still verifies, so a
// master-key rotation leaves integrators' cursors valid until the old key is removed.
import { createHmac, createSecretKey, type KeyObject } from 'node:crypto';
import type { Queryable } from '../db/db.js';
import { isUuid } from '../domain/ids.js';
import { deriveKey, safeEqual } from '../security/secrets.js';
import { AppError } from './errors.js';

export type ListName = 'bookings' | 'customers' | 'drivers' | 'vehicles' | 'events' | 'operator-webhooks';

export interface Position {
  createdAt: Date;
  id: string;
}

export interface CursorCodec {
  encode(list: ListName, organizationId: string, position: Position): Promise<string>;
  /** The position a cursor points at; 400 invalid_cursor when it is not one of ours for this list. */
  decode(list: ListName, organizationId: string, cursor: string): Promise<Position>;
  /** Retire every key and start a new one. Every cursor issued before stops being valid. */
  rotate(): Promise<number>;
}

interface Payload {
  k: number;
  l: string;
  t: number;
  i: string;
}

const B64URL = /^[A-Za-z0-9_-]+$/;

const invalid = () => new AppError('invalid_cursor', { param: 'cursor' });

export interface CursorCodecOptions {
  db: Queryable;
  masterKey: Buffer;
  /** Master keys whose cursors still verify; new cursors are signed under `masterKey` only. */
  fallbackMasterKeys?: readonly Buffer[];
  /** How long a process trusts its list of valid keys before reading it again. */
  refreshMs: number;
  now?: () => number;
}

export function createCursorCodec(options: CursorCodecOptions): CursorCodec {
  const { db, masterKey, refreshMs } = options;
  const fallbacks = options.fallbackMasterKeys ?? [];
  const now = options.now ?? Date.now;
  // Key objects, not buffers: an HMAC made from a KeyObject skips importing the key every time.
  const secrets = new Map<number, KeyObject>();
  const fallbackSecrets = new Map<number, KeyObject[]>();
  let state: { current: number; valid: Set<number>; loadedAt: number } | null = null;
  let lastForcedLoad = 0;

  const secretOf = (kid: number) => {
    let s = secrets.get(kid);
    if (!s) {
      s = createSecretKey(deriveKey(masterKey, `cursor-key:${kid}`));
      secrets.set(kid, s);
    }
    return s;
  };

  const fallbacksOf = (kid: number) => {
    let s = fallbackSecrets.get(kid);
    if (!s) {
      s = fallbacks.map((master) => createSecretKey(deriveKey(master, `cursor-key:${kid}`)));
      fallbackSecrets.set(kid, s);
    }
    return s;
  };

  async function load() {
    const rows = await db.query<{ id: number }>(
      'SELECT id FROM cursor_keys WHERE retired_at IS NULL ORDER BY id',
    );
    const valid = new Set(rows.map((r) => r.id));
    const current = rows.at(-1)?.id;
    if (current === undefined) throw new Error('no active cursor key');
    state = { current, valid, loadedAt: now() };
    return state;
  }

  async function keys(forceOnMiss?: number) {
    let s = state && now() - state.loadedAt < refreshMs ? state : await load();
    // A key id we do not know may come from a rotation in another process: look once more,
    // at most once a second so that forged ids cannot make every request read the database.
    if (forceOnMiss !== undefined && !s.valid.has(forceOnMiss) && forceOnMiss > s.current) {
      if (now() - lastForcedLoad > 1000) {
        lastForcedLoad = now();
        s = await load();
      }
    }
    return s;
  }

  const hmacOf = (secret: KeyObject, organizationId: string, body: string) =>
    createHmac('sha256', secret).update(`${organizationId}.${body}`).digest('base64url');
  const sign = (kid: number, organizationId: string, body: string) =>
    hmacOf(secretOf(kid), organizationId, body);
  const verifies = (kid: number, organizationId: string, body: string, signature: string) =>
    safeEqual(signature, sign(kid, organizationId, body)) ||
    fallbacksOf(kid).some((secret) => safeEqual(signature, hmacOf(secret, organizationId, body)));

  return {
    async encode(list, organizationId, position) {
      const { current } = await keys();
      const payload: Payload = { k: current, l: list, t: position.createdAt.getTime(), i: position.id };
      const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
      return `${body}.${sign(current, organizationId, body)}`;
    },

    async decode(list, organizationId, cursor) {
      const [body, signature, extra] = cursor.split('.');
      if (!body || !signature || extra !== undefined || !B64URL.test(body) || !B64URL.test(signature))
        throw invalid();
      let payload: Payload;
      try {
        payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
      } catch {
        throw invalid();
      }
      if (
        typeof payload !== 'object' ||
        payload === null ||
        !Number.isSafeInteger(payload.k) ||
        typeof payload.l !== 'string' ||
        !Number.isSafeInteger(payload.t) ||
        typeof payload.i !== 'string' ||
        !isUuid(payload.i)
      ) {
        throw invalid();
      }
      const { valid } = await keys(payload.k);
      if (!valid.has(payload.k)) throw invalid();
      if (!verifies(payload.k, organizationId, body, signature)) throw invalid();
      if (payload.l !== list) throw invalid();
      return { createdAt: new Date(payload.t), id: payload.i };
    },

    async rotate() {
      const [row] = await db.query<{ id: number }>(
        `WITH retired AS (UPDATE cursor_keys SET retired_at = now() WHERE retired_at IS NULL)
         INSERT INTO cursor_keys DEFAULT VALUES RETURNING id`,
      );
      await load();
      return (row as { id: number }).id;
    },
  };
}
