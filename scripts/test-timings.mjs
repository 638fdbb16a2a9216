// A second reporter for scripts/test.mjs: how long each test file took, from its process's start
// to its last report, written as JSON to its destination ({ "<file>": ms }). The next run starts
// the longest files first, so that the two lanes end together instead of one waiting on the last
// long file.
export default async function* timings(source) {
  const started = new Map();
  const ended = new Map();
  for await (const event of source) {
    const file = event.data?.file;
    if (!file) continue;
    if (event.type === 'test:dequeue' && event.data.name === file) started.set(file, performance.now());
    else ended.set(file, performance.now());
  }
  const result = {};
  for (const [file, at] of started) result[file] = Math.round((ended.get(file) ?? at) - at);
  yield `${JSON.stringify(result, null, 1)}\n`;
}
