// tsc compiles TypeScript only; the SQL migrations, the engine's functions and the portal's page
// travel beside the compiled code. The folder is
// replaced, not merged: a migration removed from the sources (one never released) must not stay in
// the build, where `svc` would apply it.
import { cpSync, rmSync } from 'node:fs';

rmSync('dist/db/migrations', { recursive: true, force: true });
cpSync('src/db/migrations', 'dist/db/migrations', { recursive: true });
cpSync('src/db/engine.sql', 'dist/db/engine.sql');
// The delivery portal's page, served from the package as written.
rmSync('dist/portal/assets', { recursive: true, force: true });
cpSync('src/portal/assets', 'dist/portal/assets', { recursive: true });
