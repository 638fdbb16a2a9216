// The SSRF guard for webhook destinations. An integrator chooses the url and the worker POSTs to it
// from inside our network, so the url is checked when a webhook is created or changed and again
// before every delivery attempt (DNS can change between the two). Only https on port 443 to public
// unicast addresses passes; addresses are judged after the WHATWG URL parser has normalised the
// host, because that is the host the HTTP client will use (`https://0x7f.1/` is 127.0.0.1).
import { lookup } from 'node:dns/promises';
import { isIP } from 'node:net';

export interface TargetPolicy {
  /** Development and tests only: any resolvable address and any port (still https, no credentials). */
  allowPrivateTargets: boolean;
}

export interface Address {
  address: string;
  family: 4 | 6;
}

export type Resolver = (hostname: string) => Promise<Address[]>;

/** Every address the system resolver knows, in its own order: all of them are vetted, not just the first. */
export const systemResolver: Resolver = async (hostname) => {
  const found = await lookup(hostname, { all: true, verbatim: true });
  return found.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

export type TargetRefusal =
  | 'too_long'
  | 'invalid'
  | 'not_https'
  | 'port'
  | 'credentials'
  | 'unresolvable'
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
  if (url.port !== '' && !policy.allowPrivateTargets) {
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
  resolve: Resolver = systemResolver,
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
      const why = typeof code === 'string' ? ` (${code})` : '';
      throw new TargetRefused('unresolvable', `No se pudo resolver el host ${host}${why}.`);
    }
    if (addresses.length === 0) {
      throw new TargetRefused('unresolvable', `El host ${host} no resuelve a ninguna dirección.`);
    }
  }
  if (!policy.allowPrivateTargets) {
    for (const { address } of addresses) {
      if (!isPublicAddress(address)) {
        const of = family === 0 ? ` (de ${host})` : '';
        throw new TargetRefused('not_public', `La dirección ${address}${of} no es pública.`);
      }
    }
  }
  return { url, addresses };
}

function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

// ---- Address classification ------------------------------------------------------------------

type Range = readonly [bigint, number];

function v4(cidr: string): Range {
  const [base = '', bits = ''] = cidr.split('/');
  return [parseV4(base) ?? -1n, Number(bits)];
}

function v6(cidr: string): Range {
  const [base = '', bits = ''] = cidr.split('/');
  return [parseV6(base) ?? -1n, Number(bits)];
}

// IANA special-purpose IPv4 registry (RFC 6890 and successors) plus multicast and reserved space.
const V4_NOT_PUBLIC: readonly Range[] = [
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
].map(v4);

// Ranges that carry an IPv4 address: the embedded address decides (::ffff:127.0.0.1 is loopback).
const V6_MAPPED = v6('::ffff:0:0/96');
const V6_NAT64 = v6('64:ff9b::/96');
const V6_6TO4 = v6('2002::/16');

// Listed for the reader; everything outside 2000::/3 (global unicast) is refused anyway, so a
// block IANA assigns later outside it stays refused until someone decides otherwise.
const V6_NOT_PUBLIC: readonly Range[] = [
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
].map(v6);
const V6_GLOBAL_UNICAST = v6('2000::/3');

function inRange(value: bigint, [base, bits]: Range, width: number): boolean {
  const shift = BigInt(width - bits);
  return value >> shift === base >> shift;
}

/** True for a public unicast IPv4 or IPv6 address (brackets and a zone id are tolerated); false for anything else. */
export function isPublicAddress(address: string): boolean {
  const bare = unbracket(address).replace(/%.*$/, '');
  const family = isIP(bare);
  if (family === 4) {
    const value = parseV4(bare);
    return value !== null && isPublicV4(value);
  }
  if (family === 6) {
    const value = parseV6(bare);
    return value !== null && isPublicV6(value);
  }
  return false;
}

function isPublicV4(value: bigint): boolean {
  return !V4_NOT_PUBLIC.some((range) => inRange(value, range, 32));
}

function isPublicV6(value: bigint): boolean {
  if (inRange(value, V6_MAPPED, 128) || inRange(value, V6_NAT64, 128)) return isPublicV4(value & 0xffffffffn);
  if (inRange(value, V6_6TO4, 128)) return isPublicV4((value >> 80n) & 0xffffffffn);
  if (V6_NOT_PUBLIC.some((range) => inRange(value, range, 128))) return false;
  return inRange(value, V6_GLOBAL_UNICAST, 128);
}

/** Dotted quad as produced by the URL parser and the resolver; null if it is not exactly that. */
function parseV4(text: string): bigint | null {
  const parts = text.split('.');
  if (parts.length !== 4) return null;
  let value = 0n;
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return null;
    value = (value << 8n) | BigInt(part);
  }
  return value;
}

/** Any RFC 4291 text form (`::`, leading zeros omitted, trailing dotted quad) to a 128-bit integer. */
function parseV6(text: string): bigint | null {
  let body = text.toLowerCase();
  const lastColon = body.lastIndexOf(':');
  const tail = body.slice(lastColon + 1);
  if (tail.includes('.')) {
    const quad = parseV4(tail);
    if (quad === null) return null;
    body = `${body.slice(0, lastColon + 1)}${(quad >> 16n).toString(16)}:${(quad & 0xffffn).toString(16)}`;
  }
  const halves = body.split('::');
  if (halves.length > 2) return null;
  const head = halves[0] ? halves[0].split(':') : [];
  const rest = halves.length === 2 && halves[1] ? halves[1].split(':') : [];
  const missing = 8 - head.length - rest.length;
  if (halves.length === 2 ? missing < 1 : missing !== 0) return null;
  const groups = [...head, ...Array<string>(missing).fill('0'), ...rest];
  let value = 0n;
  for (const group of groups) {
    if (!/^[0-9a-f]{1,4}$/.test(group)) return null;
    value = (value << 16n) | BigInt(`0x${group}`);
  }
  return value;
}
