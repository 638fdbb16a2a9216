// A master-key rotation and cursors: signed under the current master key, verified under it or a
// fallback, so a cursor issued before the rotation keeps working until the old key is removed.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { Queryable } from '../db/db.js';
import { createCursorCodec } from './cursor.js';
import { AppError } from './errors.js';

/** cursor_keys with one key in force. */
const db = { query: async () => [{ id: 1 }] } as unknown as Queryable;
const OLD = Buffer.alloc(32, 1);
const NEW = Buffer.alloc(32, 2);
const ORG = '0b6c5e2e-4c1c-4a8e-9a51-7b7e8e0f9a10';
const position = {
  createdAt: new Date('2026-11-20T10:00:00.000Z'),
  id: '1c7d6f3f-5d2d-4b9f-8b62-8c8f9f1a0b21',
};

const codec = (masterKey: Buffer, fallbackMasterKeys: Buffer[] = []) =>
  createCursorCodec({ db, masterKey, fallbackMasterKeys, refreshMs: 60_000 });

const invalidCursor = (error: unknown) => error instanceof AppError && error.code === 'invalid_cursor';

test('a cursor signed under an older master key decodes while that key is a fallback, and only then', async () => {
  const issued = await codec(OLD).encode('bookings', ORG, position);
  assert.deepEqual(await codec(NEW, [OLD]).decode('bookings', ORG, issued), position);
  await assert.rejects(codec(NEW).decode('bookings', ORG, issued), invalidCursor);
  // New cursors are signed under the current key: the old key alone does not verify them.
  const fresh = await codec(NEW, [OLD]).encode('bookings', ORG, position);
  await assert.rejects(codec(OLD).decode('bookings', ORG, fresh), invalidCursor);
  // The fallback does not loosen the binding to the organization or the list.
  await assert.rejects(codec(NEW, [OLD]).decode('bookings', position.id, issued), invalidCursor);
  await assert.rejects(codec(NEW, [OLD]).decode('events', ORG, issued), invalidCursor);
});
