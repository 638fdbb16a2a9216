import type { Deps } from '../apps/deps.js';

/** What operator routes may use. */
export type OperatorDeps = Pick<Deps, 'db' | 'identities' | 'config' | 'metrics' | 'cursors'>;
