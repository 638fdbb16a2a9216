// GET /docs: an interactive reference of the published document (Swagger UI, with "Try it out"),
// every asset served by this service from the swagger-ui-dist package. The Content-Security-Policy
// allows only this origin, so the page cannot load anything from elsewhere even by mistake.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { notFound } from '../http/errors.js';
import type { App } from '../http/kit.js';

const ASSETS: Record<string, string> = {
  'swagger-ui.css': 'text/css; charset=utf-8',
  'swagger-ui-bundle.js': 'text/javascript; charset=utf-8',
  'favicon-32x32.png': 'image/png',
};

const CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  // Swagger UI sets styles on elements at run time.
  "style-src 'self' 'unsafe-inline'",
  "connect-src 'self'",
  "frame-ancestors 'none'",
].join('; ');

function page(documentUrl: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>SVC Integration API v1 — reference</title>
  <link rel="icon" type="image/png" href="/docs/favicon-32x32.png">
  <link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
  <div id="swagger-ui" data-url="${documentUrl}"></div>
  <script src="/docs/swagger-ui-bundle.js"></script>
  <script src="/docs/init.js"></script>
</body>
</html>
`;
}

// An external script rather than an inline one, so the policy needs no 'unsafe-inline' for scripts.
const INIT = `window.ui = SwaggerUIBundle({
  url: document.getElementById('swagger-ui').dataset.url,
  dom_id: '#swagger-ui',
  deepLinking: true,
  displayOperationId: true,
  docExpansion: 'list',
  defaultModelsExpandDepth: 0,
  persistAuthorization: false,
  presets: [SwaggerUIBundle.presets.apis],
  layout: 'BaseLayout',
});
`;

export function referenceRoutes(app: App, documentUrl: string): void {
  const dir = dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  const files = new Map(Object.keys(ASSETS).map((name) => [name, readFileSync(join(dir, name))]));
  const html = page(documentUrl);
  const config = { public: true };

  app.get('/docs', { config }, async (_request, reply) =>
    reply.header('content-security-policy', CSP).type('text/html; charset=utf-8').send(html),
  );
  app.get('/docs/init.js', { config }, async (_request, reply) =>
    reply.type('text/javascript; charset=utf-8').send(INIT),
  );
  app.get<{ Params: { file: string } }>('/docs/:file', { config }, async (request, reply) => {
    const body = files.get(request.params.file);
    const type = ASSETS[request.params.file];
    if (!body || !type) throw notFound();
    // The package's version is in the lock file: a day of caching is safe and spares reloads.
    return reply.header('cache-control', 'public, max-age=86400').type(type).send(body);
  });
}
