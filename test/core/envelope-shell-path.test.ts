import { describe, expect, it } from 'vitest';
import {
  CLAUDE_ADDITIONAL_CONTEXT_LIMIT,
  type DeliveryCandidate,
  renderDelivery,
} from '../../src/core/envelope.js';

function candidate(i: number, body = `message ${i}`): DeliveryCandidate {
  return {
    id: `msg_${String(i).padStart(4, '0')}`,
    channel: 'dm:owner',
    from: 'owner',
    sender: 'owner',
    createdAt: '2025-01-01T00:00:00.000Z',
    subject: null,
    replyTo: null,
    body,
    attachments: [],
  };
}

const instructionOf = (text: string) => text.split('\n')[2] ?? '';

// DESIGN.md §8 "The model's shell path": one process per handled message, drain in the same turn.
describe("the delivery's instruction line", () => {
  it('names the one-process reply and the batch form, not reply && archive', () => {
    const result = renderDelivery({ agent: 'a', totalPending: 2, candidates: [candidate(0), candidate(1)] });
    const instruction = instructionOf(result.text);
    expect(instruction).toContain('sluice message reply <id> --archive -m "…"');
    expect(instruction).toContain('sluice message handle');
    expect(instruction).not.toContain('&& sluice message archive');
  });

  it('with overflow, tells the model to fetch the next bounded batch in the same command', () => {
    const candidates = Array.from({ length: 20 }, (_, i) => candidate(i));
    const result = renderDelivery({ agent: 'a', totalPending: 20, candidates });
    expect(result.overflow).toBeGreaterThan(0);
    expect(instructionOf(result.text)).toContain('in the same command');
    expect(instructionOf(result.text)).toContain('&& sluice message ls --json --include-body');
    expect(result.text.length).toBeLessThanOrEqual(CLAUDE_ADDITIONAL_CONTEXT_LIMIT);
  });

  it('with an oversized head, reads it in bounded parts and fetches the rest after it in the same command', () => {
    const head = candidate(0, 'x'.repeat(20_000));
    const result = renderDelivery({
      agent: 'a',
      totalPending: 3,
      candidates: [head, candidate(1), candidate(2)],
    });
    const instruction = instructionOf(result.text);
    expect(instruction).toContain(`sluice message read ${head.id} --json`);
    expect(instruction).toContain(`sluice message reply ${head.id} --archive -m "…"`);
    expect(instruction).toContain(`&& sluice message ls --json --include-body --since ${head.id}`);
    // Chained to the reply, never to the read: a read part and a page together exceed a client's cap.
    expect(instruction).toContain(
      `sluice message reply ${head.id} --archive -m "…" && sluice message ls --json --include-body --since ${head.id}`,
    );
    expect(instruction).not.toContain(`--json && sluice message ls`);
  });
});
