// "Connect": the exact commands that attach Claude Code or Codex to one agent on this host (from
// `agent.connect`, for the owner and the agent's managers). Shown after "New agent" and on the
// agent's queue page while it has never had a turn (docs/web.md).
import { useEffect, useState } from 'preact/hooks';
import { describeError, errorCode, type RpcClient } from '../rpc.js';
import type { ConnectInfo } from '../wire.js';
import { CopyLine } from './copy-line.js';
import './agents.css';

export function ConnectPanel({ client, agent }: { client: RpcClient; agent: string }) {
  const [info, setInfo] = useState<ConnectInfo | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [hidden, setHidden] = useState(false);
  const [clientName, setClientName] = useState<'claude' | 'codex'>('claude');
  useEffect(() => {
    let live = true;
    client
      .call<ConnectInfo>('agent.connect', { agent })
      .then((reply) => live && setInfo(reply))
      .catch((err) => {
        if (!live) return;
        // Not one of its managers: the commands are a machine owner's, so nothing to show.
        if (errorCode(err) === 'denied') setHidden(true);
        else setError(`could not read the commands: ${describeError(err)}`);
      });
    return () => {
      live = false;
    };
  }, [client, agent]);
  if (hidden) return null;
  const commands = info ? info[clientName] : [];
  return (
    <section class="connect-panel" aria-labelledby={`connect-${agent}`} data-testid="connect-panel">
      <h2 id={`connect-${agent}`}>Connect</h2>
      <p class="muted small">
        {agent} is an inbox with a name: messages to it wait in its queue until a client answers for it.
        Attach Claude Code or Codex with one of these commands, in a shell on the machine that runs this host.
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {info === null && !error && <p class="muted small">Reading the commands…</p>}
      {info && (
        <>
          <div class="connect-clients" role="radiogroup" aria-label="Client">
            {(['claude', 'codex'] as const).map((name) => (
              <label key={name} class="member-option">
                <input
                  type="radio"
                  name={`connect-client-${agent}`}
                  checked={clientName === name}
                  onChange={() => setClientName(name)}
                />
                {name === 'claude' ? 'Claude Code' : 'Codex'}
              </label>
            ))}
          </div>
          {info.pathStep && (
            <div class="connect-step">
              <p class="small">
                <code>sluice</code> is not on this machine's PATH, so the commands name this installation's{' '}
                <code>bin/sluice.js</code>. Running the agent from the host works as it is; in your own
                session the model answers with <code>sluice …</code> in its shell, so put it on PATH once
                first:
              </p>
              <CopyLine command={info.pathStep} label="PATH step" />
            </div>
          )}
          {info.needsDatabaseUrl && (
            <p class="small">
              This host uses PostgreSQL: set <code>SLUICE_DB</code> to its database URL in that shell first.
            </p>
          )}
          <ol class="connect-steps">
            {commands.map((c) => (
              <li key={c.id} class="connect-step" data-command={c.id}>
                <p class="small">{c.label}</p>
                <CopyLine command={c.command} label={`${c.id} command`} />
              </li>
            ))}
          </ol>
          <p class="muted small">
            Run from the host, the agent starts now and whenever the host starts; its state and log show on
            its queue page.
          </p>
        </>
      )}
    </section>
  );
}
