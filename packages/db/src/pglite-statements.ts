/// <reference path="./pg-utils.d.ts" />
import { type PGlite, parse, protocol } from "@electric-sql/pglite";
import { PGliteDialect, type PGliteDialectConfig } from "kysely";
// node-postgres's own conversion of a parameter to its text (or binary) form.
import { prepareValue } from "pg/lib/utils.js";

type KyselyPglite = Extract<PGliteDialectConfig["pglite"], { query: unknown }>;

const { serialize } = protocol;

/**
 * One statement's whole exchange as one message: parse, bind, describe, execute, sync. Its
 * parameters go as the `pg` driver sends them, untyped, for the server to read as the
 * statement's types say (text, or binary for bytes): the same values mean the same thing on
 * PGlite as on a PostgreSQL server.
 */
function statementMessage(text: string, parameters: readonly unknown[]): Uint8Array {
  return Buffer.concat([
    serialize.parse({ text }),
    serialize.bind({ values: parameters.map((value) => prepareValue(value)) }),
    serialize.describe({ type: "P" }),
    serialize.execute({}),
    serialize.sync(),
  ]);
}

/** Kysely's dialect for PGlite, each statement sent in one exchange: the one way Kysely opens PGlite. */
export function pgliteDialect(pglite: PGlite): PGliteDialect {
  return new PGliteDialect({ pglite: pgliteInOneExchange(pglite) });
}

/**
 * PGlite as Kysely's PGlite dialect uses it, each statement sent to PGlite in one exchange.
 * PGlite's own `query` makes six (parse, describe the statement to learn its parameters'
 * types, bind, describe, execute, sync), each a call into PostgreSQL's main loop: half of a
 * small statement's 200 µs. Locking is PGlite's: a statement outside a transaction waits for
 * any transaction to end, and one inside runs as the transaction's turn; a statement's
 * exchange runs whole (PGlite executes a message synchronously), so nothing comes between
 * its parts. Results and errors are read by PGlite's own parser, with its type parsers.
 */
function pgliteInOneExchange(pglite: PGlite): KyselyPglite {
  async function run(text: string, parameters: readonly unknown[] = []) {
    const messages = await pglite.execProtocolStream(statementMessage(text, parameters), { syncToFs: false });
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
      const result = await pglite._runExclusiveTransaction(() => inTurn(text, parameters));
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
