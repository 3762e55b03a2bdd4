/// <reference path="./pg-utils.d.ts" />
import { type PGlite, parse } from "@electric-sql/pglite";
import { type CompiledQuery, PGliteDialect, type PGliteDialectConfig } from "kysely";
// node-postgres's own conversion of a parameter to its text (or binary) form.
import { prepareValue } from "pg/lib/utils.js";
/**
 * node-postgres's own writer of protocol messages, not PGlite's copy of it: PGlite's measures
 * each string's UTF-8 length in a JavaScript loop over its characters, node-postgres's with
 * Buffer.byteLength. A bind carrying a run's 1.4 KB trigger took 31 µs to write with PGlite's
 * and takes 4 with this one; the messages are the same but for the result formats, which
 * this one states (one code, text) where PGlite's leaves them to their default (text).
 */
import { type DatabaseError, serialize } from "pg-protocol";
import type { BackendMessage, NotificationResponseMessage } from "pg-protocol/dist/messages.js";
import { Parser } from "pg-protocol/dist/parser.js";

type KyselyPglite = Extract<PGliteDialectConfig["pglite"], { query: unknown }>;

/** How many statements a PGlite keeps prepared, the least recently used let go of first. */
const KEPT_STATEMENTS = 256;

/**
 * The statements a PGlite session keeps prepared, by their text: a statement sent again is
 * bound to its prepared form, not parsed and analysed again, and after five executions
 * PostgreSQL may keep its plan too (a generic plan, when it costs no more than planning each
 * call with the parameters' values; one over the day partitions of runs leaves out, as it
 * starts, those its ids do not fall in). A prepared statement outlives transactions, and
 * PostgreSQL itself re-plans one whose tables changed (a migration, a new partition).
 */
class KeptStatements {
  readonly #names = new Map<string, string>();
  /** Statements whose preparation may have failed: let go of (closed) with the next exchange. */
  #doubtful: string[] = [];
  #counter = 0;

