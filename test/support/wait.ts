// Waiting on a condition the test can observe, instead of sleeping and hoping.
import assert from 'node:assert/strict';

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `fn` until it gives a value (undefined, false and errors count as "not yet"); fails naming
 * `what` (and the last error) after `timeoutMs`.
 */
export async function until<T>(
  what: string,
  fn: () => T | undefined | false | Promise<T | undefined | false>,
  timeoutMs = 60_000,
  everyMs = 20,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await fn();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline)
      assert.fail(`timed out after ${timeoutMs} ms waiting until ${what}${last ? ` (${last})` : ''}`);
    await sleep(everyMs);
  }
}
