// The master key against what is stored: whether it opens the sealed webhook secrets (checked at
// start and usable by readiness), which keys sealed them, and the re-seal under the current key
// that lets an older key be removed.
import type { Queryable } from '../db/db.js';
import { SealedSecretError, type SecretBox, sealedKeyId } from './secrets.js';

/** Webhooks whose secrets the start-up check opens: enough to catch a wrong key, cheap to read. */
export const CHECK_SAMPLE = 8;

interface SealedRow {
  id: string;
  secret: Uint8Array;
  previous_secret: Uint8Array | null;
}

/** A stored secret no key of the ring opens: its webhook and the key id it names (null: none). */
export interface Unopened {
  webhook_id: string;
  key_id: string | null;
}

export interface MasterKeyCheck {
  ok: boolean;
  /** The key that seals. */
  keyId: string;
  /** Sealed secrets tried (a webhook's secret and its previous one each count). */
  sampled: number;
  unopened: Unopened[];
  /** Why the key does not fit, naming the key ids the secrets expect; null when it does. */
  message: string | null;
}

const toBuffer = (b: Uint8Array) => Buffer.from(b.buffer, b.byteOffset, b.byteLength);

/** The key id a secret names when no key of the ring opens it; undefined when one does. */
function unopenedKeyId(box: SecretBox, sealed: Uint8Array, webhookId: string): string | null | undefined {
  try {
    box.open(toBuffer(sealed), webhookId);
    return undefined;
  } catch (error) {
    if (error instanceof SealedSecretError) return error.keyId;
    throw error;
  }
}

function unopenedOf(box: SecretBox, row: SealedRow): Unopened[] {
  const out: Unopened[] = [];
  for (const sealed of [row.secret, row.previous_secret]) {
    if (sealed === null) continue;
    const keyId = unopenedKeyId(box, sealed, row.id);
    if (keyId !== undefined) out.push({ webhook_id: row.id, key_id: keyId });
  }
  return out;
}

function describe(box: SecretBox, sampled: number, unopened: Unopened[]): string {
  const named = [...new Set(unopened.map((u) => u.key_id).filter((id) => id !== null))];
  const expected =
    named.length > 0
      ? `they are sealed under master key ${named.join(', ')}`
      : 'they are sealed in the format without a key id, under a key that is not configured';
  const ring = [box.keyId, ...box.fallbackKeyIds].join(', ');
  return `the master key (${ring}) does not open the webhook secrets already stored: ${unopened.length} of ${sampled} sampled did not open; ${expected}. Start with that key as SVC_MASTER_KEY, or list it in SVC_MASTER_KEY_FALLBACKS (docs/operations.md, "Rotating the master key")`;
}

/**
 * Opens the secrets of a few stored webhooks (the first by id, through the primary key) with the
 * ring. For start-up (`assertMasterKeyOpens`) and for a readiness probe: one indexed read of
 * CHECK_SAMPLE rows and at most twice as many AES-GCM opens.
 */
export async function masterKeyCheck(
  db: Queryable,
  box: SecretBox,
  sample = CHECK_SAMPLE,
): Promise<MasterKeyCheck> {
  const rows = await db.query<SealedRow>(
    'SELECT id, secret, previous_secret FROM webhooks ORDER BY id LIMIT $1',
    [sample],
  );
  const sampled = rows.reduce((n, r) => n + (r.previous_secret === null ? 1 : 2), 0);
  const unopened = rows.flatMap((row) => unopenedOf(box, row));
  const ok = unopened.length === 0;
  return { ok, keyId: box.keyId, sampled, unopened, message: ok ? null : describe(box, sampled, unopened) };
}

/** Refuses to start (throws) when the master key does not open the secrets already stored. */
export async function assertMasterKeyOpens(db: Queryable, box: SecretBox): Promise<void> {
  const check = await masterKeyCheck(db, box);
  if (!check.ok) throw new Error(`SVC_MASTER_KEY: ${check.message}`);
}

export interface SealedCount {
  /** The key id the secrets name; null for the format without one. */
  key_id: string | null;
  secrets: number;
}

