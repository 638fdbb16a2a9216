// When a worker claims, and where it looks. A claim is called for by room that freed (an attempt
// ended), by deliveries announced in its partitions, by a retry it wrote falling due, and by the
// poll (SVC_WEBHOOK_POLL_MS since its last look everywhere, which covers a notification lost with
// its connection). A claim walks only the partitions where it knows of work (announced, with
// attempts in flight, or left with deliveries due by the last claim); the poll, a retry falling
// due, an announcement that names no partition and a change of its partitions walk them all. After
// a claim that took nothing though deliveries were due (they wait for room that only an attempt
// ending frees), announcements wait SVC_WEBHOOK_IDLE_GAP_MS: a webhook at its bound with events
// streaming in would otherwise cost a claim per event.
export interface ClaimTiming {
  /** Deliveries were queued in these partitions (none named: anywhere). */
  announced(partitions?: readonly number[]): void;
  /** An attempt ended in this partition (none named: the partitions changed): room may have freed. */
  roomFreed(partition?: number): void;
  /** A retry this worker wrote falls due at `at`. */
  retryAt(at: number): void;
  /** Whether a claim is called for now. */
  due(now: number): boolean;
  /**
   * A claim starts: the partitions to walk, of `owned`. What called for it is answered; what comes
   * while it runs calls for the next one (the claim's snapshot may have missed it).
   */
  begin(now: number, owned: readonly number[], inFlight: Iterable<number>): number[];
  /** The claim ended, having taken `claimed`; `backlog`: the partitions where deliveries are still due. */
  end(now: number, claimed: number, backlog: readonly number[]): void;
  /** Milliseconds until a claim falls due by time alone. */
  waitMs(now: number): number;
}

export function claimTiming(timing: { pollMs: number; idleGapMs: number }): ClaimTiming {
  let freed = true;
  let announced = false;
  let everywhere = true;
  const hot = new Set<number>();
  let lastFullAt = Number.NEGATIVE_INFINITY;
  let blockedUntil = 0;
  let retryAt = Number.POSITIVE_INFINITY;
  const full = (now: number) => everywhere || now >= lastFullAt + timing.pollMs || now >= retryAt;
  return {
    announced(partitions) {
      announced = true;
      if (partitions === undefined) everywhere = true;
      else for (const p of partitions) hot.add(p);
    },
    roomFreed(partition) {
      freed = true;
      blockedUntil = 0;
      if (partition === undefined) everywhere = true;
      else hot.add(partition);
    },
    retryAt(at) {
      retryAt = Math.min(retryAt, at);
    },
    due: (now) => freed || (announced && now >= blockedUntil) || full(now),
    begin(now, owned, inFlight) {
      let walk: number[];
      if (full(now)) {
        walk = [...owned];
        lastFullAt = now;
        if (now >= retryAt) retryAt = Number.POSITIVE_INFINITY;
      } else {
        for (const p of inFlight) hot.add(p);
        walk = owned.filter((p) => hot.has(p));
      }
      freed = false;
      announced = false;
      everywhere = false;
      hot.clear();
      return walk;
    },
    end(now, claimed, backlog) {
      for (const p of backlog) hot.add(p);
      // Room freed while the claim ran clears the gap (roomFreed), so only a claim that found
      // nothing new may start one.
      blockedUntil = claimed === 0 && backlog.length > 0 && !freed ? now + timing.idleGapMs : 0;
    },
    waitMs(now) {
      const announcedIn = announced ? Math.max(0, blockedUntil - now) : Number.POSITIVE_INFINITY;
      return Math.max(0, Math.min(lastFullAt + timing.pollMs - now, retryAt - now, announcedIn));
    },
  };
}
