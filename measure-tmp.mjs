import { PGlite } from '@electric-sql/pglite';
import { openAsBlob } from 'node:fs';
const lap = (label, c, t) => { const d = process.cpuUsage(c); console.log(label, 'ms', Math.round(performance.now() - t), 'cpu', Math.round((d.user + d.system) / 1000)); };
for (const f of process.argv.slice(2)) {
  let c = process.cpuUsage(); let t = performance.now();
  const lite = new PGlite({ loadDataDir: await openAsBlob(f) });
  await lite.waitReady;
  lap(f.slice(-30), c, t);
  c = process.cpuUsage(); t = performance.now();
  await lite.close();
  lap('close', c, t);
}
