// The turn protocol's one door: what surfaces and the other host rooms may use of src/host/turns.
// Begin, dispatch, steer, record what the client saw, cover, settle and end live behind it; a
// driver only translates its client's protocol into TurnSession calls (docs/architecture.md).

export { countDispatch, DEFAULT_MAX_DISPATCH_ATTEMPTS, REPEATED_FAILURE_KIND } from './attempts.js';
export type { DeliveredMessage } from './carried.js';
export { type CoverageRead, recordCoverage } from './coverage.js';
export { type DispatcherOptions, requireTurnSettlement, TurnDispatcher } from './dispatcher.js';
export {
  abandonTurn,
  beginTurn,
  endTurn,
  openTurnOf,
  openTurnOfAgent,
  type SettledTurn,
  type Turn,
  type TurnOutcome,
} from './lifecycle.js';
export {
  confirmSeen,
  confirmWritten,
  offerReads,
  type PendingReceipt,
  receivedInProcess,
} from './receipts.js';
export {
  type ClientTurn,
  type DrivenTurnOptions,
  type TurnPhase,
  type TurnReport,
  TurnSession,
  type TurnSlice,
} from './session.js';
export { type ClientSaw, TurnSightings } from './sightings.js';
