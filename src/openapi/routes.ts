// GET /openapi.json: the published document, built from the routes of the application that serves
// it, once, on the first request. It needs no key (`config.public`).
import type { App } from '../http/kit.js';
import type { CollectedRoute } from './collect.js';
import { openapiDocument } from './document.js';

export function openapiRoutes(app: App, routes: readonly CollectedRoute[], prefix: string): void {
  let text: string | null = null;
  app.get('/openapi.json', { config: { public: true } }, async (_request, reply) => {
    text ??= JSON.stringify(openapiDocument(routes, prefix));
    return reply.type('application/json; charset=utf-8').send(text);
  });
}
