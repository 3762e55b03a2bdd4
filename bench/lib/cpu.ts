import { readFileSync } from "node:fs";

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
