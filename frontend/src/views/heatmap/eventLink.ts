// Where an event listed from a heatmap box leads: a request to its detail in Dispatch, a wait (or the
// wait inside a call) to the chain that explains it in Stalls, else to the waits on its lock.
import type { HeatmapEvent } from '../../charts/heatmap';
import type { ViewState } from '../../state/viewState';

export type EventLink = { patch: Partial<ViewState>; target: string; label: string };

/** The view-state patch that opens the event, the test id of the panel that shows it, and a label. */
export function eventLink(e: HeatmapEvent): EventLink | null {
  if (e.ref.kind === 'request') {
    return {
      patch: { tab: 'dispatch', req: { sourceId: e.ref.source_id, line: e.ref.line } },
      target: 'request-detail',
      label: 'open the request',
    };
  }
  const w = e.ref.kind === 'wait' ? e.ref : e.wait;
  if (!w) return null;
  const wait = { sourceId: w.source_id, line: w.line };
  if (e.chain_id !== null && e.link !== null) {
    return {
      patch: { tab: 'stalls', chain: e.chain_id, link: e.link, wait },
      target: 'chain-detail',
      label: `open chain link ${e.link}`,
    };
  }
  return { patch: { tab: 'stalls', lock: e.lock, wait }, target: 'waits-panel', label: 'show among the waits' };
}
