// Fastify's logger of one request, made only when the request logs something of its own. pino's
// child() serializes the request id into the child's bindings and builds the child's level methods
// on every request (about 1% of a billed request's CPU), while most requests log nothing but their
// access line, which logging.ts writes without a child.
import type { FastifyBaseLogger } from 'fastify';
import pino from 'pino';

type LogArguments = [unknown, ...unknown[]];

export class RequestLogger {
  #made: pino.Logger | undefined;

  constructor(
    private readonly parent: pino.Logger,
    private readonly bindings: pino.Bindings,
  ) {}

  /**
   * Fastify's childLoggerFactory: a RequestLogger when the child would only add bindings, pino's
   * own child when a route sets a level or serializers of its own (the child's level then differs).
   */
  static factory(
    this: unknown,
    logger: FastifyBaseLogger,
    bindings: pino.Bindings,
    options: pino.ChildLoggerOptions,
  ): FastifyBaseLogger {
    if (options.level !== undefined || options.serializers !== undefined) return logger.child(bindings, options);
    return new RequestLogger(logger as pino.Logger, bindings);
  }

  private get made(): pino.Logger {
    return (this.#made ??= this.parent.child(this.bindings));
  }

  /** The bindings as pino writes them in a line (`,"reqId":"…"` after the parent's own). */
  get chindings(): string {
    if (this.#made) return (this.#made as unknown as Record<symbol, string>)[pino.symbols.chindingsSym];
    let text = (this.parent as unknown as Record<symbol, string>)[pino.symbols.chindingsSym];
    for (const key of Object.keys(this.bindings)) {
      text += `,${JSON.stringify(key)}:${JSON.stringify(this.bindings[key])}`;
    }
    return text;
  }

  get level(): string {
    return this.#made?.level ?? this.parent.level;
  }

  set level(level: string) {
    this.made.level = level;
  }

  isLevelEnabled(level: string): boolean {
    return (this.#made ?? this.parent).isLevelEnabled(level);
  }

  child(bindings: pino.Bindings, options?: pino.ChildLoggerOptions): pino.Logger {
    return this.made.child(bindings, options);
  }

  fatal(...args: LogArguments) {
    this.write('fatal', args);
  }
  error(...args: LogArguments) {
    this.write('error', args);
  }
  warn(...args: LogArguments) {
    this.write('warn', args);
  }
  info(...args: LogArguments) {
    this.write('info', args);
  }
  debug(...args: LogArguments) {
    this.write('debug', args);
  }
  trace(...args: LogArguments) {
    this.write('trace', args);
  }
  silent() {}

  private write(level: pino.Level, args: LogArguments) {
    if (!this.isLevelEnabled(level)) return;
    (this.made[level] as (...args: LogArguments) => void)(...args);
  }
}
