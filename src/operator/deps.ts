// What operator routes may use, declared here rather than taken from the composition root.
import type { Config } from '../config.js';
import type { Db } from '../db/db.js';
import type { ReadinessCheck } from '../health.js';
import type { IdentityCache } from '../http/auth.js';
import type { CursorCodec } from '../http/cursor.js';
import type { Metrics } from '../http/metrics.js';
import type { SecretBox } from '../security/secrets.js';

export interface OperatorDeps {
  db: Db;
  identities: IdentityCache;
  config: Config;
  metrics: Metrics;
  cursors: CursorCodec;
  /** The master-key ring: what the operator's re-seal seals under and opens with. */
  secrets: SecretBox;
  now?: () => number;
  readinessChecks?: readonly ReadinessCheck[];
}
