// A host-run agent's state with Start / Stop / Restart and the end of its log (`agent.status`, for
// the owner and the agent's managers; anyone else sees nothing here). The page never creates or
// changes what runs: that is `sluice agent run` on the machine (docs/web.md).
import { useCallback, useEffect, useState } from 'preact/hooks';
import { describeError, errorCode, type RpcClient } from '../rpc.js';
import { RelativeTime } from '../time.js';
import type { AgentRun, AgentStatus } from '../wire.js';
import './agents.css';

/** How often the panel reads the state again while it is shown (the supervisor writes it). */
const REFRESH_MS = 3000;

const STATE_LABEL: Record<AgentRun['state'], string> = {
  starting: 'starting',
  running: 'running',
  stopping: 'stopping',
  stopped: 'stopped',
  crashed: 'crashed',
  'no-host': 'waiting for sluice serve',
};

function stateLine(run: AgentRun): string {
  const client = run.driver === 'claude' ? 'Claude Code' : 'Codex';
  const where = `${client} in ${run.cwd}`;
  if (run.state === 'no-host') return `${where}: no sluice serve runs it now; it starts when the host starts`;
  if (run.state === 'crashed') return `${where}: the host restarts it with a growing delay`;
  return where;
}

export function RunPanel({ client, agent }: { client: RpcClient; agent: string }) {
  const [status, setStatus] = useState<AgentStatus | null>(null);
  const [hidden, setHidden] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const load = useCallback(
    () =>
      client
        .call<AgentStatus>('agent.status', { agent })
        .then((reply) => {
          setStatus(reply);
          setError(null);
        })
        .catch((err) => {
          if (errorCode(err) === 'denied') setHidden(true);
          else setError(`could not read its state: ${describeError(err)}`);
        }),
    [client, agent],
  );
  useEffect(() => {
    if (hidden) return;
    void load();
    const timer = setInterval(() => void load(), REFRESH_MS);
    return () => clearInterval(timer);
  }, [load, hidden]);
  if (hidden || status === null) return null;
  const run = status.run;
  const act = async (method: 'agent.start' | 'agent.stop' | 'agent.restart') => {
    setBusy(true);
    setError(null);
    try {
      setStatus(await client.call<AgentStatus>(method, { agent }));
    } catch (err) {
      setError(`${method.replace('agent.', '')} failed: ${describeError(err)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="run-panel" aria-labelledby={`run-${agent}`} data-testid="run-panel">
      <h2 id={`run-${agent}`}>Run from this host</h2>
      {run === null ? (
        <p class="muted small">
          The host does not run {agent}. Connect shows the command that registers it (<code>agent run</code>).
        </p>
      ) : (
        <>
          <p class="run-state small">
            <span class={`run-badge run-${run.state}`} data-testid="run-state">
              {STATE_LABEL[run.state]}
            </span>
            <span class="muted">{stateLine(run)}</span>
            {run.stateAt && (
              <span class="muted">
                · since <RelativeTime iso={run.stateAt} />
              </span>
            )}
            {run.restarts > 0 && <span class="muted">· restarted {run.restarts}×</span>}
          </p>
          {run.modelError && (
            <p class="small error" role="status" data-testid="run-model-error">
              It cannot reach its model: <code>{run.modelError}</code> (shown until a turn succeeds; see the
              log)
            </p>
          )}
          {run.lastError && (run.state === 'crashed' || run.restarts > 0) && (
            <p class="small" data-testid="run-error">
              Last error: <code>{run.lastError}</code>
            </p>
          )}
          <div class="run-actions">
            {run.desired === 'stopped' ? (
              <button
                type="button"
                class="button primary"
                disabled={busy}
                onClick={() => void act('agent.start')}
              >
                Start
              </button>
            ) : (
              <button type="button" class="button" disabled={busy} onClick={() => void act('agent.stop')}>
                Stop
              </button>
            )}
            <button type="button" class="button" disabled={busy} onClick={() => void act('agent.restart')}>
              Restart
            </button>
          </div>
          {status.logTail !== null && (
            <details class="run-log-box">
              <summary class="small">Log</summary>
              <pre class="run-log" data-testid="run-log">
                {status.logTail === '' ? '(empty)' : status.logTail}
              </pre>
            </details>
          )}
        </>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}
