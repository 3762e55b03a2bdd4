import pino, { type Logger } from "pino";

export type { Logger };

/** Structured JSON logs on stdout; `level: "silent"` for tests. */
export function createLogger(options: { level: string; name: string }): Logger {
  return pino({
    name: options.name,
    level: options.level,
    base: { service: options.name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ["req.headers.authorization", "req.headers['x-api-key']", "*.password", "*.token"], remove: true },
  });
}
