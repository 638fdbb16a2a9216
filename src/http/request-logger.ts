// The logger Fastify gives each request (`request.log`), made only when the request writes a line.
// pino builds a child for every request otherwise: its bindings serialized and the redaction of
// secrets prepared, about 5 µs, even at a level that writes nothing, which is every request of a
// service logging at `warn`. The line, when there is one, is the one pino's child would write.
import type { FastifyBaseLogger } from 'fastify';
import type { Bindings, ChildLoggerOptions } from 'pino';

type Level = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace';
type Write = (...args: unknown[]) => void;

/** pino's loggers can tell which levels they write; a logger that cannot is asked every time. */
const enabled = (logger: FastifyBaseLogger, level: Level) =>
  (logger as { isLevelEnabled?: (l: string) => boolean }).isLevelEnabled?.(level) ?? true;

class RequestLogger {
  #child: FastifyBaseLogger | undefined;
  readonly #parent: FastifyBaseLogger;
  #bindings: Bindings;

  constructor(parent: FastifyBaseLogger, bindings: Bindings) {
    this.#parent = parent;
    this.#bindings = bindings;
  }

  #real(): FastifyBaseLogger {
    this.#child ??= this.#parent.child(this.#bindings);
    return this.#child;
  }

  #write(level: Level, args: unknown[]): void {
    if (this.#child === undefined && !enabled(this.#parent, level)) return;
    (this.#real()[level] as Write)(...args);
  }

  get level(): string {
    return (this.#child ?? this.#parent).level;
  }

  set level(value: string) {
    this.#real().level = value;
  }

  fatal(...args: unknown[]) {
    this.#write('fatal', args);
  }
  error(...args: unknown[]) {
    this.#write('error', args);
  }
  warn(...args: unknown[]) {
    this.#write('warn', args);
  }
  info(...args: unknown[]) {
    this.#write('info', args);
  }
  debug(...args: unknown[]) {
    this.#write('debug', args);
  }
  trace(...args: unknown[]) {
    this.#write('trace', args);
  }
  silent() {}

  child(bindings: Bindings, options?: ChildLoggerOptions): FastifyBaseLogger {
    return this.#real().child(bindings, options);
  }

  /** pino's own: fields added to every later line. Before any line, only remembered. */
  setBindings(bindings: Bindings): void {
    if (this.#child) (this.#child as unknown as { setBindings(b: Bindings): void }).setBindings(bindings);
    else this.#bindings = { ...this.#bindings, ...bindings };
  }
}

/**
 * Fields every later line of a request carries, Fastify's `request completed` among them: the
 * tenant once a key is authenticated, the error code once an envelope is chosen. Costs nothing
 * when the request writes no line.
 */
export function addLogFields(log: FastifyBaseLogger, fields: Bindings): void {
  (log as { setBindings?: (b: Bindings) => void }).setBindings?.(fields);
}

/** Fastify's `childLoggerFactory`. A route with a log level of its own gets pino's child at once. */
export function requestLogger(
  parent: FastifyBaseLogger,
  bindings: Bindings,
  options: ChildLoggerOptions,
): FastifyBaseLogger {
  if (options.level !== undefined) return parent.child(bindings, options);
  return new RequestLogger(parent, bindings) as unknown as FastifyBaseLogger;
}
