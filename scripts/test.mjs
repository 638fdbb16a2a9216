// Runs the suite on the embedded database with rate limits in memory, then, when
// TEST_DATABASE_URL and TEST_REDIS_URL are set, once more on PostgreSQL and Redis.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

function collect(dir, out = []) {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) collect(path, out);
    else if (name.endsWith('.test.ts')) out.push(path);
  }
  return out;
}

const only = process.argv.slice(2);
const files = only.length
  ? only
  : [...collect('src'), ...collect('test'), ...collect('packages/client/test')].sort();
const runs = [
  { name: 'embedded PGlite, in-memory limits', env: { TEST_DATABASE_URL: '', TEST_REDIS_URL: '' } },
];
if (process.env.TEST_DATABASE_URL && process.env.TEST_REDIS_URL) {
  runs.push({ name: 'PostgreSQL and Redis', env: {} });
}

let failed = false;
for (const run of runs) {
  console.log(`\n# suite on ${run.name} (node ${process.version})`);
  const result = spawnSync(
    process.execPath,
    ['--import', 'tsx', '--test', '--test-concurrency=2', '--test-reporter=spec', ...files],
    { stdio: 'inherit', env: { ...process.env, ...run.env } },
  );
  if (result.status !== 0) failed = true;
}
process.exit(failed ? 1 : 0);
