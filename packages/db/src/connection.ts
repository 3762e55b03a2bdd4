import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { PGlite } from "@electric-sql/pglite";
import { pg_trgm } from "@electric-sql/pglite/contrib/pg_trgm";
import { type CompiledQuery, Kysely, PostgresDialect, sql } from "kysely";
import pg from "pg";
import { pgliteSession } from "./pglite-statements.ts";
import type { Database } from "./schema.ts";

/** Where the data lives: a PostgreSQL server, or an embedded PGlite (a directory, or memory). */
export type DatabaseTarget =
  | {
      kind: "postgres";
      url: string;
      poolSize?: number;
      /**
       * A connection straight to the server when `url` is a transaction pooler (PgBouncer):
       * LISTEN needs a session of its own, which a pooler does not keep. Default: `url`.
       */
      directUrl?: string;
    }
  | { kind: "pglite"; dataDir?: string; loadFrom?: Blob };

export type Unlisten = () => Promise<void>;

/** One open database: the query builder plus the few things Kysely does not cover. */
export interface DatabaseHandle {
  readonly kind: DatabaseTarget["kind"];
  readonly db: Kysely<Database>;
  /** Resolves when the database answers a trivial query within `timeoutMs`. */
  ping(timeoutMs?: number): Promise<void>;
  /** Calls `onPayload` for each NOTIFY on `channel` (lower-case letters, digits and `_`). */
  listen(channel: string, onPayload: (payload: string) => void): Promise<Unlisten>;
  notify(channel: string, payload: string): Promise<void>;
  close(): Promise<void>;
  /** PGlite's only: a write that shares the commit of the next statement (see `PgliteSession.commitWithNext`). */
  commitWithNext?(query: CompiledQuery): Promise<void>;
}

const INT8_OID = 20;

/**
 * Extensions the migrations create, loaded into every PGlite (a PostgreSQL server ships
 * them as contrib modules): pg_trgm indexes the registry mirror's search.
 */
export const pgliteExtensions = { pg_trgm };
const CHANNEL = /^[a-z_][a-z0-9_]{0,62}$/;

function assertChannel(channel: string): void {
  if (!CHANNEL.test(channel)) throw new Error(`invalid notification channel: ${channel}`);
}

export async function openDatabase(target: DatabaseTarget): Promise<DatabaseHandle> {
  return target.kind === "postgres"
    ? openPostgres(target.url, target.poolSize ?? 10, target.directUrl ?? target.url)
    : openPglite(target);
}

