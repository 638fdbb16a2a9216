// CI's dependency audit: fails on a high or critical advisory in a production dependency. A
// registry that offers no audit endpoint (some mirrors answer 405) cannot fail the run by itself:
// the step says loudly that nothing was checked, and the run goes on.
import { spawnSync } from 'node:child_process';

const run = spawnSync('npm', ['audit', '--omit=dev', '--json'], { encoding: 'utf8' });
let report;
try {
  report = JSON.parse(run.stdout);
} catch {
  report = null;
}
const counts = report?.metadata?.vulnerabilities;
if (!counts) {
  const why =
    report?.message ?? report?.error?.summary ?? (run.stderr.trim().split('\n').pop() || 'no answer');
  console.log(`npm audit NOT MADE: the registry's audit endpoint did not answer (${why}).`);
  console.log('Production dependencies were not checked for advisories in this run.');
  process.exit(0);
}
const serious = (counts.high ?? 0) + (counts.critical ?? 0);
console.log(
  `npm audit: ${counts.critical ?? 0} critical, ${counts.high ?? 0} high, ${counts.moderate ?? 0} moderate, ${counts.low ?? 0} low (production dependencies)`,
);
if (serious > 0) {
  for (const [name, v] of Object.entries(report.vulnerabilities ?? {})) {
    if (v.severity === 'high' || v.severity === 'critical')
      console.error(`  ${v.severity}: ${name} ${v.range}`);
  }
  console.error('Fix it: upgrade, or an override in package.json.');
  process.exit(1);
}
