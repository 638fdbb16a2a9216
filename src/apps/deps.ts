// What the applications are built from. The CLI makes these from the configuration; tests make
// them around a fresh database.
import type { FastifyBaseLogger } from 'fastify';
import type { Config } from '../config.js';
import type { Db } from '../db/db.js';
import type { ReadinessCheck } from '../health.js';
import type { IdentityCache } from '../http/auth.js';
import type { CursorCodec } from '../http/cursor.js';
import type { Metrics } from '../http/metrics.js';
import type { RateLimitStore } from '../ratelimit/store.js';
import type { SecretBox } from '../security/secrets.js';
import type { Resolver } from '../security/url-guard.js';

export interface Deps {
  config: Config;
  db: Db;
  logger: FastifyBaseLogger;
  identities: IdentityCache;
  limiter: RateLimitStore;
  metrics: Metrics;
  cursors: CursorCodec;
  /** Seals webhook secrets at rest. */
  secrets: SecretBox;
  /** Resolves webhook hosts for the SSRF guard (src/security/resolver.ts), shared by the API and a worker on the same thread. */
  resolve?: Resolver;
  now: () => number;
  /**
   * What readiness requires (the probes and the operator's /readyz); the database and the
   * migrations when absent. A check added here counts everywhere readiness is asked.
   */
  readinessChecks?: ReadinessCheck[];
}
