import { readFileSync } from 'node:fs';
import { createServer } from 'node:net';

// A port handed to a server that binds it later (anvil, a child process, a webhook URL) is chosen below the
// kernel's ephemeral range: a port in that range, freed a moment ago, may become the local port of any outgoing
// connection (the unit, component and integration tiers run side by side and open thousands) before the server
// binds it, and the server then fails with EADDRINUSE. Below the range only another pick can take it, and picks are
// random. The band starts above the test control plane's ports (16443, 20257, 20259, 23790, 23800, and the 200 after
// each that test/cluster/cluster.sh may move to).
const BAND_START = 24_100;
const BAND_END = 32_700;
const ATTEMPTS = 50;

/** The low end of the kernel's ephemeral port range (Linux), or undefined where it cannot be read. */
function ephemeralLow(): number | undefined {
  try {
    const low = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);
    return Number.isInteger(low) && low > 0 ? low : undefined;
  } catch {
    return undefined;
  }
}

const bandEnd = Math.min(BAND_END, ephemeralLow() ?? BAND_END);
/** Ports this process handed out: a server may not have bound one yet, so it is not given twice. */
const handedOut = new Set<number>();

/** Binds `port` on loopback (0: any free port) and closes it again: the port it got, or undefined if taken. */
function tryBind(port: number): Promise<number | undefined> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(undefined));
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      const bound = typeof address === 'object' && address ? address.port : undefined;
      server.close(() => resolve(bound));
    });
  });
}

/** A loopback port that was free a moment ago (for servers that must be told their port up front). */
export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < ATTEMPTS && bandEnd > BAND_START; attempt++) {
    const candidate = BAND_START + Math.floor(Math.random() * (bandEnd - BAND_START));
    if (handedOut.has(candidate)) continue;
    const port = await tryBind(candidate);
    if (port === undefined) continue;
    handedOut.add(port);
    return port;
  }
  // No band (an unusual ephemeral range) or all tries taken: any port the kernel gives.
  const port = await tryBind(0);
  if (port === undefined) throw new Error('freePort: no loopback port could be bound');
  return port;
}
