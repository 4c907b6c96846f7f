import type { PrincipalRef } from './kinds.js';

// Replies the RPC surface builds itself (src/surfaces/rpc/methods.ts).

/** The `host.hello` reply. */
export interface Hello {
  protocol: string;
  capabilities: string[];
  limits: Record<string, number>;
  principal: PrincipalRef;
  /** Whether this principal may add an agent (`principal.addAgent`); the host decides (docs/security.md). */
  canAddAgent: boolean;
}

/** The `channel.create` and `channel.addMember` reply. */
export interface ChannelCreated {
  id: string;
  name: string;
  kind: 'dm' | 'group';
  joined: string[];
  invited: string[];
}

/** The `message.send` reply. */
export interface SentReply {
  message_id: string;
  channel_id: string;
}
