// What a test process of scripts/test.mjs runs: test files one after the other, each in a suite
// named by its source, so that a file's hooks (before, after, beforeEach) stay with its own tests.
// A lane takes its next file from a queue the lanes share (takeFiles), the longest first, so that
// the lanes end together; a file that needs a process of its own runs alone (describeFile).
import { readdirSync, readFileSync, renameSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe } from 'node:test';

/**
 * Emitted on `process` when a file's suite ends. Code evaluated once a process (a module's own
 * `after`) cannot see where a file ends: test/support/processes.ts kills what the file started then.
 */
export const FILE_END = 'svc:test-file-end';

/**
 * Runs one file in a suite named `name`; resolves when the suite has ended. A file is imported
 * once the file before it has ended, as in a process of its own: what its import starts (a server,
 * a process) is its own, not overlapping another's tests. Nor would node:test place the tests of
 * files imported at once: it gives a test to the suite of the code that created it, and modules
 * shared by two imports are evaluated by the first.
 */
export function describeFile(name, url) {
  return new Promise((ended) =>
    describe(name, async () => {
      try {
        await import(url);
      } catch (error) {
        ended();
        throw error;
      }
      after(() => {
        process.emit(FILE_END, name);
        ended();
      });
    }),
  );
}

/**
 * Runs the files of the queue in `dir` until it is empty: each entry (a JSON [name, url]) is taken
 * by renaming it, which only one lane can do.
 */
export async function takeFiles(dir) {
  for (const entry of readdirSync(dir).sort()) {
    if (!/^\d+$/.test(entry)) continue; // taken (below)
    const taken = join(dir, `${entry}.${process.pid}`);
    try {
      renameSync(join(dir, entry), taken);
    } catch {
      continue; // another lane took it
    }
    const [name, url] = JSON.parse(readFileSync(taken, 'utf8'));
    await describeFile(name, url);
  }
}
