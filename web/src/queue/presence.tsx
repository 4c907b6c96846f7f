// The agent's presence as the host knows it from its turns (docs/web.md, "Presence").
import { RelativeTime } from '../time.js';
import type { AgentPresence } from '../wire.js';

const OUTCOME: Record<string, string> = {
  succeeded: 'its last turn finished',
  failed: 'its last turn failed',
  abandoned: 'its last turn was abandoned',
};

export function PresenceLine({ presence }: { presence: AgentPresence }) {
  const label =
    presence.state === 'driven'
      ? 'being driven: sluice drive is running a turn'
      : presence.state === 'in-turn'
        ? 'woken: a turn is open'
        : 'idle';
  return (
    <p class={`muted small presence presence-${presence.state}`} data-testid="presence">
      <span class="presence-dot" aria-hidden="true" /> {label}
      {presence.state === 'idle' &&
        presence.lastOutcome &&
        ` · ${OUTCOME[presence.lastOutcome] ?? presence.lastOutcome}`}
      {presence.lastActivityAt ? (
        <>
          {' '}
          · last activity <RelativeTime iso={presence.lastActivityAt} />
        </>
      ) : (
        ' · no turn recorded yet'
      )}
    </p>
  );
}
