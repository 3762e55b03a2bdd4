import { Writable } from "node:stream";
import { createLogger, type Logger } from "./logger.ts";

/** A logger at `info` whose lines a test reads back: `text()` is everything it wrote so far. */
export function capturedLogger(): { logger: Logger; text: () => string } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { logger: createLogger({ level: "info", name: "test", destination }), text: () => lines.join("") };
}
