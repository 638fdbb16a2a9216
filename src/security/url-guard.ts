// The SSRF guard for webhook destinations. An integrator chooses the url and the worker POSTs to it
// from inside our network, so the url is checked when a webhook is created or changed and again
// before every delivery attempt (DNS can change between the two). Only https on port 443 to public
// unicast addresses passes; addresses are judged after the WHATWG URL parser has normalised the
// host, because that is the host the HTTP client will use (`https://0x7f.1/` is 127.0.0.1).
import { isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { WebhookConfig } from '../config.js';
import { type Address, createTargetResolver, type Resolver } from './resolver.js';

type IPv4 = ipaddr.IPv4;
type IPv6 = ipaddr.IPv6;

export interface TargetPolicy {
  /** Development and tests only: any resolvable address and any port (still https, no credentials). */
  allowPrivateTargets: boolean;
  /**
   * Development and tests only: addresses in these CIDR ranges (or single addresses) pass although
   * not public, on any port; everything else is judged as usual. Narrower than allowPrivateTargets.
   */
  allowedPrivateRanges?: readonly string[];
}

/** The policy the configuration sets, for the API and the worker alike. */
export function targetPolicy(config: WebhookConfig): TargetPolicy {
  return {
    allowPrivateTargets: config.allowPrivateTargets,
    allowedPrivateRanges: config.allowedPrivateRanges,
  };
}

export type { Address, Resolver } from './resolver.js';

/** Seconds are plenty for DNS; a name that takes longer is treated as one that does not resolve. */
export const DEFAULT_DNS_TIMEOUT_MS = 3_000;
let shared: Resolver | undefined;
/** The process's resolver with the default settings (`./resolver.ts`), for callers given none. */
export const defaultResolver: Resolver = (hostname) => {
  shared ??= createTargetResolver({ timeoutMs: DEFAULT_DNS_TIMEOUT_MS });
  return shared(hostname);
};

export type TargetRefusal =
  | 'too_long'
  | 'invalid'
  | 'not_https'
  | 'port'
  | 'credentials'
  | 'unresolvable'
  | 'dns_timeout'
  | 'not_public';

export class TargetRefused extends Error {
  override readonly name = 'TargetRefused';
  constructor(
    readonly reason: TargetRefusal,
    message: string,
  ) {
    super(message);
  }
}

const MAX_URL_LENGTH = 500;
// Spaces and control characters are silently stripped or encoded by the URL parser, so the url we
// would call would differ from the one the integrator sees; refuse them instead.
const INVISIBLE = /[\p{Cc}\s]/u;

/** Syntax only (no DNS): max 500 chars, https, port 443, no credentials, a host. Returns the parsed URL. */
export function checkTargetSyntax(raw: string, policy: TargetPolicy): URL {
  if (raw.length > MAX_URL_LENGTH) {
    throw new TargetRefused('too_long', `La url no puede superar ${MAX_URL_LENGTH} caracteres.`);
  }
  if (INVISIBLE.test(raw)) {
    throw new TargetRefused('invalid', 'La url no puede contener espacios ni caracteres de control.');
  }
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new TargetRefused('invalid', 'La url no es válida.');
  }
  if (url.protocol !== 'https:') throw new TargetRefused('not_https', 'La url debe usar https://.');
  if (url.username !== '' || url.password !== '') {
    throw new TargetRefused('credentials', 'La url no puede llevar usuario ni contraseña.');
  }
  if (url.hostname === '') throw new TargetRefused('invalid', 'La url no tiene host.');
  // The parser drops an explicit default port (`:443`, `:0443`), so any port left is not 443.
  // With private ranges allowed, the port is judged with the addresses (any port is fine in them).
  if (url.port !== '' && !policy.allowPrivateTargets && !policy.allowedPrivateRanges?.length) {
    throw new TargetRefused('port', 'La url debe usar el puerto 443.');
  }
  return url;
}

/**
 * Syntax and resolution: every address the host resolves to must be public (a name resolving to one
 * public and one private address is refused, as the client could connect to either). IP literals are
 * judged without DNS. Returns the addresses that passed, for the sender to pin its connection to.
 */
