// A second reporter for scripts/test-run.mjs: how long each test file ran, written as JSON to its
// destination ({ "<source file>": ms }), from the suite scripts/test-group.mjs names by the file.
// The next run shares the files out to processes by these times, so that the lanes end together
// instead of one waiting on the last long file.
export default async function* timings(source) {
  const result = {};
  for await (const event of source) {
    const { name, details } = event.data ?? {};
    if (event.type === 'test:complete' && /\.test\.ts$/.test(name ?? ''))
      result[name] = Math.round(details.duration_ms);
  }
  yield `${JSON.stringify(result, null, 1)}\n`;
}
