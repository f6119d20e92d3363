import { useCallback, useMemo, type ReactNode } from 'react';
import { useReveal } from '../../lib/reveal';
import { useTimeBase } from '../../lib/timeBase';
import { PAGE_MAX, fetchCalls, useCallsPage } from '../../api/pagedQueries';
import type { ChainLink } from '../../api/stallTypes';
import { MoreRows, usePagedRows } from '../../components/LongTable';
import { EChart } from '../../charts/EChart';
import { buildCallsOption, callWindow } from '../../charts/callFlame';
import { linkLabel } from '../../charts/chainWaterfall';
import { ErrorBox, Loading } from '../../components/Status';
import { formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';

/** Calls of a page (the first, and each "show more"); "show all" asks four times PAGE_MAX at a time. */
const CALLS = 5000;

/** A chain link's calls around its wait, and under them `children` (the link's card: its stack, its block request),
 * brought into view together once the calls are there (the card sat 1,500-2,500 px below the calls). */
export function CallsPanel({ analysisId, link, pos, children }: { analysisId: string; link: ChainLink; pos: number; children?: ReactNode }) {
  const [, setView] = useViewState();
  const start = link.start_ns ?? link.end_ns ?? 0;
  const end = link.end_ns ?? start;
  const w = useMemo(
    () => (link.pid !== null ? { pid: link.pid, sourceId: link.source_id, ...callWindow(start, end) } : null),
    [link.pid, link.source_id, start, end],
  );
  const q = useCallsPage(analysisId, w, CALLS);
  const time = useTimeBase();
  const first = useMemo(() => (q.data ? { items: q.data.calls, next_cursor: q.data.next_cursor ?? null } : undefined), [q.data]);
  const fetchPage = useCallback(
    async (cursor: string, all: boolean, signal: AbortSignal) => {
      const page = await fetchCalls(analysisId, w!, all ? PAGE_MAX * 4 : CALLS, cursor, signal);
      return { items: page.calls, next_cursor: page.next_cursor ?? null };
    },
    [analysisId, w],
  );
  const paged = usePagedRows(first, fetchPage);
  const calls = paged.rows;
  const option = useMemo(
    () => (q.data ? buildCallsOption(calls, { t0: w!.t0, t1: w!.t1, waitStart: start, waitEnd: end, waitLine: link.wait_line ?? null }, time) : null),
    [q.data, calls, w, start, end, link.wait_line, time],
  );
  // the link clicked: its calls and its card in view, once the calls are drawn
  const focus = useReveal<HTMLDivElement>(`${link.source_id}:${link.line ?? link.wait_line}:${pos}`, !q.isPending);
  const depth = calls.reduce((d, c) => Math.max(d, c.depth + 1), 1);
  return (
    <div ref={focus} className="link-focus" data-testid="link-focus">
      <section className="panel" data-testid="calls-panel" aria-label="Calls around the wait">
        <div className="panel-head">
          <h2>
            Calls of {linkLabel(link)} <span className="muted">(link {pos})</span>
          </h2>
          <span className="muted">
            function_graph calls from {formatNs(start - (w?.t0 ?? start))} before to {formatNs((w?.t1 ?? end) - end)} after {link.lock ? 'the wait' : 'the wake-up'} · x = time, y = depth
          </span>
          <button className="btn close" aria-label="Close the calls" onClick={() => setView({ link: null })}>
            ×
          </button>
        </div>
        {q.isPending && <Loading what="calls" />}
        {q.isError && <ErrorBox title="Could not load the calls." error={q.error} />}
        {q.data && calls.length === 0 && <p className="muted">No function_graph calls of this task in this window.</p>}
        {q.data && <MoreRows paged={paged} what="calls drawn (by entry time)" />}
        {option && q.data && calls.length > 0 && (
          <EChart option={option} height={Math.min(depth, 40) * 20 + 76} ariaLabel="Call flame chart" />
        )}
      </section>
      {children}
    </div>
  );
}
