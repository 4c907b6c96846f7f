// Shared by the browser tests of a send whose answer is lost: the page's JSON-RPC WebSocket is
// routed through the test, which records every message.send and, when asked, lets the host store
// the next one but drops its answer together with the connection (a network dropping mid-request).

import type { Page } from 'playwright-core';
import type { HostContext } from '../../src/host/identity/index.js';

/** A JSON-RPC frame as the page sends it. */
export interface Frame {
  id?: number;
  method?: string;
  params?: Record<string, unknown>;
}

export interface LostSendAnswers {
  /** Every message.send the page made, in order. */
  readonly sends: Frame[];
  /** The next message.send is stored, and its answer is dropped with the connection. */
  dropNextAnswer(): void;
}

/** Routes `page`'s /rpc WebSocket (before it signs in) so a send's answer can be lost. */
export async function routeSendAnswers(
  page: Page,
  options: { dropFirst?: boolean } = {},
): Promise<LostSendAnswers> {
  const sends: Frame[] = [];
  let dropNext = options.dropFirst ?? false;
  await page.routeWebSocket(/\/rpc$/, (ws) => {
    const server = ws.connectToServer();
    let dropId: number | null = null;
    ws.onMessage((text) => {
      const frame = JSON.parse(String(text)) as Frame;
      if (frame.method === 'message.send') {
        sends.push(frame);
        if (dropNext) {
          dropNext = false;
          dropId = frame.id ?? null;
        }
      }
      server.send(text);
    });
    server.onMessage((text) => {
      const frame = JSON.parse(String(text)) as Frame;
      if (dropId !== null && frame.id === dropId) {
        // Stored by the host; the answer never reaches the page, and the connection drops.
        dropId = null;
        void ws.close();
        void server.close();
        return;
      }
      ws.send(text);
    });
  });
  return {
    sends,
    dropNextAnswer: () => {
      dropNext = true;
    },
  };
}

/** How many stored messages have exactly this body. */
export async function storedWithBody(ctx: HostContext, body: string): Promise<number> {
  const rows = await ctx.store.db.selectFrom('messages').select('id').where('body', '=', body).execute();
  return rows.length;
}
