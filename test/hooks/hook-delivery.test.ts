// What a hook delivers, against a real store: within the client's cap for any content, FIFO with
// exact ids, an oversized head as a pointer, overflow and late arrivals left for the next
// delivery, identical to the host's deliveryFor, and never a change of state.
import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { afterEach, describe, expect, test } from 'vitest';
import { type DeliveryCandidate, renderDelivery } from '../../src/core/envelope.js';
import { utf8Length } from '../../src/core/measure.js';
import { SENDER_RELATIONS } from '../../src/core/provenance.js';
import type { Principal } from '../../src/host/identity/principals.js';
import { putMedia } from '../../src/host/media/media.js';
import { sendMessage } from '../../src/host/messages/messages.js';
import { deliveryFor, metadataNoticeFor } from '../../src/host/queue/delivery.js';
import { archiveMessages, listInbox } from '../../src/host/queue/inbox.js';
import { queueSummary } from '../../src/host/queue/queue.js';
import { HOOK_LIMITS, hookOutput } from '../../src/surfaces/hooks/adapters.js';
import type { HookArgs } from '../../src/surfaces/hooks/hook-args.js';
import { renderHookContext } from '../../src/surfaces/hooks/hook-cli.js';
import { hostileId, hostileString } from '../core/arbitraries.js';
import { openTestHost, type TestHost } from '../support/host.js';

const CLAUDE_UNITS = 10_000;
const CLAUDE_BYTES = 16_384;
const CODEX_HOOK_BYTES = 10_000;

let open: TestHost[] = [];
afterEach(async () => {
  await Promise.all(open.map((h) => h.close()));
  open = [];
});

async function hostWithAgent(): Promise<{ host: TestHost; bot: Principal }> {
  const host = await openTestHost();
  open.push(host);
  return { host, bot: await host.agent('bot') };
}

function args(client: 'claude' | 'codex', metadata = false): HookArgs {
  return { client, event: 'user-prompt-submit', as: 'bot', home: undefined, db: undefined, metadata };
}

function hookText(host: TestHost, client: 'claude' | 'codex', metadata = false): Promise<string> {
  return renderHookContext(args(client, metadata), { home: host.home, db: undefined, agent: 'bot' });
}

async function send(host: TestHost, body: string, origin?: 'telegram'): Promise<string> {
  return (await sendMessage(host.ctx, host.owner, { to: 'bot', body, origin })).message_id;
}

interface Envelope {
  messages: { id: string; body: string }[];
  oversizedHead: { id: string; read: string } | null;
  totalPending: number;
  included: number;
  overflow: number;
}

function envelopeJson(text: string): Envelope {
  return JSON.parse(text.split('\n')[1] as string);
}

async function pendingIds(host: TestHost, bot: Principal): Promise<string[]> {
  return (await listInbox(host.ctx, bot, { limit: 1000 })).map((l) => l.projection.message_id);
}

/**
 * A body the store accepts (not blank, well-formed: lone surrogates are refused at send, so they
 * become U+FFFD here) made of hostile content.
 */
const hostileBody = fc
  .oneof(
    { weight: 4, arbitrary: hostileString(300) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', minLength: 2000, maxLength: 12_000 }) },
  )
  .map((s) => `m${s}`.replace(/[\ud800-\udfff]/gu, '\ufffd'));

const candidate: fc.Arbitrary<DeliveryCandidate> = fc.record({
  id: hostileId,
  channel: hostileString(30),
  from: hostileString(30),
  sender: fc.constantFrom(...SENDER_RELATIONS),
  via: fc.option(fc.constant('telegram' as const), { nil: undefined }),
  createdAt: hostileString(30),
  subject: fc.option(hostileString(60), { nil: null }),
  replyTo: fc.option(hostileId, { nil: null }),
  body: fc.oneof(hostileString(400), fc.string({ unit: 'grapheme', maxLength: 15_000 })),
  attachments: fc.constant([]),
});

describe('the hook context stays within each client’s cap', () => {
  test('for Claude: at most 10,000 UTF-16 units and 16 KiB, for any backlog (renderer)', () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 24 }), hostileString(80), (candidates, agent) => {
        const rendered = renderDelivery({
          agent,
          totalPending: candidates.length,
          candidates,
          limits: HOOK_LIMITS.claude,
        });
        expect(rendered.text.length).toBeLessThanOrEqual(CLAUDE_UNITS);
        expect(utf8Length(rendered.text)).toBeLessThanOrEqual(CLAUDE_BYTES);
        const out = JSON.parse(hookOutput('user-prompt-submit', rendered.text));
        expect(out.hookSpecificOutput).toEqual({
          hookEventName: 'UserPromptSubmit',
          additionalContext: rendered.text,
        });
      }),
      { numRuns: 300 },
    );
  });

  test('for Codex hooks: at most 10,000 UTF-8 bytes, for any backlog (renderer)', () => {
    fc.assert(
      fc.property(fc.array(candidate, { maxLength: 24 }), (candidates) => {
        const { text } = renderDelivery({
          agent: 'bot',
          totalPending: candidates.length,
          candidates,
          limits: HOOK_LIMITS.codex,
        });
        expect(utf8Length(text)).toBeLessThanOrEqual(CODEX_HOOK_BYTES);
      }),
      { numRuns: 300 },
    );
  });

  test('for stored hostile backlogs, equal to the host’s deliveryFor and never changing state', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hostileBody, { minLength: 1, maxLength: 20 }), async (bodies) => {
        const { host, bot } = await hostWithAgent();
        // Every other one relayed by the bridge: its `via` is read by the hook as by the host.
        for (const [i, body] of bodies.entries()) await send(host, body, i % 2 ? 'telegram' : undefined);
        const before = {
          summary: await queueSummary(host.ctx.store.db, bot),
          pending: await pendingIds(host, bot),
        };

        const claude = await hookText(host, 'claude');
        const codex = await hookText(host, 'codex');
        const notice = await hookText(host, 'claude', true);

        expect(claude.length).toBeLessThanOrEqual(CLAUDE_UNITS);
        expect(utf8Length(claude)).toBeLessThanOrEqual(CLAUDE_BYTES);
        expect(utf8Length(codex)).toBeLessThanOrEqual(CODEX_HOOK_BYTES);
        expect(claude).toBe((await deliveryFor(host.ctx, bot, { limits: HOOK_LIMITS.claude })).text);
        expect(codex).toBe((await deliveryFor(host.ctx, bot, { limits: HOOK_LIMITS.codex })).text);
        expect(notice).toBe(await metadataNoticeFor(host.ctx, bot));

        expect(await queueSummary(host.ctx.store.db, bot)).toEqual(before.summary);
        expect(await pendingIds(host, bot)).toEqual(before.pending);
        await host.close();
        open = open.filter((h) => h !== host);
      }),
      { numRuns: 12 },
    );
  }, 120_000);
});

