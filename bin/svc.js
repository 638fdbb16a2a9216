#!/usr/bin/env node
// SIGTERM and SIGINT are caught before the program loads (src/signals.ts): a signal while it loads
// or starts then stops what started and exits 0 instead of killing the process.
import { catchStopSignalsFor } from '../dist/signals.js';

const signals = catchStopSignalsFor(process.argv[2]);
const { main } = await import('../dist/cli.js');

main(process.argv.slice(2), signals).then(
  (code) => {
    if (typeof code === 'number') process.exitCode = code;
  },
  (error) => {
    console.error(error instanceof Error ? error.message : error);
    process.exitCode = 1;
  },
);