  /**
   * One statement's whole exchange as one message: its preparation when it is not kept yet,
   * bind, describe, execute, sync. Its parameters go as the `pg` driver sends them, untyped,
   * for the server to read as the statement's types say (text, or binary for bytes): the same
   * values mean the same thing on PGlite as on a PostgreSQL server. `failed` is to be called
   * when the exchange fails: the statement is let go of, since its preparation may be what
   * failed, or its plan may no longer fit its tables ("cached plan must not change result
   * type" after a migration); the next call prepares it afresh.
   */
  message(text: string, parameters: readonly unknown[]): { message: Uint8Array; failed: () => void } {
    // Closing a statement that does not exist is no error, and a close is not refused in a failed transaction.
    const parts = this.#doubtful.map((name) => serialize.close({ type: "S", name }));
    this.#doubtful = [];
    let name = this.#names.get(text);
    if (name === undefined) {
      const [oldest] = this.#names.size >= KEPT_STATEMENTS ? this.#names : [];
      if (oldest) {
        this.#names.delete(oldest[0]);
        parts.push(serialize.close({ type: "S", name: oldest[1] }));
      }
      name = `kept_${++this.#counter}`;
      parts.push(serialize.parse({ name, text }));
    } else {
      this.#names.delete(text);
    }
    this.#names.set(text, name);
    parts.push(
      serialize.bind({ statement: name, values: parameters.map((value) => prepareValue(value)) }),
      serialize.describe({ type: "P" }),
      serialize.execute({}),
      serialize.sync(),
    );
    const prepared = name;
    const failed = () => {
      if (this.#names.get(text) === prepared) this.#names.delete(text);
      this.#doubtful.push(prepared);
    };
    return { message: Buffer.concat(parts), failed };
  }
}

/** PostgreSQL's refusal to run a kept statement whose result's columns changed since it was planned. */
function planOutdated(error: unknown): boolean {
  return (
    error instanceof Error &&
    (error as { code?: unknown }).code === "0A000" &&
    error.message === "cached plan must not change result type"
  );
}

/** A NOTIFY that reached this session: its channel and payload. */
export type NotificationSink = (channel: string, payload: string) => void;

/** Kysely's dialect for a PGlite, and its way to write a statement with the next one (see `pgliteSession`). */
export interface PgliteSession {
  dialect: PGliteDialect;
  /**
   * Writes `query` in the transaction of the next statement Kysely sends this PGlite outside
   * a transaction (a query or a data change), before it, so that the two share one commit:
   * a small write's own transaction costs PGlite more than its rows do. Resolves once
   * that commit is made. When no statement comes by the end of the turn (from an immediate,
   * the next turn) and none is on its way, it is written alone. Should the shared
   * transaction fail, each is written again alone and answered as it fares alone: neither
   * fails because of the other.
   */
  commitWithNext(query: CompiledQuery): Promise<void>;
}

/**
 * Kysely's dialect for PGlite, each statement sent in one exchange: the one way Kysely opens
 * PGlite. The notifications its statements' answers carry go to `notified`, and to no
 * listener of PGlite's (see `readAnswer`); without one, they are dropped.
 */
export function pgliteSession(pglite: PGlite, notified: NotificationSink = () => {}): PgliteSession {
  const { driver, commitWithNext } = pgliteInOneExchange(pglite, notified);
  return { dialect: new PGliteDialect({ pglite: driver }), commitWithNext };
}

/** `pgliteSession`'s dialect alone. */
export function pgliteDialect(pglite: PGlite, notified: NotificationSink = () => {}): PGliteDialect {
  return pgliteSession(pglite, notified).dialect;
}

/** A statement waiting to be written with the next one (see `PgliteSession.commitWithNext`). */
interface Rider {
  text: string;
  parameters: readonly unknown[];
  resolve(): void;
  reject(error: unknown): void;
}

/** Statements that may run in a transaction block, and so may take riders into theirs (`vacuum` may not). */
const CAN_HOST = /^\s*(select|insert|update|delete|with)\b/i;

/**
 * A statement's answer as PGlite wrote it, read by node-postgres's parser rather than
 * PGlite's copy of it: 32 rows of a 1.3 KB jsonb took PGlite's 350–400 µs to read and take
 * node-postgres's 60 (46 KB of answer; a worker's claim of 32 runs reads as much). Its error, if any,
 * is node-postgres's DatabaseError, the same as a PostgreSQL server's through `pg`. Since
 * PGlite does not read the answer, it does not hand the notifications in it to its
 * listeners: they go to `notified`.
 */
function readAnswer(answer: Uint8Array, notified: NotificationSink) {
  const messages: BackendMessage[] = [];
  let error: DatabaseError | undefined;
  new Parser().parse(Buffer.from(answer.buffer, answer.byteOffset, answer.byteLength), (message) => {
    if (message.name === "error") error ??= message as DatabaseError;
    else if (message.name === "notification") {
      const { channel, payload } = message as NotificationResponseMessage;
      notified(channel, payload);
    } else messages.push(message);
  });
  return { messages, error };
}

/**
 * PGlite as Kysely's PGlite dialect uses it, each statement sent to PGlite in one exchange
 * and kept prepared (`KeptStatements`).
 * PGlite's own `query` makes six (parse, describe the statement to learn its parameters'
 * types, bind, describe, execute, sync), each a call into PostgreSQL's main loop: half of a
 * small statement's 200 µs. Locking is PGlite's: a statement outside a transaction waits for
 * any transaction to end, and one inside runs as the transaction's turn; a statement's
 * exchange runs whole (PGlite executes a message synchronously), so nothing comes between
 * its parts. Results are read by node-postgres's parser (`readAnswer`) and made rows by
 * PGlite's, with its type parsers.
 */
function pgliteInOneExchange(
  pglite: PGlite,
  notified: NotificationSink,
): { driver: KyselyPglite; commitWithNext: PgliteSession["commitWithNext"] } {
  const kept = new KeptStatements();
  const riders: Rider[] = [];
  /** Calls of `query` not answered yet: while there are any, one still to start takes the riders, or the last one answered writes them. */
  let unanswered = 0;
  async function run(text: string, parameters: readonly unknown[] = []) {
    const { message, failed } = kept.message(text, parameters);
    // Its answer as PGlite writes it, each part copied (a part is a view of PGlite's memory),
    // and read by no parser of PGlite's (its `execProtocolRaw` reads what it returns too).
    const parts: Uint8Array[] = [];
    const onRawData = (part: Uint8Array) => parts.push(part.slice());
    await pglite.execProtocolRawStream(message, { syncToFs: false, onRawData }).catch((error: unknown) => {
      failed();
      throw error;
    });
    const { messages, error } = readAnswer(
      parts.length === 1 ? (parts[0] as Uint8Array) : Buffer.concat(parts),
      notified,
    );
    if (error) {
      failed();
      throw error;
    }
    const [result] = parse.parseResults(messages as Parameters<typeof parse.parseResults>[0], pglite.parsers, {
      rowMode: "object",
    });
    if (!result) throw new Error("PGlite answered a statement with no result");
    return result;
  }
  const inTurn = (text: string, parameters?: readonly unknown[]) =>
    pglite._runExclusiveQuery(() => run(text, parameters));

  /**
   * Within PGlite's exclusive section: `taken` and then `host` (if any) in one transaction,
   * answering the riders once it commits; if it fails, each is written again alone.
   */
  async function writeTogether(taken: Rider[], host?: { text: string; parameters?: readonly unknown[] }) {
    let result: Awaited<ReturnType<typeof run>> | undefined;
    try {
      await inTurn("begin");
      for (const rider of taken) await inTurn(rider.text, rider.parameters);
      if (host) result = await inTurn(host.text, host.parameters);
      await inTurn("commit");
    } catch {
      await inTurn("rollback").catch(() => undefined);
      for (const rider of taken) await inTurn(rider.text, rider.parameters).then(rider.resolve, rider.reject);
      return host ? inTurn(host.text, host.parameters) : undefined;
    }
    for (const rider of taken) rider.resolve();
    return result;
  }

  /** The riders no statement took, written by themselves (failing them all if PGlite cannot be reached: it closed). */
  function writeRiders(): void {
    const taken = riders.splice(0);
    pglite
      ._runExclusiveTransaction(() => writeTogether(taken))
      .then(() => pglite.syncToFs())
      .catch((error: unknown) => {
        for (const rider of taken) rider.reject(error);
      });
  }

  /** With no statement on its way to take them along, the riders go alone. */
  function writeRidersIfIdle(): void {
    if (unanswered === 0 && riders.length > 0) writeRiders();
  }

  const driver: KyselyPglite = {
    get closed() {
      return pglite.closed;
    },
    get ready() {
      return pglite.ready;
    },
    get waitReady() {
      return pglite.waitReady;
    },
    close: () => pglite.close(),
    async query(text, parameters) {
      const once = () =>
        pglite._runExclusiveTransaction(() => {
          const taken = riders.length > 0 && CAN_HOST.test(text) ? riders.splice(0) : [];
          return taken.length > 0 ? writeTogether(taken, { text, parameters }) : inTurn(text, parameters);
        });
      unanswered++;
      try {
        // Outside a transaction a statement whose kept plan no longer fits its tables failed
        // whole, and is prepared afresh when sent again.
        const result = await once().catch((error: unknown) => {
          if (planOutdated(error)) return once();
          throw error;
        });
        await pglite.syncToFs();
        return result as never;
      } finally {
        unanswered--;
        writeRidersIfIdle();
      }
    },
    transaction: (callback) =>
      pglite.transaction((tx) =>
        callback({
          query: async (text, parameters) => {
            if (tx.closed) throw new Error("Transaction is closed");
            return (await inTurn(text, parameters)) as never;
          },
          rollback: () => tx.rollback(),
        }),
      ),
  };
  let lonelyCheck = false;
  function commitWithNext(query: CompiledQuery): Promise<void> {
    const written = new Promise<void>((resolve, reject) =>
      riders.push({ text: query.sql, parameters: query.parameters, resolve, reject }),
    );
    if (!lonelyCheck) {
      lonelyCheck = true;
      // A statement sent before this turn's immediates are through (from an immediate: the next
      // turn's) takes the riders along; if none was, and none is on its way, they go alone.
      setImmediate(() => {
        lonelyCheck = false;
        writeRidersIfIdle();
      });
    }
    return written;
  }
  return { driver, commitWithNext };
}
