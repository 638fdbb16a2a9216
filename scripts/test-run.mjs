// Runs test files in the order given, `--test-concurrency` of them at a time: `node --test` sorts
// its files by name, so the longest-first order scripts/test.mjs chooses would be lost (the
// longest files, under test/webhooks/, started last and the run ended on one of them alone).
// Reports as `node --test --test-reporter=spec` on stdout, and each file's time to the file
// named by the first argument (scripts/test-timings.mjs).
//
//   node [flags for the test processes] scripts/test-run.mjs <timings.json> <concurrency> <file>...
// The test processes inherit this process's flags.
import { createWriteStream } from 'node:fs';
import { run } from 'node:test';
import { spec } from 'node:test/reporters';
import timings from './test-timings.mjs';

const [timingsFile, concurrency, ...files] = process.argv.slice(2);
const stream = run({ files, concurrency: Number(concurrency) });
// A failed test fails the run, as under `node --test`; a failing todo does not.
stream.on('test:fail', (test) => {
  if (!test.todo) process.exitCode = 1;
});
stream.compose(spec).pipe(process.stdout);
stream.compose(timings).pipe(createWriteStream(timingsFile));