async function withTimeout<T>(work: Promise<T>, timeoutMs: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} timed out after ${timeoutMs} ms`)), timeoutMs);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}

/**
 * PGlite files must have one process at a time; a second would corrupt them. The lock
 * holds the owner's pid, so a lock left by a process that died is taken over.
 */
function lockDataDir(dataDir: string): () => void {
  const lockFile = join(dataDir, "platform.lock");
  try {
    writeFileSync(lockFile, String(process.pid), { flag: "wx" });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const owner = Number(readFileSync(lockFile, "utf8"));
    if (owner && owner !== process.pid && isRunning(owner)) {
      throw new Error(`data directory ${dataDir} is in use by process ${owner}`);
    }
    writeFileSync(lockFile, String(process.pid));
  }
  return () => rmSync(lockFile, { force: true });
}

/**
 * The listeners of a PGlite session's channels. A NOTIFY reaches the session in the answer
 * to the statement that commits it: read by PGlite for its own statements (a transaction's
 * BEGIN and COMMIT, `exec`), which hands it to `onNotification`, and by pglite-statements.ts
 * for Kysely's, which hands it to `deliver`; either way it comes here, once.
 */
class PgliteNotifications {
  /** Each channel listened to: its LISTEN, and who is told of its notifications. */
  readonly #channels = new Map<string, { listening: Promise<unknown>; listeners: Set<(payload: string) => void> }>();

  constructor(private readonly pglite: PGlite) {
    pglite.onNotification(this.deliver);
  }

  readonly deliver = (channel: string, payload: string) => {
    for (const onPayload of this.#channels.get(channel)?.listeners ?? []) queueMicrotask(() => onPayload(payload));
  };

  /** `channel` is a checked name (CHANNEL): it goes into LISTEN as it is. */
  async listen(channel: string, onPayload: (payload: string) => void): Promise<Unlisten> {
    let entry = this.#channels.get(channel);
    if (!entry) {
      const created = {
        listening: this.pglite.exec(`listen ${channel}`),
        listeners: new Set<(payload: string) => void>(),
      };
      created.listening.catch(() => {
        if (this.#channels.get(channel) === created) this.#channels.delete(channel);
      });
      this.#channels.set(channel, created);
      entry = created;
    }
    await entry.listening;
    const { listeners } = entry;
    listeners.add(onPayload);
    return async () => {
      listeners.delete(onPayload);
      if (listeners.size > 0 || this.#channels.get(channel) !== entry) return;
      this.#channels.delete(channel);
      if (!this.pglite.closed) await this.pglite.exec(`unlisten ${channel}`);
    };
  }
}

async function openPglite(target: { dataDir?: string; loadFrom?: Blob }): Promise<DatabaseHandle> {
  let unlock = () => {};
  if (target.dataDir) {
    mkdirSync(target.dataDir, { recursive: true });
    unlock = lockDataDir(target.dataDir);
  }
  const pglite = await PGlite.create({
    dataDir: target.dataDir,
    loadDataDir: target.loadFrom,
    extensions: pgliteExtensions,
    parsers: { [INT8_OID]: (value: string) => Number(value) },
  });
  // A new WAL segment is not filled with zeros first (16 MB written at once, in the statement
  // that needs it: 100-200 ms of this process's one thread, every few seconds under load).
  // Checkpoints (checkpoint.ts) let segments be used again, so new ones are made only while
  // the WAL grows to its usual size.
  await pglite.exec("set wal_init_zero = off");
  const notifications = new PgliteNotifications(pglite);
  const session = pgliteSession(pglite, notifications.deliver);
  const db = new Kysely<Database>({ dialect: session.dialect });
  return {
    kind: "pglite",
    db,
    async ping(timeoutMs = 2000) {
      await withTimeout(pglite.query("select 1"), timeoutMs, "database ping");
    },
    async listen(channel, onPayload) {
      assertChannel(channel);
      return notifications.listen(channel, onPayload);
    },
    async notify(channel, payload) {
      assertChannel(channel);
      await sql`select pg_notify(${channel}, ${payload})`.execute(db);
    },
    async close() {
      await db.destroy();
      if (!pglite.closed) await pglite.close();
      unlock();
    },
    commitWithNext: session.commitWithNext,
  };
}

/**
 * The pool runs statements and transactions only, never state that outlives them (no
 * session advisory lock, LISTEN, SET or named prepared statement), so `url` may be a
 * transaction-pooling PgBouncer; LISTEN goes to `directUrl`.
 */
async function openPostgres(url: string, poolSize: number, directUrl: string): Promise<DatabaseHandle> {
  const types = {
    getTypeParser: ((oid: number, format?: "text" | "binary") =>
      oid === INT8_OID
        ? (value: string) => Number(value)
        : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
  };
  const pool = new pg.Pool({ connectionString: url, max: poolSize, connectionTimeoutMillis: 5000, types });
  // An idle client whose server went away emits here; the pool replaces it on next use.
  pool.on("error", () => {});
  // A checked-out client emits on itself instead (a connection reset mid-query): without a
  // listener that is an uncaught exception. The query has failed already, and the pool drops
  // the client when it is released.
  pool.on("connect", (client) => client.on("error", () => {}));
  const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
  const listener = new PostgresListener(directUrl);
  return {
    kind: "postgres",
    db,
    async ping(timeoutMs = 2000) {
      await withTimeout(pool.query("select 1"), timeoutMs, "database ping");
    },
    listen: (channel, onPayload) => listener.listen(channel, onPayload),
    async notify(channel, payload) {
      assertChannel(channel);
      await sql`select pg_notify(${channel}, ${payload})`.execute(db);
    },
    async close() {
      await listener.close();
      await db.destroy();
    },
  };
}

/**
 * One dedicated connection for LISTEN, shared by every subscriber of a process.
 * It reconnects by itself and listens again on every channel that still has handlers.
 */
class PostgresListener {
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private readonly handlers = new Map<string, Set<(payload: string) => void>>();
  /** Per channel, the LISTEN every later subscriber of that channel waits for. */
  private readonly listening = new Map<string, Promise<void>>();
  private closed = false;

  constructor(private readonly url: string) {}

  async listen(channel: string, onPayload: (payload: string) => void): Promise<Unlisten> {
    assertChannel(channel);
    let set = this.handlers.get(channel);
    if (!set) {
      set = new Set();
      this.handlers.set(channel, set);
      this.listening.set(
        channel,
        this.connection().then((client) => client.query(`LISTEN ${channel}`).then(() => {})),
      );
    }
    set.add(onPayload);
    try {
      await this.listening.get(channel);
    } catch (error) {
      // A subscription that reports failure must hear nothing later.
      this.forget(channel, onPayload);
      throw error;
    }
    return async () => {
      if (this.forget(channel, onPayload) && this.client && !this.closed) {
        await this.client.query(`UNLISTEN ${channel}`).catch(() => {});
      }
    };
  }

  /** Drops a handler; true when it was the channel's last. */
  private forget(channel: string, onPayload: (payload: string) => void): boolean {
    const current = this.handlers.get(channel);
    if (!current?.delete(onPayload) || current.size > 0) return false;
    this.handlers.delete(channel);
    this.listening.delete(channel);
    return true;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.handlers.clear();
    this.listening.clear();
    const client = this.client;
    this.client = undefined;
    await client?.end().catch(() => {});
  }

  private connection(): Promise<pg.Client> {
    if (this.client) return Promise.resolve(this.client);
    this.connecting ??= this.connect().finally(() => {
      this.connecting = undefined;
    });
    return this.connecting;
  }

  private async connect(): Promise<pg.Client> {
    const client = new pg.Client({ connectionString: this.url });
    client.on("notification", (message) => {
      for (const handler of this.handlers.get(message.channel) ?? []) {
        try {
          handler(message.payload ?? "");
        } catch (error) {
          // One subscriber's failure is its own: the others still hear the message.
          console.error(`listener on ${message.channel} failed: ${error instanceof Error ? error.message : error}`);
        }
      }
    });
    client.on("error", () => this.reconnectLater(client));
    client.on("end", () => this.reconnectLater(client));
    await client.connect();
    for (const channel of this.handlers.keys()) await client.query(`LISTEN ${channel}`);
    this.client = client;
    return client;
  }

  private reconnectLater(dead: pg.Client): void {
    if (this.client !== dead || this.closed) return;
    this.client = undefined;
    const retry = () => {
      if (this.closed || this.client || this.handlers.size === 0) return;
      this.connection().catch(() => setTimeout(retry, 1000));
    };
    setTimeout(retry, 200);
  }
}
