import { useMemo } from 'react';
import { Time, useTimeBase } from '../../lib/timeBase';
import { Link } from 'react-router';
import type { AnalysisDetail } from '../../api/types';
import type { Chain, ChainLink, Mark } from '../../api/stallTypes';
import { EChart, type EChartHandler } from '../../charts/EChart';
import { buildChainOption, chainLayout, linkLabel, relationLabel } from '../../charts/chainWaterfall';
import { formatNs, formatSector, formatWaitNs, taskLabel } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import { encodeView, updateView, type ViewState } from '../../state/viewState';
import { hasWakerStacks } from '../../lib/wakers';
import { CallsPanel } from './CallsPanel';
import { useReveal } from '../../lib/reveal';
import { Stack } from './Stack';
import { WakerSide } from './WakerSide';
import { CopyChainText } from './CopyChainText';

export function ChainDetail({ analysis, chain, marks }: { analysis: AnalysisDetail; chain: Chain; marks: Mark[] }) {
  const [view, setView] = useViewState();
  const selectedLink = view.link !== null && view.link <= chain.links.length ? view.link : null;
  const time = useTimeBase();
  const option = useMemo(() => buildChainOption(chain, marks, selectedLink, time), [chain, marks, selectedLink, time]);
  const rows = useMemo(() => chainLayout(chain, marks).rows, [chain, marks]);
  const events = useMemo<Record<string, EChartHandler>>(
    () => ({
      click: (p) => {
        if (p?.componentType !== 'series' || p.seriesName !== 'waits') return;
        const r = rows[p.dataIndex as number];
        if (r?.link) setView({ chain: chain.id, link: r.link });
        else if (r?.kind === 'request') {
          // the block request's bar: its detail in Dispatch (as the link card's "open in Dispatch")
          const req = chain.links.find((l) => l.request)?.request;
          if (req) setView({ tab: 'dispatch', req: { sourceId: req.source_id, line: req.line } });
        }
      },
    }),
    [rows, chain.id, chain.links, setView],
  );
  const link = selectedLink !== null ? chain.links[selectedLink - 1] : null;
  const request = chain.links.find((l) => l.request)?.request ?? null;
  // a chain chosen (in the list, or by a link from another tab) is brought into view; its link's calls, when one is
  const detail = useReveal<HTMLDivElement>(view.chain !== null && selectedLink === null ? String(chain.id) : null);
  const card = (l: ChainLink, i: number) => (
    <LinkCard
      key={i}
      link={l}
      pos={i + 1}
      next={chain.links[i + 1] ?? null}
      selected={selectedLink === i + 1}
      onOpen={() => setView({ chain: chain.id, link: i + 1 })}
      analysis={analysis}
    />
  );

  return (
    <div ref={detail} className="chain-detail" data-testid="chain-detail">
      <section className="panel">
        <div className="panel-head">
          <h2>Chain #{chain.id}</h2>
          <CopyChainText analysisId={analysis.id} rank={chain.id} />
          <span className="chain-path mono" data-testid="chain-path">
            {chain.links.map((l, i) => (
              <span key={i}>
                {i > 0 && <span className="rel"> {relationLabel(chain.links[i - 1].relation) || '→'} </span>}
                <button className="path-link" onClick={() => setView({ chain: chain.id, link: i + 1 })} aria-pressed={selectedLink === i + 1} title="Show this task's calls around its wait">
                  {linkLabel(l)}
                </button>
              </span>
            ))}
            {request && (
              <span>
                <span className="rel"> · block request </span>
                {/* the block request at the end of the chain, one click from the worst stall (it was a card far below) */}
                <Link to={requestHref(view, request)} data-testid="chain-request" title="Open this block request in Dispatch">
                  {request.dev} {request.rwbs} {formatSector(request.sector, request.nsect)} →
                </Link>
              </span>
            )}
          </span>
          <span className="muted">
            first task stalled <b className="strong">{formatNs(chain.duration_ns)}</b> · click a row for its calls, the request for its detail
          </span>
        </div>
        <EChart option={option} onEvents={events} height={rows.length * 46 + 80} ariaLabel="Wait chain waterfall" className="chain-waterfall" />
        <div className="legend-row muted">
          <span className="swatch wait" /> wait <span className="swatch inferred" /> inferred (dashed) <span className="swatch instant" /> waker
          running <span className="swatch request" /> block request <span className="swatch mark" /> print marker
        </div>
      </section>
      {link && selectedLink !== null && (
        // the link chosen (a chip of the path, a row of the waterfall): its calls and, right under them, its card
        <CallsPanel analysisId={analysis.id} link={link} pos={selectedLink}>
          {card(link, selectedLink - 1)}
        </CallsPanel>
      )}
      <div className="link-cards">{chain.links.map((l, i) => (selectedLink === i + 1 ? null : card(l, i)))}</div>
    </div>
  );
}

