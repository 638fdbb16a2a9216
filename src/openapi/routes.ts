// GET /openapi.json: the published document, built from the routes of the application that serves
// it, once, on the first request. It needs no key (`config.public`). The server url's defaults are
// the scheme and host the request came to, so a tool reading the document from this server (the
// reference page at /docs, Prism, a code generator) resolves it to this server.
import type { App } from '../http/kit.js';
import type { CollectedRoute } from './collect.js';
import { openapiDocument } from './document.js';

/** A host header that can stand in the document as is: a name or an address, with an optional port. */
const HOST =
  /^(?:[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}[A-Za-z0-9])?)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$/;

// Markers the text is cut at, where each answer puts its own scheme and host.
const SCHEME_MARK = '@@scheme@@';
const HOST_MARK = '@@host@@';

export function openapiRoutes(app: App, routes: readonly CollectedRoute[], prefix: string): void {
  let parts: string[] | null = null;
  app.get('/openapi.json', { config: { public: true } }, async (request, reply) => {
    parts ??= JSON.stringify(
      openapiDocument(routes, prefix, { scheme: SCHEME_MARK as 'http', host: HOST_MARK }),
    ).split(new RegExp(`(${SCHEME_MARK}|${HOST_MARK})`));
    const scheme = request.protocol === 'https' ? 'https' : 'http';
    const host = HOST.test(request.host) && request.host.length <= 260 ? request.host : 'localhost';
    const text = parts.map((p) => (p === SCHEME_MARK ? scheme : p === HOST_MARK ? host : p)).join('');
    return reply.type('application/json; charset=utf-8').send(text);
  });
}
