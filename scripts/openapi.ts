// npm run openapi: writes openapi/openapi.json from the route schemas. With --check it writes
// nothing and fails when the committed file differs from what the routes generate.
import { readFileSync, writeFileSync } from 'node:fs';
import { generatedDocument } from '../src/apps/openapi-document.js';

export const DOCUMENT_PATH = new URL('../openapi/openapi.json', import.meta.url);

const text = await generatedDocument();
if (process.argv.includes('--check')) {
  let committed = '';
  try {
    committed = readFileSync(DOCUMENT_PATH, 'utf8');
  } catch {}
  if (committed !== text) {
    console.error(
      'openapi/openapi.json is not what the routes generate: run `npm run openapi` and commit it.',
    );
    process.exit(1);
  }
  console.log('openapi/openapi.json matches the routes.');
} else {
  writeFileSync(DOCUMENT_PATH, text);
  console.log(`wrote openapi/openapi.json (${text.length} bytes)`);
}
