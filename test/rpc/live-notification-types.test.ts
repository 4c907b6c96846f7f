import { describe, expect, it } from 'vitest';
import { notification } from '../../src/surfaces/rpc/notification.js';
import type { RpcClient } from '../../web/src/rpc.js';

// The live notifications are typed from one map (src/core/wire/live.ts): the host's `notification`
// and the page's `RpcClient.on` both take their params from it. The `@ts-expect-error` lines below
// are what `npx tsc -p tsconfig.json --noEmit` must refuse: were one accepted, the check fails.

describe('a live notification frame', () => {
  it('is refused with a wrong method or shape by the type checker (the lines in here)', () => {
    // Never called: it exists to be type-checked.
    const refused = (client: RpcClient) => {
      // @ts-expect-error an unknown method
      notification('channel.lft', { channelId: 'c' });
      // @ts-expect-error a field the method does not have
      notification('channel.left', { channelId: 'c', extra: 1 });
      // @ts-expect-error a notification that carries nothing
      notification('invitations.changed', { channelId: 'c' });
      // @ts-expect-error a queue's end with a channel's reason
      notification('subscription.ended', { queue: 'helper', reason: 'not_member' });
      notification('channel.message', {
        channelId: 'c',
        kind: 'message.created',
        // @ts-expect-error a stub is `truncated: true`, and anything less than a record is a stub
        message: { messageId: 'm', seq: 1, bodyBytes: 3, truncated: false },
      });
      // @ts-expect-error the page cannot listen for a method the host never sends
      client.on('channel.lft', () => {});
      client.on('channel.unread', (params) => {
        // @ts-expect-error nor read a field its params do not have
        void params.channel;
      });
    };
    expect(refused).toBeTypeOf('function');
  });

  it('is a JSON-RPC notification: no id, the method and its params', () => {
    expect(JSON.parse(notification('channel.unread', { channelId: 'c', unread: 2, activity: 7 }))).toEqual({
      jsonrpc: '2.0',
      method: 'channel.unread',
      params: { channelId: 'c', unread: 2, activity: 7 },
    });
    expect(JSON.parse(notification('channel.list.resync', {}))).toEqual({
      jsonrpc: '2.0',
      method: 'channel.list.resync',
      params: {},
    });
  });
});