/** How many stored secrets each key sealed (a whole read of the webhooks: an operator's question). */
export async function sealedCounts(db: Queryable): Promise<SealedCount[]> {
  const rows = await db.query<{ head: Uint8Array; secrets: number }>(
    `SELECT substring(s FROM 1 FOR 8) AS head, count(*)::int AS secrets
     FROM (SELECT secret AS s FROM webhooks
           UNION ALL SELECT previous_secret FROM webhooks WHERE previous_secret IS NOT NULL) sealed
     GROUP BY 1`,
  );
  const counts = new Map<string | null, number>();
  for (const row of rows) {
    const id = sealedKeyId(row.head);
    counts.set(id, (counts.get(id) ?? 0) + row.secrets);
  }
  return [...counts].map(([key_id, secrets]) => ({ key_id, secrets })).sort((a, b) => b.secrets - a.secrets);
}

export interface ResealBatch {
  resealed: number;
  unopened: Unopened[];
  /** Where the next batch starts (pass it as `after`); null when this batch reached the end. */
  next_after: string | null;
}

/** A row changed by someone else between its read and the re-seal is read again, this many times. */
const RACE_ROUNDS = 3;

/**
 * Re-seals under the current key the secrets of up to `limit` webhooks after `after` (by id) that
 * have one sealed otherwise. Each webhook is written only if its secrets are still the ones read
 * (a concurrent rotate-secret wins, and the row is read again), so integrators' rotations and
 * deliveries go on meanwhile: the ring opens either spelling. Idempotent: a secret already under
 * the current key is not selected, so a run interrupted anywhere is simply run again.
 */
export async function resealBatch(
  db: Queryable,
  box: SecretBox,
  options: { after: string | null; limit: number },
): Promise<ResealBatch> {
  const rows = await db.query<SealedRow>(
    `SELECT id, secret, previous_secret FROM webhooks
     WHERE ($1::uuid IS NULL OR id > $1::uuid)
       AND (substring(secret FROM 1 FOR 8) <> $2 OR substring(previous_secret FROM 1 FOR 8) <> $2)
     ORDER BY id LIMIT $3`,
    [options.after, box.header, options.limit],
  );
  const unopened: Unopened[] = [];
  let resealed = 0;
  let pending = rows;
  for (let round = 0; round < RACE_ROUNDS && pending.length > 0; round++) {
    const sealable = pending.filter((row) => {
      const failed = unopenedOf(box, row);
      unopened.push(...failed);
      return failed.length === 0;
    });
    const written = await writeResealed(db, box, sealable);
    resealed += written.size;
    const raced = sealable.filter((row) => !written.has(row.id)).map((row) => row.id);
    pending =
      raced.length === 0
        ? []
        : await db.query<SealedRow>(
            `SELECT id, secret, previous_secret FROM webhooks
             WHERE id = ANY($1::uuid[])
               AND (substring(secret FROM 1 FOR 8) <> $2 OR substring(previous_secret FROM 1 FOR 8) <> $2)`,
            [raced, box.header],
          );
  }
  const last = rows.at(-1);
  return { resealed, unopened, next_after: rows.length < options.limit || !last ? null : last.id };
}

/** Writes the re-sealed secrets of the rows whose secrets are unchanged; the ids written. */
async function writeResealed(db: Queryable, box: SecretBox, rows: SealedRow[]): Promise<Set<string>> {
  if (rows.length === 0) return new Set();
  const hex = (b: Uint8Array | null) => (b === null ? null : toBuffer(b).toString('hex'));
  const again = (b: Uint8Array | null, id: string) => {
    if (b === null) return null;
    const sealed = toBuffer(b);
    // Already under the current key: kept byte for byte.
    return sealed.subarray(0, box.header.length).equals(box.header)
      ? hex(sealed)
      : hex(box.seal(box.open(sealed, id), id));
  };
  // Hex text arrays: both drivers pass them alike, where arrays of bytea differ.
  const written = await db.query<{ id: string }>(
    `UPDATE webhooks w
     SET secret = decode(v.secret, 'hex'), previous_secret = decode(v.previous_secret, 'hex')
     FROM unnest($1::uuid[], $2::text[], $3::text[], $4::text[], $5::text[])
       AS v(id, secret, previous_secret, read_secret, read_previous)
     WHERE w.id = v.id AND w.secret = decode(v.read_secret, 'hex')
       AND w.previous_secret IS NOT DISTINCT FROM decode(v.read_previous, 'hex')
     RETURNING w.id`,
    [
      rows.map((r) => r.id),
      rows.map((r) => again(r.secret, r.id)),
      rows.map((r) => again(r.previous_secret, r.id)),
      rows.map((r) => hex(r.secret)),
      rows.map((r) => hex(r.previous_secret)),
    ],
  );
  return new Set(written.map((r) => r.id));
}
