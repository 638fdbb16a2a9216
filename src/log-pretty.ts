// Log lines for a person at a terminal, by pino-pretty: the same records pino writes as JSON
// (redaction included, since they are formatted after it), one line each. `SVC_LOG_FORMAT=auto`
// picks this when standard output is a terminal and NODE_ENV is not production; everywhere else
// the JSON stays.
import { Writable } from 'node:stream';
import { type PrettyOptions, prettyFactory } from 'pino-pretty';

type Rec = Record<string, unknown>;

/** Fastify's request records say method, path, status and time in the message itself. */
function requestMessage(log: Rec, messageKey: string): string {
  const req = log.req as { method?: string; path?: string } | undefined;
  const res = log.res as { statusCode?: number } | undefined;
  let message = String(log[messageKey] ?? '');
  if (req) message += ` ${req.method} ${req.path}`;
  if (res?.statusCode !== undefined) message += ` ${res.statusCode}`;
  if (typeof log.responseTime === 'number') message += ` ${log.responseTime.toFixed(1)} ms`;
  return message;
}

export const PRETTY_OPTIONS: PrettyOptions = {
  translateTime: 'SYS:HH:MM:ss.l',
  ignore: 'pid,hostname,req,res,responseTime',
  singleLine: true,
  messageFormat: requestMessage,
};

/** A destination for pino that writes formatted lines to `out`. Lines that are not JSON pass through. */
export function prettyStream(out: NodeJS.WritableStream, colors: boolean): Writable {
  const pretty = prettyFactory({ ...PRETTY_OPTIONS, colorize: colors });
  return new Writable({
    write(chunk, _encoding, done) {
      for (const line of String(chunk).split('\n')) if (line) out.write(pretty(line));
      done();
    },
  });
}

/** `auto`: pretty on a terminal, JSON otherwise (pipes, files, log collectors). */
export function wantsPretty(format: 'auto' | 'json' | 'pretty', isTTY: boolean | undefined): boolean {
  return format === 'pretty' || (format === 'auto' && isTTY === true);
}
