// A DNS server for tests, on UDP loopback: answers A and AAAA queries from a table the test
// changes as it goes (to rebind a name between two lookups), NXDOMAIN for names it does not know,
// and nothing at all for names marked silent (a DNS that never answers). Every query is recorded.
import { createSocket } from 'node:dgram';
import type { AddressInfo } from 'node:net';
import ipaddr from 'ipaddr.js';

export interface DnsRecords {
  a?: string[];
  aaaa?: string[];
  /** seconds; 60 unless given */
  ttl?: number;
}

export interface DnsQuery {
  name: string;
  type: 'A' | 'AAAA' | number;
}

export interface DnsServer {
  /** `127.0.0.1:PORT`, for a resolver's servers. */
  server: string;
  queries: DnsQuery[];
  /** Sets (or replaces) the answer for a name; lower case, no trailing dot. */
  set(name: string, records: DnsRecords): void;
  /** The name gets no answer at all. */
  silence(name: string): void;
  close(): Promise<void>;
}

const TYPE_A = 1;
const TYPE_AAAA = 28;

/** `silentByDefault`: names not in the table get no answer instead of NXDOMAIN. */
export async function startDnsServer(options: { silentByDefault?: boolean } = {}): Promise<DnsServer> {
  const table = new Map<string, DnsRecords | 'silent'>();
  const queries: DnsQuery[] = [];
  const socket = createSocket('udp4');

  socket.on('message', (packet, peer) => {
    if (packet.length < 12) return;
    const { name, end } = readName(packet, 12);
    if (end + 4 > packet.length) return;
    const qtype = packet.readUInt16BE(end);
    queries.push({ name, type: qtype === TYPE_A ? 'A' : qtype === TYPE_AAAA ? 'AAAA' : qtype });
    const entry = table.get(name) ?? (options.silentByDefault ? 'silent' : undefined);
    if (entry === 'silent') return;
    const question = packet.subarray(12, end + 4);
    const answers: Buffer[] = [];
    if (entry) {
      const ttl = entry.ttl ?? 60;
      const list = qtype === TYPE_A ? (entry.a ?? []) : qtype === TYPE_AAAA ? (entry.aaaa ?? []) : [];
      for (const address of list) {
        const rdata = Buffer.from(ipaddr.parse(address).toByteArray());
        const rr = Buffer.alloc(12);
        rr.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
        rr.writeUInt16BE(qtype, 2);
        rr.writeUInt16BE(1, 4); // IN
        rr.writeUInt32BE(ttl, 6);
        rr.writeUInt16BE(rdata.length, 10);
        answers.push(rr, rdata);
      }
    }
    const header = Buffer.alloc(12);
    packet.copy(header, 0, 0, 2); // id
    const rd = packet.readUInt16BE(2) & 0x0100;
    header.writeUInt16BE(0x8000 | 0x0400 | rd | 0x0080 | (entry ? 0 : 3), 2); // QR AA RD RA, NXDOMAIN
    header.writeUInt16BE(1, 4);
    header.writeUInt16BE(answers.length / 2, 6);
    socket.send(Buffer.concat([header, question, ...answers]), peer.port, peer.address);
  });

  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  const { port } = socket.address() as AddressInfo;
  return {
    server: `127.0.0.1:${port}`,
    queries,
    set: (name, records) => table.set(name, records),
    silence: (name) => table.set(name, 'silent'),
    close: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

function readName(packet: Buffer, offset: number): { name: string; end: number } {
  const labels: string[] = [];
  let at = offset;
  while (at < packet.length) {
    const length = packet[at] ?? 0;
    at += 1;
    if (length === 0) break;
    labels.push(packet.toString('latin1', at, at + length).toLowerCase());
    at += length;
  }
  return { name: labels.join('.'), end: at };
}
