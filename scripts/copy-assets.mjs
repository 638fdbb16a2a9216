// tsc compiles TypeScript only; the SQL migrations travel beside the compiled code.
import { cpSync } from 'node:fs';

cpSync('src/db/migrations', 'dist/db/migrations', { recursive: true });
