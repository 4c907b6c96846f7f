import { spawn } from 'node:child_process';
import { SluiceError } from '../../core/errors.js';
import { exitLine } from './child.js';

/**
 * The oldest client each driver runs. Codex: the app-server protocol the driver speaks
 * (`permissions` profiles on `thread/start`/`turn/start` with `activePermissionProfile` in the
 * answer, `additionalContext` on `turn/start`, `turn/steer` with `clientUserMessageId`,
 * `config/read`) and the sandbox the agent lock relies on, run end to end with the real client
 * (docs/drivers.md, "Supported clients"). Claude Code: the stream-json session with
 * `--replay-user-messages` echoes that steering counts on, and the permission-rule matching the
 * lock was measured with.
 */
export const MIN_CLIENT_VERSION = { claude: '2.1.332', codex: '0.150.0' } as const;

/** How long `--version` may take (a cold native binary on a loaded machine). */
const VERSION_TIMEOUT_MS = 30_000;

/** The first `x.y.z` in a `--version` line (`codex-cli 0.171.0`, `2.1.332 (Claude Code)`). */
export function parseClientVersion(text: string): [number, number, number] | undefined {
  const m = /(\d+)\.(\d+)\.(\d+)/.exec(text);
  return m ? [Number(m[1]), Number(m[2]), Number(m[3])] : undefined;
}

/** Negative when `a` is older than `b`. */
export function compareVersions(a: readonly number[], b: readonly number[]): number {
  for (let i = 0; i < 3; i++) {
    const d = (a[i] ?? 0) - (b[i] ?? 0);
    if (d !== 0) return d;
  }
  return 0;
}

/** Runs `bin --version`: its stdout, or the exit line when it fails. */
function runVersion(bin: string, env: NodeJS.ProcessEnv): Promise<{ ok: boolean; text: string }> {
  return new Promise((resolve) => {
    const child = spawn(bin, ['--version'], { env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), VERSION_TIMEOUT_MS);
    child.stdout.setEncoding('utf8').on('data', (d: string) => {
      out += d;
    });
    child.stderr.setEncoding('utf8').on('data', (d: string) => {
      err += d;
    });
    child.on('error', (e) => {
      err += `\n${e.message}`;
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve({ ok: true, text: out.trim() });
      else resolve({ ok: false, text: exitLine(`${bin} --version`, { code, signal }, err) });
    });
  });
}

/**
 * Checks the client is new enough: a client older than the minimum stops the driver with one line
 * naming both versions; one whose `--version` fails is reported with its own stderr line. A
 * version line that names no `x.y.z` is let through (returned as is, for the log): a new format
 * should not lock users out. Returns the version line.
 */
export async function requireClientVersion(
  client: 'claude' | 'codex',
  bin: string,
  env: NodeJS.ProcessEnv,
): Promise<string> {
  const run = await runVersion(bin, env);
  if (!run.ok) throw new SluiceError('unavailable', run.text);
  const found = parseClientVersion(run.text);
  const needed = MIN_CLIENT_VERSION[client];
  if (found !== undefined && compareVersions(found, parseClientVersion(needed) ?? []) < 0)
    throw new SluiceError(
      'not_found',
      `${client} ${found.join('.')} is too old: sluice drive ${client} needs ${client} ${needed} or newer (${bin})`,
    );
  return run.text;
}
