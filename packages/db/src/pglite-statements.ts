/// <reference path="./pg-utils.d.ts" />
import { type PGlite, parse, protocol } from "@electric-sql/pglite";
import { PGliteDialect, type PGliteDialectConfig } from "kysely";
// node-postgres's own conversion of a parameter to its text (or binary) form.
import { prepareValue } from "pg/lib/utils.js";

type KyselyPglite = Extract<PGliteDialectConfig["pglite"], { query: unknown }>;

const { serialize } = protocol;

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

/** Kysely's dialect for PGlite, each statement sent in one exchange: the one way Kysely opens PGlite. */
export function pgliteDialect(pglite: PGlite): PGliteDialect {
  return new PGliteDialect({ pglite: pgliteInOneExchange(pglite) });
}

/**
 * PGlite as Kysely's PGlite dialect uses it, each statement sent to PGlite in one exchange
 * and kept prepared (`KeptStatements`).
 * PGlite's own `query` makes six (parse, describe the statement to learn its parameters'
 * types, bind, describe, execute, sync), each a call into PostgreSQL's main loop: half of a
 * small statement's 200 µs. Locking is PGlite's: a statement outside a transaction waits for
 * any transaction to end, and one inside runs as the transaction's turn; a statement's
 * exchange runs whole (PGlite executes a message synchronously), so nothing comes between
 * its parts. Results and errors are read by PGlite's own parser, with its type parsers.
 */
function pgliteInOneExchange(pglite: PGlite): KyselyPglite {
  const kept = new KeptStatements();
  async function run(text: string, parameters: readonly unknown[] = []) {
    const { message, failed } = kept.message(text, parameters);
    const messages = await pglite.execProtocolStream(message, { syncToFs: false }).catch((error: unknown) => {
      failed();
      throw error;
    });
    const [result] = parse.parseResults(messages, pglite.parsers, { rowMode: "object" });
    if (!result) throw new Error("PGlite answered a statement with no result");
    return result;
  }
  const inTurn = (text: string, parameters?: readonly unknown[]) =>
    pglite._runExclusiveQuery(() => run(text, parameters));
  return {
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
      const once = () => pglite._runExclusiveTransaction(() => inTurn(text, parameters));
      // Outside a transaction a statement whose kept plan no longer fits its tables failed
      // whole, and is prepared afresh when sent again.
      const result = await once().catch((error: unknown) => {
        if (planOutdated(error)) return once();
        throw error;
      });
      await pglite.syncToFs();
      return result as never;
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
}
