// GET /docs: an interactive reference of the published document (Scalar's API reference: search,
// the samples of `x-codeSamples`, responses collapsed per status, and its client for "try it"),
// every asset served by this service. The Content-Security-Policy allows only this origin, so the
// page cannot load anything from elsewhere even by mistake; the configuration turns off what would
// try (fonts, telemetry, the agent chat, the request proxy).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import type { App } from '../http/kit.js';

const CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  // The renderer sets styles on elements at run time.
  "style-src 'self' 'unsafe-inline'",
  "font-src 'self' data:",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

// The bundle is `@scalar/api-reference`'s standalone build, shipped inside the devDependency
// `@scalar/fastify-api-reference` (a few small packages, where `@scalar/api-reference` itself
// brings 287). A build copies it into dist/, so the image needs no development dependency.
function bundlePath(): string {
  // `npm run build` copies it there (scripts/copy-assets.mjs).
  const built = fileURLToPath(new URL('./assets/scalar-api-reference.js', import.meta.url));
  if (existsSync(built)) return built;
  const entry = createRequire(import.meta.url).resolve('@scalar/fastify-api-reference');
  const source = join(dirname(entry), 'js', 'standalone.js');
  if (existsSync(source)) return source;
  throw new Error(`the reference page's bundle is missing: run \`npm run build\` (looked for ${built})`);
}

function page(documentUrl: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>SVC Integration API v1 — reference</title>
</head>
<body>
  <div id="reference" data-url="${documentUrl}"></div>
  <script src="/docs/scalar.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;
}

// An external script rather than an inline one, so the policy needs no 'unsafe-inline' for scripts.
// `hiddenClients: true` leaves the document's own samples (curl, the TypeScript client, Python)
// instead of a dozen generated ones that know nothing of the client package.
const INIT = `Scalar.createApiReference('#reference', {
  url: document.getElementById('reference').dataset.url,
  hiddenClients: true,
  withDefaultFonts: false,
  telemetry: false,
  agent: { disabled: true },
  showDeveloperTools: 'never',
  documentDownloadType: 'json',
  persistAuth: false,
  authentication: { preferredSecurityScheme: 'bearerAuth' },
});
`;

export function referenceRoutes(app: App, documentUrl: string): void {
  const bundle = readFileSync(bundlePath());
  // 3.6 MB as it is, 1.0 MB gzipped; compressed on the first request, not at every start.
  let gzipped: Buffer | undefined;
  const html = page(documentUrl);
  const config = { public: true };

  app.get('/docs', { config }, async (_request, reply) =>
    reply.header('content-security-policy', CSP).type('text/html; charset=utf-8').send(html),
  );
  app.get('/docs/init.js', { config }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').send(INIT),
  );
  // The bundle's version is pinned in the lock file: a day of caching is safe and spares reloads.
  app.get('/docs/scalar.js', { config }, async (request, reply) => {
    reply.header('cache-control', 'public, max-age=86400').header('vary', 'accept-encoding');
    reply.type('text/javascript; charset=utf-8');
    if (!/\bgzip\b/.test(request.headers['accept-encoding'] ?? '')) return reply.send(bundle);
    gzipped ??= gzipSync(bundle);
    return reply.header('content-encoding', 'gzip').send(gzipped);
  });
}
