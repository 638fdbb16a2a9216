// pino, with every place a secret could travel redacted.
import type { FastifyBaseLogger } from 'fastify';
import { type DestinationStream, pino } from 'pino';

export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["idempotency-key"]',
  'headers.authorization',
  '*.authorization',
  'key',
  '*.key',
  'secret',
  '*.secret',
  'token',
  '*.token',
  'operatorToken',
  '*.operatorToken',
  'masterKey',
  '*.masterKey',
  'secret_hash',
  '*.secret_hash',
];

// An API key or a webhook secret pasted into a path by mistake (a base URL built from the wrong
// variable) would otherwise be written with the path: its prefix stays, to say what it was.
const SECRET_SHAPE = /(svc_(?:live|test)_|whsec_)[A-Za-z0-9_+/=-]+/g;
const maskSecrets = (path: string) =>
  path.includes('svc_') || path.includes('whsec_') ? path.replace(SECRET_SHAPE, '$1[redacted]') : path;

export function createLogger(level: string, destination?: DestinationStream): FastifyBaseLogger {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      // The query string can hold a cursor or an external id: log the path only.
      serializers: {
        req: (req: { method: string; url: string; ip?: string }) => ({
          method: req.method,
          path: maskSecrets(req.url.split('?')[0] ?? ''),
          ip: req.ip,
        }),
      },
    },
    destination,
  ) as FastifyBaseLogger;
}
