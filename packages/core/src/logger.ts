import pino, { type DestinationStream, type Logger } from "pino";

export type { DestinationStream, Logger };

/** Structured JSON logs on stdout, or on `destination` (tests capture them there); `level: "silent"` for tests. */
export function createLogger(options: { level: string; name: string; destination?: DestinationStream }): Logger {
  const settings: pino.LoggerOptions = {
    name: options.name,
    level: options.level,
    base: { service: options.name },
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: { paths: ["req.headers.authorization", "req.headers['x-api-key']", "*.password", "*.token"], remove: true },
  };
  return options.destination ? pino(settings, options.destination) : pino(settings);
}
