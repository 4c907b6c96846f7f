// Codex's server requests as durable approvals (src/surfaces/drivers/codex-approvals.ts), with the
// JSON shapes the installed app-server (0.171.0) sends: `item/tool/requestUserInput` (the model's
// `request_user_input` questions) answered with a person's text, refused for secrets; a decline's
// note steered to the model. The real client is driven in test/e2e/drive-approvals-codex*.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decideApprovalRequest } from '../../src/host/approvals/decisions.js';
import type { Principal } from '../../src/host/principals.js';
import { findApprovalById } from '../../src/store/ops/approvals.js';
import {
  answerCodexApproval,
  CODEX_USER_INPUT_METHOD,
  codexAsk,
  SECRET_QUESTION_NOTE,
} from '../../src/surfaces/drivers/codex-approvals.js';
import { backendsUnderTest, type ConformanceHost, openConformanceHost } from '../conformance/backend.js';
import { snapshotStore } from '../support/store-snapshot.js';

/** `item/tool/requestUserInput` params exactly as Codex 0.171.0 sent them (captured offline). */
function userInputParams(overrides: Record<string, unknown> = {}) {
  return {
    threadId: '01a233b5-af59-7c01-b484-5ba1d6e3b66d',
    turnId: '01a233b5-b023-7fe2-bbd4-ed9d72de1c7f',
    itemId: 'call_04dbdb13f0324a4abc5e9dfbd5fe78ff',
    questions: [
      {
        id: 'colour',
        header: 'Colour',
        question: 'Which colour should the banner be?',
        isOther: true,
        isSecret: false,
        options: [
          { label: 'Red', description: 'warm' },
          { label: 'Blue', description: 'cool' },
        ],
      },
      { id: 'size', header: 'Size', question: 'How tall?', isOther: true, isSecret: false, options: null },
    ],
    isBlocking: false,
    autoResolutionMs: null,
    ...overrides,
  };
}

