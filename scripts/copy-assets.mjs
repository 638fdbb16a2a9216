// tsc compiles TypeScript only; the SQL migrations, the engine's functions, the portal's page and
// the reference page's bundle travel beside the compiled code. The folder is
// replaced, not merged: a migration removed from the sources (one never released) must not stay in
// the build, where `svc` would apply it.
import { cpSync, mkdirSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

rmSync('dist/db/migrations', { recursive: true, force: true });
cpSync('src/db/migrations', 'dist/db/migrations', { recursive: true });
cpSync('src/db/engine.sql', 'dist/db/engine.sql');
// The delivery portal's page, served from the package as written.
rmSync('dist/portal/assets', { recursive: true, force: true });
cpSync('src/portal/assets', 'dist/portal/assets', { recursive: true });
// GET /docs: the standalone bundle of Scalar's API reference, from a development dependency, so
// that the image (production dependencies only) serves it from dist/ (src/openapi/reference.ts).
const scalar = dirname(createRequire(import.meta.url).resolve('@scalar/fastify-api-reference'));
mkdirSync('dist/openapi/assets', { recursive: true });
cpSync(join(scalar, 'js', 'standalone.js'), 'dist/openapi/assets/scalar-api-reference.js');
