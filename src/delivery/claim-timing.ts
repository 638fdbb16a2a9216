// When a worker claims. A claim is called for by a slot that freed (an attempt ended), by a change
// of its partitions, by deliveries announced in its partitions, by a retry it wrote falling due,
// and by the poll (SVC_WEBHOOK_POLL_MS since its last claim, which covers a notification lost with
// its connection). After a claim that found deliveries due but could take none (they wait for
// room that only an attempt ending frees), announcements wait SVC_WEBHOOK_IDLE_GAP_MS: a webhook at
// its bound with events streaming in would otherwise cost a claim per event.
export interface ClaimTiming {
  /** Deliveries were queued in the worker's partitions. */
  announced(): void;
  /** An attempt ended, or the partitions changed: room may have freed. */
  roomFreed(): void;
  /** A retry this worker wrote falls due at `at`. */
  retryAt(at: number): void;
  /** Whether a claim is called for now. */
  due(now: number): boolean;
  /**
   * A claim starts (or would, with the budget full): what called for it is answered, and what
   * comes while it runs calls for the next one (the claim's snapshot may have missed it).
   */
  begin(now: number): void;
  /** The claim ended; `blocked`: it took nothing though deliveries were due. */
  end(now: number, blocked: boolean): void;
  /** Milliseconds until a claim falls due by time alone. */
  waitMs(now: number): number;
}

export function claimTiming(timing: { pollMs: number; idleGapMs: number }): ClaimTiming {
  let freed = true;
  let announced = false;
  let lastClaimAt = Number.NEGATIVE_INFINITY;
  let blockedUntil = 0;
  let retryAt = Number.POSITIVE_INFINITY;
  return {
    announced() {
      announced = true;
    },
    roomFreed() {
      freed = true;
      blockedUntil = 0;
    },
    retryAt(at) {
      retryAt = Math.min(retryAt, at);
    },
    due: (now) =>
      freed || (announced && now >= blockedUntil) || now >= retryAt || now >= lastClaimAt + timing.pollMs,
    begin(now) {
      freed = false;
      announced = false;
      lastClaimAt = now;
      if (now >= retryAt) retryAt = Number.POSITIVE_INFINITY;
    },
    end(now, blocked) {
      // Room freed while the claim ran clears the gap (roomFreed), so only a claim that found
      // nothing new may start one.
      blockedUntil = blocked && !freed ? now + timing.idleGapMs : 0;
    },
    waitMs(now) {
      const announcedIn = announced ? Math.max(0, blockedUntil - now) : Number.POSITIVE_INFINITY;
      return Math.max(0, Math.min(lastClaimAt + timing.pollMs - now, retryAt - now, announcedIn));
    },
  };
}
