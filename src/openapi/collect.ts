// The routes an application registers, as the published document needs them: method, url, the
// route schema (the same TypeBox objects that validate requests and serialize responses) and the
// route config the guard and the idempotency hooks read. Collected by an onRoute hook, so a route
// cannot exist without being seen here.
import type { FastifyContextConfig, RouteOptions } from 'fastify';
import type { App } from '../http/kit.js';

export interface RouteSchema {
  params?: unknown;
  querystring?: unknown;
  body?: unknown;
  headers?: unknown;
  response?: Record<string, unknown>;
}

export interface CollectedRoute {
  method: string;
  /** Fastify's url, prefix included: `/api/v1/bookings/:id`. */
  url: string;
  schema: RouteSchema;
  config: FastifyContextConfig;
}

/** Starts collecting the routes registered on `app` from now on; the list fills as they are. */
export function collectRoutes(app: App): CollectedRoute[] {
  const routes: CollectedRoute[] = [];
  app.addHook('onRoute', (route: RouteOptions) => {
    const methods = Array.isArray(route.method) ? route.method : [route.method];
    for (const method of methods) {
      routes.push({
        method: method.toUpperCase(),
        url: route.url,
        schema: (route.schema ?? {}) as RouteSchema,
        config: (route.config ?? {}) as FastifyContextConfig,
      });
    }
  });
  return routes;
}
