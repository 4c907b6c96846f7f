import { runLoad } from '../bench/load.js';

// `npm run proof:load [seconds]`: 200 WebSocket clients sending and paging plus CLI writer
// processes, on loopback, first on SQLite then on PostgreSQL; zero errors and zero losses expected.
const seconds = Number(process.argv[2] ?? 60);
const pg = process.env.SLUICE_LOAD_PG ?? 'postgres://postgres@127.0.0.1:5432/test';
let failed = false;
for (const [backend, db] of [
  ['SQLite', undefined],
  ['PostgreSQL', pg],
] as const) {
  const r = await runLoad({ clients: 200, durationMs: seconds * 1000, cliWriters: 2, ...(db ? { db } : {}) });
  const failures = r.errors + r.lostStored + r.lostLive;
  failed ||= failures > 0;
  process.stdout.write(
    `${backend}: ${r.clients} clients + 2 CLI writers, ${seconds} s: ${r.requests} requests, ${r.sent} messages ` +
      `(${r.cliSent} from the CLI), ${r.errors} errors, ${r.lostStored} lost stored, ${r.lostLive} lost live; ` +
      `p50 ${r.p50Ms.toFixed(1)} ms, p99 ${r.p99Ms.toFixed(1)} ms; RSS ${r.rssStartMiB.toFixed(0)} → peak ${r.rssPeakMiB.toFixed(0)} MiB\n`,
  );
}
process.exitCode = failed ? 1 : 0;
