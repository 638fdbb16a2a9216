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

export function createLogger(level: string, destination?: DestinationStream): FastifyBaseLogger {
  return pino(
    {
      level,
      redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
      // The query string can hold a cursor or an external id: log the path only.
      serializers: {
        req: (req: { method: string; url: string; ip?: string }) => ({
          method: req.method,
          path: req.url.split('?')[0],
          ip: req.ip,
        }),
      },
    },
    destination,
  ) as FastifyBaseLogger;
}
