import { chmodSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";

/** Debian's `pgbouncer` (`apt-get install -y pgbouncer`). */
export const PGBOUNCER = "/usr/sbin/pgbouncer";

export interface RunningPgBouncer {
  /** `url` with its host and port replaced by the pooler's: the same database, through it. */
  through(url: string): string;
  stop(): Promise<void>;
}

/**
 * A PgBouncer in transaction pooling mode on a loopback port, in front of the server of
 * `serverUrl` (every database on it, trust authentication as on the test server). It will
 * not run as root, so as root it runs as the `postgres` user.
 */
export async function startPgBouncer(serverUrl: string, port: number): Promise<RunningPgBouncer> {
  const server = new URL(serverUrl);
  const dir = mkdtempSync(join(tmpdir(), "pgbouncer-"));
  chmodSync(dir, 0o755);
  const users = join(dir, "users.txt");
  writeFileSync(users, `"${decodeURIComponent(server.username || "postgres")}" ""\n`, { mode: 0o644 });
  const ini = join(dir, "pgbouncer.ini");
  writeFileSync(
    ini,
    [
      "[databases]",
      `* = host=${server.hostname} port=${server.port || 5432}`,
      "[pgbouncer]",
      "listen_addr = 127.0.0.1",
      `listen_port = ${port}`,
      "auth_type = trust",
      `auth_file = ${users}`,
      "pool_mode = transaction",
      "max_client_conn = 500",
      "default_pool_size = 20",
      "ignore_startup_parameters = extra_float_digits",
      `unix_socket_dir =`,
    ].join("\n"),
    { mode: 0o644 },
  );
  const asRoot = process.getuid?.() === 0;
  const child: Subprocess = Bun.spawn(asRoot ? ["runuser", "-u", "postgres", "--", PGBOUNCER, ini] : [PGBOUNCER, ini], {
    stdout: "ignore",
    stderr: "pipe",
  });
  const through = (url: string) => {
    const pooled = new URL(url);
    pooled.hostname = "127.0.0.1";
    pooled.port = String(port);
    return pooled.toString();
  };
  // Ready once it accepts connections.
  for (let attempt = 0; ; attempt++) {
    if (child.exitCode !== null) {
      throw new Error(
        `pgbouncer exited with ${child.exitCode}: ${await new Response(child.stderr as ReadableStream).text()}`,
      );
    }
    const open = await Bun.connect({ hostname: "127.0.0.1", port, socket: { data() {} } }).then(
      (socket) => {
        socket.end();
        return true;
      },
      () => false,
    );
    if (open) break;
    if (attempt > 100) throw new Error("pgbouncer did not start listening");
    await Bun.sleep(50);
  }
  return {
    through,
    async stop() {
      child.kill();
      await child.exited;
    },
  };
}
