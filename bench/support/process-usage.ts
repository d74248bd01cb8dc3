// What a measured process reports of itself: loaded into it with --require (through NODE_OPTIONS, so a process it
// starts reports too), the hook prints its peak RSS and its CPU time (user + system) on stderr as it exits.

export const USAGE_HOOK = `process.on('exit', () => { const u = process.resourceUsage(); process.stderr.write('\\nPEAK_RSS_KIB ' + u.maxRSS + ' CPU_US ' + (u.userCPUTime + u.systemCPUTime) + '\\n'); });\n`;

export type ProcessUsage = { peakRssMiB: number; cpuMs: number };

/** The reports in a run's stderr, one per process that ran with the hook (none when it never exited normally). */
export function usageReports(stderr: string): ProcessUsage[] {
  return [...stderr.matchAll(/PEAK_RSS_KIB (\d+) CPU_US (\d+)/g)].map((report) => ({
    peakRssMiB: Number(report[1]) / 1024,
    cpuMs: Number(report[2]) / 1000,
  }));
}
