// A worker's deliveries: those it claimed and holds, queued per webhook in their claim's order, and
// those with attempts in flight. The claim runs ahead of the attempts (up to HOLD times its budget
// in leases), so a slot that frees can start the next attempt at once instead of after a claim.
//
// A held delivery is sent only once it is armed: the database has heard, in an exchange, that the
// worker sends it next, so that a lease given back after a crash counts as an attempt exactly when
// it may have been sent. Each exchange arms, per webhook, what will start before the next one: of a
// webhook with attempts that ended since the last exchange, all it holds (a receiver that answers
// turns its slots over within an exchange); of any other, one per free slot (the claim itself arms
// those of what it claims). A receiver that hangs gets nothing armed ahead. A crash counts at most
// those as attempts that were never sent.
//
// An attempt starts within three limits: the worker's budget (SVC_WEBHOOK_CONCURRENCY), the
// webhook's bound (SVC_WEBHOOK_CONCURRENCY_PER_WEBHOOK, less the attempts a previous owner still
// has in flight there while its partition changes hands, as each exchange reads them) and the organization's fair share of the
// budget (the budget divided among the organizations it holds deliveries of, never above seven
// eighths of it, so a newcomer finds room beside a tenant whose receivers hang). Organizations take
// turns, and so do the webhooks of each, a webhook it held nothing of first. A hanging attempt
// costs a socket, not a core, so the budget is sized for receivers that hang for the whole time-out.
//
// A delivery held until too near its lease's end to be attempted and written within it is let go
// unsent (`released`), as are those a worker lets go itself (`drop`): their leases go back uncounted.
import type { Claimed } from './engine.js';

export interface Held {
  claimed: Claimed;
  /** When its lease ends, by the worker's clock. */
  leaseEndsAt: number;
  /** The database has heard that it is sent next. */
  armed: boolean;
}

export interface LocalQueue {
  readonly running: number;
  readonly queued: number;
  /** Queued deliveries armed: they start as slots free, with no exchange. */
  readonly armedWaiting: number;
  /** Leases the worker may still claim: its budget four times over, less what it holds. */
  room(): number;
  hold(claimed: Claimed, leaseEndsAt: number): void;
  /** The next armed delivery to attempt, counted as in flight from now; null when none may start. */
  take(now: number): Held | null;
  /**
   * The deliveries to arm at this exchange (see above), and the webhooks whose attempts ended since
   * the last one: the claim arms all it takes of those.
   */
  toArm(): { ids: string[]; answering: string[]; shared: string[] };
  /**
   * Attempts other workers have in flight at these webhooks now (answered for `shared`); true when
   * slots freed where deliveries wait to be armed (the next exchange arms them).
   */
  othersInFlight(counts: ReadonlyMap<string, number>): boolean;
  /** The exchange that armed `ids` was written. */
  armed(ids: readonly string[]): void;
  /** Its attempt ended (its outcome is the batch's now). */
  end(claimed: Claimed): void;
  /** Lets go of the queued deliveries `keep` refuses (the worker lost their partition, their webhook went inactive). */
  drop(keep: (claimed: Claimed) => boolean): void;
  /** Leases let go unsent since the last call (the next exchange gives them back uncounted). */
  released(): string[];
  /** An exchange failed: the leases it was to let go are let go by the next. */
  untold(released: readonly string[]): void;
  /** Deliveries held or in flight, by organization (the claim's fair share reads it). */
  byOrganization(): Map<string, number>;
  /** Webhooks with deliveries held or in flight. */
  webhooks(): Iterable<string>;
  /** The deliveries with attempts in flight. */
  runningIds(): string[];
}

interface Hook {
  queue: Held[];
  running: number;
  /** Attempts that ended since the last exchange. */
  ended: number;
  /** Attempts of other workers in flight (a previous owner's): they count against the bound. */
  others: number;
  /** It had a turn since it was held (it goes behind those that had none). */
  served: boolean;
}
interface Org {
  running: number;
  hooks: Map<string, Hook>;
}

/**
 * A worker holds up to this many times its budget in leases, and as many times each webhook's
 * bound: a receiver that answers within an exchange finds its next deliveries armed (the
 * graphile-worker reference fetches four times its concurrency ahead, too).
 */
export const HOLD = 4;

