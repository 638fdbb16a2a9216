// How webhook host names become addresses, for the SSRF guard at POST/PATCH /webhooks and before
// every delivery attempt. `dns.lookup` (getaddrinfo) runs on libuv's four-thread pool with no
// time-out of its own: a few names whose DNS never answers would hold that pool, and with it every
// file read, every crypto.pbkdf2 and every other lookup of the process. c-ares
// (`dns.promises.Resolver`) asks DNS from the event loop instead, and every lookup here ends within
// `timeoutMs` whatever the servers do.
//
// One resolver serves the API and the worker of a process. Answers are cached by name for their
// record TTL, capped (60 s by default: a rebinding attacker gains nothing, since every attempt is
// judged on the addresses it then connects to); failures, time-outs included, for a few seconds;
// and lookups of the same name in flight are shared. `localhost` and its sub-names are loopback
// without asking DNS (RFC 6761); IP literals never reach here (the guard judges them directly).
// /etc/hosts is not read for other names: webhook destinations are public DNS names.
import { Resolver as DnsResolver } from 'node:dns/promises';

/** One address a host name resolved to. */
export interface Address {
  address: string;
  family: 4 | 6;
}

/** Resolves a host name to every address it has (the guard vets each one). */
export type Resolver = (hostname: string) => Promise<Address[]>;

export interface TargetResolverOptions {
  /** Every lookup settles within this: an answer, or an error whose code is ETIMEOUT. */
  timeoutMs: number;
  /** DNS servers (`ip` or `ip:port`); the system's (/etc/resolv.conf) when absent. */
  servers?: readonly string[];
  /** Upper bound on how long an answer is reused, whatever its TTL. */
  maxTtlMs?: number;
  /** How long a failure (no such name, no answer in time, a server error) is reused. */
  negativeTtlMs?: number;
  /** Names remembered at most; the oldest is forgotten first. */
  maxEntries?: number;
  now?: () => number;
}

const LOOPBACK: readonly Address[] = [
  { address: '127.0.0.1', family: 4 },
  { address: '::1', family: 6 },
];
// The family has no address, or the name does not exist: not an error while the other family answers.
const ABSENT = new Set(['ENODATA', 'ENOTFOUND']);

interface Answer {
  addresses: Address[];
  ttlMs: number;
}

interface Entry {
  /** Infinity while the lookup is in flight: later callers share it. */
  expires: number;
  answer: Promise<Address[]>;
}

export function createTargetResolver(options: TargetResolverOptions): Resolver {
  const {
    timeoutMs,
    maxTtlMs = 60_000,
    negativeTtlMs = 5_000,
    maxEntries = 10_000,
    now = Date.now,
  } = options;
  // Two tries, each half the budget; the timer below is what bounds the lookup, as c-ares backs
  // off between tries.
  const dns = new DnsResolver({ timeout: Math.max(50, Math.floor(timeoutMs / 2)), tries: 2 });
  if (options.servers?.length) dns.setServers([...options.servers]);
  const cache = new Map<string, Entry>();

  function remember(name: string, entry: Entry) {
    cache.delete(name);
    cache.set(name, entry);
    if (cache.size > maxEntries) {
      const oldest = cache.keys().next();
      if (!oldest.done) cache.delete(oldest.value);
    }
  }

  function ask(name: string): Promise<Answer> {
    return new Promise<Answer>((resolve, reject) => {
      const v4: Address[] = [];
      const v6: Address[] = [];
      let ttl = Number.POSITIVE_INFINITY;
      let pending = 2;
      let failure: NodeJS.ErrnoException | null = null;
      const settle = () => {
        clearTimeout(timer);
        const addresses = [...v4, ...v6];
        if (addresses.length > 0) resolve({ addresses, ttlMs: Math.min(ttl * 1000, maxTtlMs) });
        else reject(failure ?? notFound(name));
      };
      const timer = setTimeout(() => {
        // What arrived in time is used (the other family is still being asked); nothing is a time-out.
        if (v4.length === 0 && v6.length === 0) failure = timedOut(name, timeoutMs);
        pending = -1;
        settle();
      }, timeoutMs);
      timer.unref();
      const done = (error?: NodeJS.ErrnoException) => {
        if (error && !ABSENT.has(error.code ?? '')) failure = error;
        else if (error && !failure) failure = error;
        if (--pending === 0) settle();
      };
      const family = (found: Address[], records: Promise<{ address: string; ttl: number }[]>, kind: 4 | 6) =>
        records.then(
          (answer) => {
            if (pending < 0) return;
            for (const r of answer) {
              found.push({ address: r.address, family: kind });
              ttl = Math.min(ttl, r.ttl);
            }
            done();
          },
          (error) => pending >= 0 && done(error),
        );
      family(v4, dns.resolve4(name, { ttl: true }), 4);
      family(v6, dns.resolve6(name, { ttl: true }), 6);
    });
  }

  return (hostname) => {
    const name = hostname.toLowerCase().replace(/\.$/, '');
    if (name === 'localhost' || name.endsWith('.localhost'))
      return Promise.resolve(LOOPBACK.map((a) => ({ ...a })));
    const cached = cache.get(name);
    if (cached && cached.expires > now()) return cached.answer;
    const asked = ask(name);
    const entry: Entry = { expires: Number.POSITIVE_INFINITY, answer: asked.then((a) => a.addresses) };
    entry.answer.catch(() => {});
    remember(name, entry);
    asked.then(
      (a) => {
        entry.expires = now() + a.ttlMs;
      },
      () => {
        entry.expires = now() + negativeTtlMs;
      },
    );
    return entry.answer;
  };
}

function timedOut(name: string, timeoutMs: number): NodeJS.ErrnoException {
  return Object.assign(new Error(`DNS lookup of ${name} did not answer within ${timeoutMs} ms`), {
    code: 'ETIMEOUT',
    hostname: name,
  });
}

function notFound(name: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`DNS lookup of ${name} found no address`), {
    code: 'ENOTFOUND',
    hostname: name,
  });
}
