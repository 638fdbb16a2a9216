// A worker's attempts in flight: its budget (SVC_WEBHOOK_CONCURRENCY) and what each organization
// holds of it, which the claim reads to keep every organization within its fair share
// (delivery_exchange in src/db/engine.sql). A hanging attempt costs a socket, not a core, so the
// budget is sized for receivers that hang for the whole time-out.
import type { Claimed } from './engine.js';

export interface InFlight {
  readonly size: number;
  /** Attempts that may still start within the budget. */
  free(): number;
  add(claimed: Claimed, done: Promise<void>): void;
  end(claimed: Claimed): void;
  /** Attempts in flight by organization. */
  byOrganization(): ReadonlyMap<string, number>;
  /** The deliveries whose attempts are in flight. */
  ids(): string[];
  /** The webhooks with attempts in flight. */
  webhooks(): Iterable<string>;
  /** Resolves once every attempt has ended, or after `graceMs`. */
  settle(graceMs: number): Promise<void>;
}

export function inFlight(budget: number): InFlight {
  const running = new Map<string, Promise<void>>();
  const hooks = new Map<string, number>();
  const orgs = new Map<string, number>();
  return {
    get size() {
      return running.size;
    },
    free: () => budget - running.size,
    add(claimed, done) {
      running.set(claimed.id, done);
      hooks.set(claimed.webhook_id, (hooks.get(claimed.webhook_id) ?? 0) + 1);
      orgs.set(claimed.organization_id, (orgs.get(claimed.organization_id) ?? 0) + 1);
    },
    end(claimed) {
      if (!running.delete(claimed.id)) return;
      const h = (hooks.get(claimed.webhook_id) ?? 1) - 1;
      if (h > 0) hooks.set(claimed.webhook_id, h);
      else hooks.delete(claimed.webhook_id);
      const n = (orgs.get(claimed.organization_id) ?? 1) - 1;
      if (n > 0) orgs.set(claimed.organization_id, n);
      else orgs.delete(claimed.organization_id);
    },
    byOrganization: () => orgs,
    ids: () => [...running.keys()],
    webhooks: () => hooks.keys(),
    async settle(graceMs) {
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.all(running.values()),
        new Promise((resolve) => {
          timer = setTimeout(resolve, graceMs);
        }),
      ]);
      clearTimeout(timer);
    },
  };
}