describe.each(backendsUnderTest())('Codex requests as approvals (%s)', (backend) => {
  let h: ConformanceHost;
  let bot: Principal;

  beforeAll(async () => {
    h = await openConformanceHost(backend, 'codex-approvals');
    bot = await h.agent('bot', 'turn');
  }, 60_000);
  afterAll(async () => {
    await h?.close();
  });

  /** Answers the request as the driver does, deciding it with `decide` once it waits. */
  async function answer(
    params: Record<string, unknown>,
    decide: (id: string) => Promise<unknown>,
    method = CODEX_USER_INPUT_METHOD,
  ) {
    const ask = codexAsk(method, params, new Map(), 'turn_1');
    if (!ask) throw new Error('not a request the driver answers');
    const told: string[] = [];
    const ids: string[] = [];
    const result = await answerCodexApproval(h.ctx, bot, ask, {
      signal: new AbortController().signal,
      tellModel: async (text) => {
        told.push(text);
      },
      report: (e) => {
        if (e.phase === 'waiting' && e.approvalId) {
          ids.push(e.approvalId);
          void decide(e.approvalId);
        }
      },
    });
    return { ask, result, told, ids };
  }

  it('records the questions exactly; the answer text goes back as the answer to each question', async () => {
    const params = userInputParams();
    const { ask, result, told, ids } = await answer(params, (id) =>
      decideApprovalRequest(h.ctx, h.owner, { id, decision: 'allow', note: 'Blue, and 3 cm' }),
    );
    expect(ask).toMatchObject({
      client: 'codex',
      kind: 'user_input',
      subject: { questions: params.questions },
    });
    expect(result).toEqual({
      answers: { colour: { answers: ['Blue, and 3 cm'] }, size: { answers: ['Blue, and 3 cm'] } },
    });
    expect(told).toEqual([]);
    const row = await findApprovalById(h.ctx.store.db, ids[0] ?? '');
    expect(row).toMatchObject({ kind: 'user_input', status: 'allowed', note: 'Blue, and 3 cm' });
    expect(JSON.parse(row?.subject ?? '{}')).toEqual({ questions: params.questions });
    expect(row?.applied_at).not.toBeNull();
  });

  it('denied: no answers, and the note reaches the model as a steer', async () => {
    const { result, told } = await answer(userInputParams({ itemId: 'call_2' }), (id) =>
      decideApprovalRequest(h.ctx, h.owner, { id, decision: 'deny', note: 'pick it yourself' }),
    );
    expect(result).toEqual({ answers: {} });
    expect(told).toEqual(['Sluice: your question was not answered. pick it yourself']);
  });

  it('a question cannot be allowed without an answer, and `answer` fits only a question', async () => {
    const ask = codexAsk(CODEX_USER_INPUT_METHOD, userInputParams(), new Map(), null);
    const controller = new AbortController();
    let waitingId = '';
    const waiting = answerCodexApproval(h.ctx, bot, ask ?? (undefined as never), {
      signal: controller.signal,
      tellModel: async () => {},
      report: (e) => {
        if (e.phase === 'waiting') waitingId = e.approvalId ?? '';
      },
    });
    await expect.poll(() => waitingId).not.toBe('');
    const before = await snapshotStore(h.ctx);
    await expect(
      decideApprovalRequest(h.ctx, h.owner, { id: waitingId, decision: 'allow' }),
    ).rejects.toMatchObject({ code: 'invalid_params' });
    await expect(
      decideApprovalRequest(h.ctx, h.owner, { id: waitingId, decision: 'allow', always: true, note: 'x' }),
    ).rejects.toMatchObject({ code: 'invalid_params' });
    expect(await snapshotStore(h.ctx)).toEqual(before);
    controller.abort();
    expect(await waiting).toBeUndefined();
    // A command is not a question: text given as an answer to it is refused.
    const command = codexAsk(
      'item/commandExecution/requestApproval',
      { command: "/bin/bash -lc 'touch x'", cwd: '/w' },
      new Map(),
      null,
    );
    const stop = new AbortController();
    let commandId = '';
    const pending = answerCodexApproval(h.ctx, bot, command ?? (undefined as never), {
      signal: stop.signal,
      tellModel: async () => {},
      report: (e) => {
        if (e.phase === 'waiting') commandId = e.approvalId ?? '';
      },
    });
    await expect.poll(() => commandId).not.toBe('');
    await expect(
      decideApprovalRequest(h.ctx, h.owner, {
        id: commandId,
        decision: 'allow',
        note: 'yes',
        answering: true,
      }),
    ).rejects.toMatchObject({ code: 'invalid_params' });
    stop.abort();
    expect(await pending).toBeUndefined();
  });

  it('a secret question is refused at once, with no request recorded', async () => {
    const params = userInputParams();
    params.questions[1] = { ...params.questions[1], isSecret: true } as (typeof params.questions)[1];
    const before = await snapshotStore(h.ctx);
    const { result, told, ids } = await answer(params, async () => {
      throw new Error('nobody is asked');
    });
    expect(result).toEqual({ answers: {} });
    expect(ids).toEqual([]);
    expect(told).toEqual([`Sluice: your question was not answered. ${SECRET_QUESTION_NOTE}`]);
    expect(await snapshotStore(h.ctx)).toEqual(before);
  });

  it('malformed questions are not answered (the peer refuses them with an error)', () => {
    expect(codexAsk(CODEX_USER_INPUT_METHOD, { questions: [] }, new Map(), null)).toBeUndefined();
    expect(
      codexAsk(CODEX_USER_INPUT_METHOD, { questions: [{ question: 'no id' }] }, new Map(), null),
    ).toBeUndefined();
  });

  it('a command declined with a note: the note is steered first, then the decline', async () => {
    const { result, told } = await answer(
      { command: "/bin/bash -lc 'rm -rf build'", cwd: '/work', reason: 'clean up' },
      (id) => decideApprovalRequest(h.ctx, h.owner, { id, decision: 'deny', note: 'keep the build' }),
      'item/commandExecution/requestApproval',
    );
    expect(result).toEqual({ decision: 'decline' });
    expect(told).toEqual([
      "Sluice: your request to run /bin/bash -lc 'rm -rf build' was denied. keep the build",
    ]);
  });
});