/** The request in Dispatch, keeping the rest of the view (the time range, this chain and link, the heatmap box). */
function requestHref(view: ViewState, r: { source_id: number; line: number }): string {
  return `?${encodeView(updateView(view, { tab: 'dispatch', req: { sourceId: r.source_id, line: r.line } })).toString()}`;
}

function LinkCard({
  link: l,
  pos,
  next,
  selected,
  onOpen,
  analysis,
}: {
  link: ChainLink;
  pos: number;
  next: ChainLink | null;
  selected: boolean;
  onOpen: () => void;
  analysis: AnalysisDetail;
}) {
  const [view] = useViewState();
  const rel = relationLabel(l.relation);
  const isWait = !!l.lock || (l.duration_ns ?? 0) > 0;
  const src = analysis.sources.find((s) => s.id === l.request?.source_id);
  const href = l.request ? requestHref(view, l.request) : '';
  return (
    <section className={`panel link-card${selected ? ' selected' : ''}`} data-testid={`link-${pos}`} aria-label={`Link ${pos}: ${linkLabel(l)}`}>
      <div className="panel-head">
        <button className="btn link-open" onClick={onOpen} aria-pressed={selected} title="Show this task's calls around it">
          {pos}. {linkLabel(l)}
        </button>
        {isWait ? (
          <>
            <span className="mono strong">{l.lock ?? 'off CPU'}</span>
            {l.wait_kind && (
              <span className={`wait-kind wait-kind-${l.wait_kind}`} title={l.wait_why ?? undefined} data-testid={`link-why-${pos}`}>
                <span className="badge">{l.wait_kind}</span> {l.wait_rule}
              </span>
            )}
            <span className="strong">
              {formatNs(l.duration_ns)}
              {l.end_known ? '' : ' (end not traced)'}
            </span>
          </>
        ) : (
          <span className="muted">running: the end of the chain</span>
        )}
        {l.inferred && <span className="badge inferred">inferred</span>}
        {rel && next && (
          <span className="muted">
            {rel} <span className="mono">{linkLabel(next)}</span>
          </span>
        )}
        <span className="muted mono">line {l.line ?? l.wait_line ?? '—'}</span>
      </div>
      <div className="facts">
        <span>
          <span className="k">From</span> <span className="mono">
            <Time ns={l.start_ns} />
          </span>
        </span>
        <span>
          <span className="k">To</span> <span className="mono">
            <Time ns={l.end_ns} />
          </span>
        </span>
      </div>
      <p className="evidence">
        <span className="k">Evidence</span> {l.evidence}
      </p>
      {l.request && (
        <p className="request-link">
          <span className="k">Block request</span>{' '}
          <Link to={href} data-testid="request-link">
            {l.request.dev} {l.request.rwbs} {formatSector(l.request.sector, l.request.nsect)}
            {l.request.comm ? ` by ${l.request.comm}` : ''}
            {l.request.d_ns !== null && l.request.c_ns !== null ? ` · D2C ${formatNs(l.request.c_ns - l.request.d_ns)}` : ''} → open in Dispatch
          </Link>{' '}
          <span className="muted mono">
            ({src?.filename ?? `source ${l.request.source_id}`} line {l.request.line})
          </span>
        </p>
      )}
      <div className="stacks">
        <Stack title={isWait ? 'Its stack' : 'Its stack at the wake-up'} frames={l.stack} testid={`stack-${pos}`} />
        {next && isWait && <Stack title={`${rel ? rel[0].toUpperCase() + rel.slice(1) : 'Next'}: ${linkLabel(next)}'s stack`} frames={next.stack} testid={`waker-stack-${pos}`} />}
      </div>
      {isWait && hasWakerStacks(analysis.sources) && <WakerSide analysis={analysis} link={l} pos={pos} />}
      {l.also_waiting.length > 0 && (
        <div className="also-waiting">
          <h3>Also waiting on it ({l.also_waiting.length})</h3>
          <table className="grid compact">
            <tbody>
              {l.also_waiting.map((a, i) => (
                <tr key={i}>
                  <td className="mono">
                    {taskLabel(a.comm, a.pid)}
                  </td>
                  <td className="mono">{a.lock ?? '—'}</td>
                  <td className="num">
                    {formatWaitNs(a.duration_ns, a.end_known)}
                  </td>
                  <td className="mono muted">line {a.line}</td>
                  <td>{a.inferred && <span className="badge inferred">inferred</span>}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
