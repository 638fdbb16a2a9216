// `npm start` builds only when dist/ is older than what it is built from: tsc takes 8 to 17 s,
// this check a few milliseconds. A build leaves dist/.build-stamp; the build is current while
// nothing it reads (files and folders, so a deleted file counts too) is newer than the stamp.
// Run from the project folder (npm does): node scripts/build-if-stale.mjs
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, realpathSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const STAMP = 'dist/.build-stamp';
/** What `npm run build` reads, besides node_modules. */
export const INPUTS = [
  'src',
  'packages/client/src',
  'packages/client/package.json',
  'packages/client/tsconfig.json',
  'tsconfig.json',
  'package.json',
  'package-lock.json',
  'scripts/copy-assets.mjs',
];
/** What it writes that the service needs. */
const OUTPUTS = ['dist/cli.js', 'packages/client/dist/index.js'];

/** The newest modification time under `path` (the folder itself included), 0 when absent. */
function newest(path) {
  let stats;
  try {
    stats = statSync(path);
  } catch (error) {
    if (error.code === 'ENOENT') return 0;
    throw error;
  }
  let time = stats.mtimeMs;
  if (stats.isDirectory()) {
    for (const name of readdirSync(path)) time = Math.max(time, newest(join(path, name)));
  }
  return time;
}

/** Why `root` needs a build, or null when its dist/ is current. */
export function staleReason(root) {
  for (const output of OUTPUTS) if (!existsSync(join(root, output))) return `${output} is missing`;
  if (!existsSync(join(root, STAMP))) return 'no build stamp';
  const stamp = statSync(join(root, STAMP)).mtimeMs;
  for (const input of INPUTS) {
    if (newest(join(root, input)) > stamp) return `${input} changed since the last build`;
  }
  return null;
}

/** Builds `root` when it is stale; returns the exit code. */
export function buildIfStale(root) {
  const reason = staleReason(root);
  if (reason === null) return 0;
  process.stderr.write(`Building (${reason})…\n`);
  const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';
  const started = Date.now();
  const build = spawnSync(npm, ['run', 'build', '--silent'], { cwd: root, stdio: 'inherit' });
  if (build.status !== 0) return build.status ?? 1;
  // Dated when the build began: anything changed while it ran is newer and builds again next time.
  writeFileSync(join(root, STAMP), `${new Date(started).toISOString()}\n`);
  utimesSync(join(root, STAMP), started / 1000, started / 1000);
  return 0;
}

if (process.argv[1] && realpathSync(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = buildIfStale(process.cwd());
}
