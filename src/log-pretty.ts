// Log lines for a person at a terminal: the same records pino writes as JSON (redaction included,
// since they are formatted after it), one short line each. `SVC_LOG_FORMAT=auto` picks this when
// standard output is a terminal and NODE_ENV is not production; everywhere else the JSON stays.
import { Writable } from 'node:stream';

const LEVELS: Record<number, [name: string, color: string]> = {
  10: ['TRACE', '90'],
  20: ['DEBUG', '90'],
  30: ['INFO ', '32'],
  40: ['WARN ', '33'],
  50: ['ERROR', '31'],
  60: ['FATAL', '35'],
};

/** Fields every record has, or that the line shows in its own place. */
const SHOWN = new Set([
  'level',
  'time',
  'pid',
  'hostname',
  'msg',
  'reqId',
  'req',
  'res',
  'responseTime',
  'err',
]);

type Rec = Record<string, unknown>;

function clock(ms: unknown): string {
  const d = new Date(typeof ms === 'number' ? ms : Date.now());
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}.${String(d.getMilliseconds()).padStart(3, '0')}`;
}

function value(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  return JSON.stringify(v) ?? String(v);
}

type Req = { method?: string; path?: string };

/** Requests announced and not yet completed, by request id: the completion record names none. */
const MAX_OPEN_REQUESTS = 1000;

/**
 * One record as one line (and an error's stack under it); null for records not worth a line.
 * `open` carries the requests between Fastify's two records of each.
 */
export function formatRecord(record: Rec, colors: boolean, open = new Map<unknown, Req>()): string | null {
  const paint = (code: string, text: string) => (colors ? `\u001b[${code}m${text}\u001b[0m` : text);
  // Fastify announces every request twice; the completed line says all of it.
  if (record.msg === 'incoming request') {
    if (open.size >= MAX_OPEN_REQUESTS) open.delete(open.keys().next().value);
    open.set(record.reqId, record.req as Req);
    return null;
  }
  const [name, color] = LEVELS[Number(record.level)] ?? ['?    ', '0'];
  let message = String(record.msg ?? '');
  const req = (record.req as Req | undefined) ?? open.get(record.reqId);
  const res = record.res as { statusCode?: number } | undefined;
  if (record.msg === 'request completed') open.delete(record.reqId);
  if (record.msg === 'request completed' && req) {
    const ms = typeof record.responseTime === 'number' ? ` ${record.responseTime.toFixed(1)} ms` : '';
    message = `${req.method} ${req.path} ${res?.statusCode ?? ''}${ms}`;
  } else if (req) {
    message = `${message} (${req.method} ${req.path})`;
  }
  const extra = Object.entries(record)
    .filter(([k, v]) => !SHOWN.has(k) && v !== undefined)
    .map(([k, v]) => `${k}=${value(v)}`);
  let line = `${paint('90', clock(record.time))} ${paint(color, name)} ${message}`;
  if (extra.length > 0) line += `  ${paint('90', extra.join(' '))}`;
  const err = record.err as { message?: string; stack?: string } | undefined;
  if (err) line += `\n${String(err.stack ?? err.message).replace(/^/gm, '    ')}`;
  return line;
}

/** A destination for pino that writes formatted lines to `out`. Lines that are not JSON pass through. */
export function prettyStream(out: NodeJS.WritableStream, colors: boolean): Writable {
  const open = new Map<unknown, Req>();
  return new Writable({
    write(chunk, _encoding, done) {
      for (const text of String(chunk).split('\n')) {
        if (!text) continue;
        let record: Rec | null = null;
        try {
          record = JSON.parse(text) as Rec;
        } catch {
          out.write(`${text}\n`);
          continue;
        }
        const line = formatRecord(record, colors, open);
        if (line !== null) out.write(`${line}\n`);
      }
      done();
    },
  });
}

/** `auto`: pretty on a terminal, JSON otherwise (pipes, files, log collectors). */
export function wantsPretty(format: 'auto' | 'json' | 'pretty', isTTY: boolean | undefined): boolean {
  return format === 'pretty' || (format === 'auto' && isTTY === true);
}