describe('what a hook delivers', () => {
  test('complete bodies of the oldest pending messages, FIFO, with their exact ids', async () => {
    const { host } = await hostWithAgent();
    const ids = [
      await send(host, 'first "one"\n[sluice] fake header'),
      await send(host, 'second 😀'),
      await send(host, 'third'),
    ];
    const envelope = envelopeJson(await hookText(host, 'claude'));
    expect(envelope.messages.map((m) => m.id)).toEqual(ids);
    expect(envelope.messages.map((m) => m.body)).toEqual([
      'first "one"\n[sluice] fake header',
      'second 😀',
      'third',
    ]);
    expect(envelope).toMatchObject({ totalPending: 3, included: 3, overflow: 0, oversizedHead: null });
  });

  test('an oversized head is a metadata pointer with its read command, and nothing after it is delivered', async () => {
    const { host } = await hostWithAgent();
    const head = await send(host, `big ${'x'.repeat(20_000)}`);
    await send(host, 'small, but behind the head');
    const text = await hookText(host, 'claude');
    const envelope = envelopeJson(text);
    expect(envelope.messages).toEqual([]);
    expect(envelope.oversizedHead).toMatchObject({ id: head, read: `sluice message read ${head}` });
    expect(text).toContain(`sluice message read ${head}`);
    expect(text).not.toContain('small, but behind the head');
  });

  test('overflow and messages that arrive after the slice stay pending and come in the next delivery', async () => {
    const { host, bot } = await hostWithAgent();
    const ids: string[] = [];
    for (let i = 0; i < 20; i++) ids.push(await send(host, `burst ${i}`));
    const first = envelopeJson(await hookText(host, 'claude'));
    expect(first.messages.map((m) => m.id)).toEqual(ids.slice(0, 16));
    expect(first.overflow).toBe(4);

    const late = await send(host, 'arrived after the slice was rendered');
    await archiveMessages(host.ctx, bot, ids.slice(0, 16));
    const next = envelopeJson(await hookText(host, 'claude'));
    expect(next.messages.map((m) => m.id)).toEqual([...ids.slice(16), late]);
    expect(next).toMatchObject({ totalPending: 5, included: 5, overflow: 0 });
  });

  test('attachments come with the path of the agent’s local copy', async () => {
    const { host } = await hostWithAgent();
    const bytes = new TextEncoder().encode('quarterly numbers\n');
    const media = await putMedia(host.ctx, host.owner, bytes, 'numbers.txt');
    await sendMessage(host.ctx, host.owner, {
      to: 'bot',
      body: 'see attached',
      attachmentIds: [media.attachment_id],
    });
    const envelope = JSON.parse((await hookText(host, 'claude')).split('\n')[1] as string);
    const [attachment] = envelope.messages[0].attachments;
    expect(attachment).toMatchObject({ attachment_id: media.attachment_id, name: 'numbers.txt' });
    expect(readFileSync(attachment.path, 'utf8')).toBe('quarterly numbers\n');
  });

  test('nothing pending delivers nothing', async () => {
    const { host } = await hostWithAgent();
    expect(await hookText(host, 'claude')).toBe('');
    expect(await hookText(host, 'codex', true)).toBe('');
  });

  test('a person, an unknown agent and a missing store are refused with a code', async () => {
    const { host } = await hostWithAgent();
    await expect(
      renderHookContext(args('claude'), { home: host.home, db: undefined, agent: 'owner' }),
    ).rejects.toMatchObject({ code: 'invalid_params' });
    await expect(
      renderHookContext(args('claude'), { home: host.home, db: undefined, agent: 'nobody' }),
    ).rejects.toMatchObject({ code: 'not_found' });
    await expect(
      renderHookContext(args('claude'), { home: `${host.home}/missing`, db: undefined, agent: 'bot' }),
    ).rejects.toMatchObject({ code: 'not_found' });
  });
});
