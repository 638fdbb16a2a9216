// Runs the test processes scripts/test.mjs made (process-<n>.mjs) in the order given,
// `concurrency` of them at a time (`node --test` would sort them by name): first the files that
// need a process of their own, then the lanes. Reports as `node --test --test-reporter=spec` on
// stdout, and each test file's time to the file named by the first argument
// (scripts/test-timings.mjs).
//
//   node [flags for the test processes] scripts/test-run.mjs <timings.json> <concurrency> <process>...
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
