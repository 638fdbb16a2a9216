// npm run generate: the client's types and operation table from the published document.
// src/schema.ts: openapi-typescript's types of every path, operation and component.
// src/operations.ts: method, path and Idempotency-Key support of each operationId.
import { writeFileSync } from 'node:fs';
import { generatedSources } from './sources.js';

const { schema, operations } = await generatedSources();
writeFileSync(new URL('../src/schema.ts', import.meta.url), schema);
writeFileSync(new URL('../src/operations.ts', import.meta.url), operations);
console.log('wrote src/schema.ts and src/operations.ts');
