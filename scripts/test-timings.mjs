// A second reporter for scripts/test-run.mjs: how long each test file's process ran, written as
// JSON to its destination ({ "<file>": ms }). The next run starts the longest files first, so
// that the lanes end together instead of one waiting on the last long file. The file's own
// `test:complete` arrives when its process ends; the other events of a file wait for the files
// before it in the list to be reported, so their times are not the file's.
export default async function* timings(source) {
  const result = {};
  for await (const event of source) {
    const { file, name, details } = event.data ?? {};
    if (event.type === 'test:complete' && file && name === file)
      result[file] = Math.round(details.duration_ms);
  }
  yield `${JSON.stringify(result, null, 1)}\n`;
}