export function localQueue(limits: {
  budget: number;
  bound: number;
  /** A held delivery starts only this long before its lease ends: time for the attempt and its outcome. */
  startWithinMs: number;
}): LocalQueue {
  const orgs = new Map<string, Org>();
  const running = new Set<string>();
  let queued = 0;
  let armedWaiting = 0;
  let released: string[] = [];
  const byId = new Map<string, Held>();

  const hookOf = (c: Claimed): Hook => {
    const org = orgs.get(c.organization_id) ?? { running: 0, hooks: new Map<string, Hook>() };
    orgs.set(c.organization_id, org);
    let hook = org.hooks.get(c.webhook_id);
    if (hook === undefined) {
      // A webhook the worker held nothing of (one it just took over) goes before those that had a
      // turn: behind them it would wait a turn of each.
      hook = { queue: [], running: 0, ended: 0, others: 0, served: false };
      const rest = [...org.hooks];
      org.hooks.clear();
      for (const [id, h] of rest) if (!h.served) org.hooks.set(id, h);
      org.hooks.set(c.webhook_id, hook);
      for (const [id, h] of rest) if (h.served) org.hooks.set(id, h);
    }
    return hook;
  };
  const tidy = (orgId: string, org: Org, hookId: string, hook: Hook) => {
    if (hook.running === 0 && hook.queue.length === 0) org.hooks.delete(hookId);
    if (org.hooks.size === 0) orgs.delete(orgId);
  };
  const letGo = (held: Held) => {
    released.push(held.claimed.id);
    byId.delete(held.claimed.id);
    queued--;
    if (held.armed) armedWaiting--;
  };
  const fairShare = () =>
    Math.max(
      1,
      Math.min(
        Math.ceil(limits.budget / Math.max(orgs.size, 1)),
        limits.budget - Math.ceil(limits.budget / 8),
      ),
    );

  return {
    get running() {
      return running.size;
    },
    get queued() {
      return queued;
    },
    get armedWaiting() {
      return armedWaiting;
    },
    room: () => HOLD * limits.budget - running.size - queued,
    hold(claimed, leaseEndsAt) {
      const held = { claimed, leaseEndsAt, armed: claimed.armed };
      const hook = hookOf(claimed);
      hook.others = claimed.others_sent;
      hook.queue.push(held);
      byId.set(claimed.id, held);
      queued++;
      if (held.armed) armedWaiting++;
    },
    take(now) {
      if (running.size >= limits.budget) return null;
      const fair = fairShare();
      for (const [orgId, org] of orgs) {
        if (org.running >= fair) continue;
        for (const [hookId, hook] of org.hooks) {
          while (hook.queue.length > 0 && (hook.queue[0] as Held).leaseEndsAt - limits.startWithinMs <= now) {
            letGo(hook.queue.shift() as Held);
          }
          if (hook.running + hook.others >= limits.bound || !hook.queue[0]?.armed) {
            tidy(orgId, org, hookId, hook);
            continue;
          }
          const held = hook.queue.shift() as Held;
          queued--;
          armedWaiting--;
          byId.delete(held.claimed.id);
          hook.running++;
          org.running++;
          running.add(held.claimed.id);
          // Turns: this webhook and this organization go to the back.
          hook.served = true;
          org.hooks.delete(hookId);
          org.hooks.set(hookId, hook);
          orgs.delete(orgId);
          orgs.set(orgId, org);
          return held;
        }
      }
      return null;
    },
    toArm() {
      const ids: string[] = [];
      const answering: string[] = [];
      const shared: string[] = [];
      for (const org of orgs.values()) {
        for (const [hookId, hook] of org.hooks) {
          if (hook.ended > 0) answering.push(hookId);
          if (hook.others > 0) shared.push(hookId);
          // A previous owner's attempts hold slots too: armed beside them, a delivery would show as
          // being delivered while it waits, and a crash would count it.
          const wanted =
            hook.ended > 0 ? hook.queue.length : Math.max(0, limits.bound - hook.running - hook.others);
          hook.ended = 0;
          for (const h of hook.queue.slice(0, wanted)) if (!h.armed) ids.push(h.claimed.id);
        }
      }
      return { ids, answering, shared };
    },
    othersInFlight(counts) {
      let freed = false;
      for (const org of orgs.values()) {
        for (const [hookId, hook] of org.hooks) {
          const n = counts.get(hookId);
          if (n === undefined) continue;
          if (n < hook.others && hook.queue.some((h) => !h.armed)) freed = true;
          hook.others = n;
        }
      }
      return freed;
    },
    armed(ids) {
      for (const id of ids) {
        const held = byId.get(id);
        if (held && !held.armed) {
          held.armed = true;
          armedWaiting++;
        }
      }
    },
    end(claimed) {
      if (!running.delete(claimed.id)) return;
      const org = orgs.get(claimed.organization_id);
      const hook = org?.hooks.get(claimed.webhook_id);
      if (!org || !hook) return;
      hook.running--;
      hook.ended++;
      org.running--;
      tidy(claimed.organization_id, org, claimed.webhook_id, hook);
    },
    drop(keep) {
      for (const [orgId, org] of orgs) {
        for (const [hookId, hook] of org.hooks) {
          const kept = hook.queue.filter((h) => keep(h.claimed));
          for (const h of hook.queue) if (!kept.includes(h)) letGo(h);
          hook.queue = kept;
          tidy(orgId, org, hookId, hook);
        }
      }
    },
    released() {
      const ids = released;
      released = [];
      return ids;
    },
    untold(r) {
      released.push(...r);
    },
    byOrganization() {
      const held = new Map<string, number>();
      for (const [orgId, org] of orgs) {
        let n = org.running;
        for (const hook of org.hooks.values()) n += hook.queue.length;
        held.set(orgId, n);
      }
      return held;
    },
    *webhooks() {
      for (const org of orgs.values()) yield* org.hooks.keys();
    },
    runningIds: () => [...running],
  };
}