export async function vetTarget(
  raw: string,
  policy: TargetPolicy,
  resolve: Resolver = defaultResolver,
): Promise<{ url: URL; addresses: Address[] }> {
  const url = checkTargetSyntax(raw, policy);
  const host = unbracket(url.hostname);
  const family = isIP(host);
  let addresses: Address[];
  if (family === 4 || family === 6) {
    addresses = [{ address: host, family }];
  } else {
    try {
      addresses = await resolve(host);
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      if (code === 'ETIMEOUT') {
        throw new TargetRefused('dns_timeout', `El host ${host} no resolvió a tiempo: su DNS no respondió.`);
      }
      const why = typeof code === 'string' ? ` (${code})` : '';
      throw new TargetRefused('unresolvable', `No se pudo resolver el host ${host}${why}.`);
    }
    if (addresses.length === 0) {
      throw new TargetRefused('unresolvable', `El host ${host} no resuelve a ninguna dirección.`);
    }
  }
  if (!policy.allowPrivateTargets) {
    const allowed = allowedRanges(policy);
    for (const { address } of addresses) {
      const parsed = parseAddress(address);
      if (parsed && within(parsed, allowed)) continue;
      if (!parsed || !isPublic(parsed)) {
        const of = family === 0 ? ` (de ${host})` : '';
        throw new TargetRefused('not_public', `La dirección ${address}${of} no es pública.`);
      }
      if (url.port !== '') throw new TargetRefused('port', 'La url debe usar el puerto 443.');
    }
  }
  return { url, addresses };
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

// ---- Address classification ------------------------------------------------------------------
// ipaddr.js parses and matches; the lists below say what is refused, for the reader to check
// against the IANA special-purpose registries.

type Cidr = [IPv4 | IPv6, number];

// IANA special-purpose IPv4 registry (RFC 6890 and successors) plus multicast and reserved space.
const V4_NOT_PUBLIC: readonly Cidr[] = [
  '0.0.0.0/8',
  '10.0.0.0/8',
  '100.64.0.0/10',
  '127.0.0.0/8',
  '169.254.0.0/16',
  '172.16.0.0/12',
  '192.0.0.0/24',
  '192.0.2.0/24',
  '192.88.99.0/24',
  '192.168.0.0/16',
  '198.18.0.0/15',
  '198.51.100.0/24',
  '203.0.113.0/24',
  '224.0.0.0/4',
  '240.0.0.0/4', // includes 255.255.255.255
].map((c) => ipaddr.parseCIDR(c));

// Ranges that carry an IPv4 address in their last 32 bits: the embedded address decides
// (::ffff:127.0.0.1 is loopback, 64:ff9b::a00:1 is 10.0.0.1 through NAT64).
const V6_LAST_32_BITS_V4: readonly Cidr[] = ['::ffff:0:0/96', '64:ff9b::/96'].map((c) => ipaddr.parseCIDR(c));
// 6to4 carries it in bits 16 to 48 (2002:7f00:1:: is 127.0.0.1).
const V6_6TO4 = ipaddr.parseCIDR('2002::/16');

// Listed for the reader; everything outside 2000::/3 (global unicast) is refused anyway, so a
// block IANA assigns later outside it stays refused until someone decides otherwise.
const V6_NOT_PUBLIC: readonly Cidr[] = [
  '::/96', // unspecified, loopback and the deprecated IPv4-compatible ::a.b.c.d
  '64:ff9b:1::/48',
  '100::/64',
  '2001::/23', // IETF protocol assignments, Teredo 2001::/32 included
  '2001:db8::/32',
  '3fff::/20', // documentation (RFC 9637)
  '5f00::/16', // SRv6 SIDs (RFC 9602)
  'fc00::/7',
  'fe80::/10',
  'fec0::/10',
  'ff00::/8',
].map((c) => ipaddr.parseCIDR(c));
const V6_GLOBAL_UNICAST = ipaddr.parseCIDR('2000::/3');

const within = (address: IPv4 | IPv6, ranges: readonly Cidr[]) =>
  ranges.some(([base, bits]) => base.kind() === address.kind() && address.match(base, bits));

/**
 * The address as ipaddr.js reads it, or null. Only the strict text forms Node accepts (a dotted
 * quad, RFC 4291 IPv6): ipaddr.js would also read `0x7f.1`, which the URL parser has already
 * turned into a dotted quad, and which a resolver never returns.
 */
function parseAddress(address: string): IPv4 | IPv6 | null {
  const bare = unbracket(address).replace(/%.*$/, '');
  return isIP(bare) === 0 ? null : ipaddr.parse(bare);
}

/** True for a public unicast IPv4 or IPv6 address (brackets and a zone id are tolerated); false for anything else. */
export function isPublicAddress(address: string): boolean {
  const parsed = parseAddress(address);
  return parsed !== null && isPublic(parsed);
}

function isPublic(address: IPv4 | IPv6): boolean {
  if (address.kind() === 'ipv4') return !within(address, V4_NOT_PUBLIC);
  const v6 = address as IPv6;
  if (within(v6, V6_LAST_32_BITS_V4)) return isPublic(embeddedV4(v6, 6));
  if (within(v6, [V6_6TO4])) return isPublic(embeddedV4(v6, 1));
  if (within(v6, V6_NOT_PUBLIC)) return false;
  return v6.match(V6_GLOBAL_UNICAST);
}

/** The IPv4 address held in the two 16-bit groups of an IPv6 address starting at group `at`. */
function embeddedV4(address: IPv6, at: number): IPv4 {
  const high = address.parts[at] ?? 0;
  const low = address.parts[at + 1] ?? 0;
  return new ipaddr.IPv4([high >> 8, high & 0xff, low >> 8, low & 0xff]);
}

const parsedRanges = new WeakMap<readonly string[], Cidr[]>();

function allowedRanges(policy: TargetPolicy): readonly Cidr[] {
  const entries = policy.allowedPrivateRanges;
  if (!entries?.length) return [];
  let parsed = parsedRanges.get(entries);
  if (!parsed) {
    parsed = parseRanges(entries);
    parsedRanges.set(entries, parsed);
  }
  return parsed;
}

/** Parses CIDR ranges (or single addresses) for TargetPolicy.allowedPrivateRanges; throws on a bad one. */
export function parseRanges(entries: readonly string[]): Cidr[] {
  return entries.map((entry) =>
    entry.includes('/')
      ? ipaddr.parseCIDR(entry)
      : ((a) => [a, a.kind() === 'ipv4' ? 32 : 128] as Cidr)(ipaddr.parse(entry)),
  );
}
