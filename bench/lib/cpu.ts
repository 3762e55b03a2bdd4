import { readdirSync, readFileSync } from "node:fs";

/** CPU time (user + system) a process has used so far, in seconds; null where /proc cannot tell (not Linux, or gone). */
export function cpuSeconds(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    // Fields after the command name (which may hold spaces): utime and stime are the 12th and 13th.
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return (Number(fields[11]) + Number(fields[12])) / 100;
  } catch {
    return null;
  }
}

/** CPU time per process since `since`, in seconds, for the processes /proc can tell. */
export function cpuSpent(pids: Record<string, number>, since: Record<string, number | null>): Record<string, number> {
  const spent: Record<string, number> = {};
  for (const [role, pid] of Object.entries(pids)) {
    const now = cpuSeconds(pid);
    const before = since[role];
    if (now !== null && before !== null && before !== undefined) spent[role] = now - before;
  }
  return spent;
}

/** Every process's CPU time now, to pass to `cpuSpent` later. */
export function cpuNow(pids: Record<string, number>): Record<string, number | null> {
  return Object.fromEntries(Object.entries(pids).map(([role, pid]) => [role, cpuSeconds(pid)]));
}

/** utime, stime, cutime, cstime and the parent of a process, in seconds; null when /proc cannot tell. */
function statOf(pid: number): { own: number; children: number; parent: number } | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
    const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
    return {
      parent: Number(fields[1]),
      own: (Number(fields[11]) + Number(fields[12])) / 100,
      children: (Number(fields[13]) + Number(fields[14])) / 100,
    };
  } catch {
    return null;
  }
}

/**
 * CPU time so far of every process named `name` (`postgres`, `redis-server`): their own,
 * plus what their exited children used (a PostgreSQL backend that ends is counted in its
 * postmaster's), in seconds. Differences of two readings are what the servers spent between.
 */
export function serverCpuSeconds(name: string): number {
  const pids = readdirSync("/proc").filter((entry) => /^\d+$/.test(entry));
  const named = new Set(
    pids.filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, "utf8").trim() === name;
      } catch {
        return false;
      }
    }),
  );
  let total = 0;
  for (const pid of named) {
    const stat = statOf(Number(pid));
    if (!stat) continue;
    total += stat.own;
    // Roots only: a child's exited children are already in its own figure once it exits.
    if (!named.has(String(stat.parent))) total += stat.children;
  }
  return total;
}
