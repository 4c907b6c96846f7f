// Shared by the bounded-read tests: the continue commands and a listing row with a body.
import type { ContinueCommands, MessageRow } from '../../src/surfaces/cli/bounded-read.js';

export const commands: ContinueCommands = {
  listAfter: (id) => `sluice message ls --json --include-body --since ${id}`,
  listFrom: (id, offset, version) =>
    `sluice message ls --json --include-body --resume ${id} --offset ${offset} --body-sha ${version}`,
  readFrom: (id, offset, version) =>
    `sluice message read ${id} --json${offset > 0 ? ` --offset ${offset} --body-sha ${version}` : ''}`,
};

export const row = (id: string, body: string): MessageRow & { body: string } => ({
  id,
  channel: '#general',
  from: 'alice',
  sender: 'manager',
  createdAt: '2026-11-30T00:00:00.000Z',
  subject: null,
  replyTo: null,
  state: 'waiting',
  attachments: [],
  body,
});
