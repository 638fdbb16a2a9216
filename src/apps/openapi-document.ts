// The document as `npm run openapi` writes it and the test compares it: the public application is
// built with inert dependencies (registering routes touches none of them) and asked for its own
// GET /openapi.json, so the file is exactly what a running server serves.

import { loadConfig } from '../config.js';
import { createMetrics } from '../http/metrics.js';
import { createLogger } from '../logger.js';
import { LOCAL_SERVER } from '../openapi/document.js';
import type { Deps } from './deps.js';
import { buildPublicApp, PUBLIC_PREFIX } from './public.js';

/** A dependency that must not be used while only building the routes. */
function inert(name: string): never {
  return new Proxy(
    {},
    {
      get(_target, property) {
        if (property === 'then') return undefined;
        throw new Error(`${name}.${String(property)} used while generating the OpenAPI document`);
      },
    },
  ) as never;
}

export async function generatedDocument(): Promise<string> {
  const deps: Deps = {
    config: loadConfig({}),
    db: inert('db'),
    logger: createLogger('silent'),
    identities: inert('identities'),
    limiter: inert('limiter'),
    metrics: createMetrics(),
    cursors: inert('cursors'),
    secrets: inert('secrets'),
    now: Date.now,
  };
  const app = await buildPublicApp(deps);
  try {
    // As the server of a local `npm start` serves it: the server url's defaults are its own.
    const res = await app.inject({
      method: 'GET',
      url: `${PUBLIC_PREFIX}/openapi.json`,
      headers: { host: LOCAL_SERVER.host },
    });
    if (res.statusCode !== 200) throw new Error(`GET openapi.json answered ${res.statusCode}: ${res.body}`);
    return `${JSON.stringify(JSON.parse(res.body), null, 2)}\n`;
  } finally {
    await app.close();
  }
}
