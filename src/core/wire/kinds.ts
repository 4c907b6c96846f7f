// The words the wire shares (docs/rpc.md). Every module in src/core/wire is types only and imports
// nothing outside this folder: the web page type-checks against them without the host's Node types.

export type PrincipalKind = 'person' | 'agent';
export type InboxState = 'waiting' | 'handled' | 'archived' | 'withdrawn' | 'returned';
export type MessageSource = 'person' | 'agent' | 'unknown';

/** A principal as replies name it. */
export interface PrincipalRef {
  id: string;
  name: string;
  kind: PrincipalKind;
}

/** The `principal.list` reply. */
export interface PrincipalListPage {
  principals: PrincipalRef[];
  /** The name to continue after, or null on the last page. */
  nextAfter: string | null;
}
