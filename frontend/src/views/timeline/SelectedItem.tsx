// What is selected on the timeline, in a drawer stuck to the bottom of the window (as Perfetto's details panel):
// a click on a slice shows its details at once, wherever the timeline is scrolled.
import type { Item, TimelineArrow, TimelineLane } from '../../charts/timeline';
import { Time } from '../../lib/timeBase';
import { RELATION_COLORS, STATE_COLORS, UNKNOWN_LOCK, earlyNote, requestOfSegment, waitName } from '../../charts/timeline';
import { formatCount, formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import { useReveal } from '../../lib/reveal';

export function SelectedItem({ item, chain, arrows, lanes }: { item: Item | null; chain: number | null; arrows: TimelineArrow[]; lanes: TimelineLane[] }) {
  const [, setView] = useViewState();
  const key = item?.kind === 'segment' ? `s${item.seg.source_id}:${item.seg.line}:${item.lane.id}` : item?.kind === 'mark' ? `m${item.mark.line}` : chain !== null ? `c${chain}` : null;
  const ref = useReveal<HTMLElement>(key);
  const chainArrows = chain !== null ? arrows.filter((a) => a.chain_id === chain) : [];
  // by the lanes of the response, not the drawn layout: a lane folded away or filtered out by a search is still named
  const laneLabel = (id: string) => lanes.find((l) => l.id === id)?.label ?? laneIdLabel(id);
  const close = () => setView({ tlSel: null, chain: null });
  const request = chainArrows.map((a) => a.request as { source_id?: number; line?: number } | null).find((r) => r && typeof r.line === 'number');

  const chainPart = chain !== null && (
    <div className="drawer-chain">
      <h3>
        Chain #{chain}
        {chainArrows.length === 0 && <span className="muted"> (its lanes are not in this window)</span>}
      </h3>
      {chainArrows.length > 0 && (
        <ol className="chain-arrows mono">
          {chainArrows.map((a, i) => (
            <li key={i}>
              <span className="swatch" style={{ background: RELATION_COLORS[a.relation] ?? '#ccc' }} /> {laneLabel(a.to_lane)} ← {a.relation.replace('_', ' ')} ←{' '}
              {laneLabel(a.from_lane)} <span className="muted">
                at <Time ns={a.to_ns} />
              </span>
            </li>
          ))}
        </ol>
      )}
      <div className="actions">
        <button className="btn" onClick={() => setView({ tab: 'stalls', chain, link: null })}>
          Open chain #{chain} in Stalls
        </button>
        {request && (
          <button className="btn" data-testid="drawer-request" onClick={() => setView({ tab: 'dispatch', req: { sourceId: request.source_id!, line: request.line! } })}>
            Open its block request
          </button>
        )}
      </div>
    </div>
  );

  if (!item && chain === null) return null;
  return (
    <section ref={ref} className="panel timeline-drawer" data-testid="timeline-selected" aria-label="Selected on the timeline">
      <button className="btn small drawer-close" onClick={close} aria-label="Close" title="Close (Esc)">
        ×
      </button>
      {item?.kind === 'mark' && (
        <>
          <h3>print marker</h3>
          <p className="mono">{item.mark.text}</p>
          <p className="muted">
            {item.mark.comm} ({item.mark.pid}) at <Time ns={item.mark.t_ns} /> · source {item.mark.source_id}, line {item.mark.line}
          </p>
        </>
      )}
      {item?.kind === 'segment' && <SegmentDetail item={item} />}
      {chainPart}
    </section>
  );
}

/** A lane the response does not hold, named from its id (task:<source>:<pid>, dev:<source>:<dev>): "pid 421",
 * "device 8,0" — never the id itself. */
export function laneIdLabel(id: string): string {
  const [kind, , key] = id.split(':');
  if (kind === 'task' || kind === 'proc') return `pid ${key}`;
  if (kind === 'dev') return `${id.split(':').slice(2).join(':')} (device)`;
  if (kind === 'cpu') return `CPU ${key}`;
  return id;
}

function SegmentDetail({ item }: { item: Extract<Item, { kind: 'segment' }> }) {
  const [, setView] = useViewState();
  const { lane, seg } = item;
  const req = requestOfSegment(seg);
  const what = lane.kind === 'cpu' ? `${seg.state} running` : seg.track === 'call' ? `${seg.state}()` : seg.track === 'wait' ? waitName(seg) : seg.track === 'queued' ? 'I→D (queued)' : seg.track === 'service' ? 'D→C (service)' : seg.state;
  return (
    <div className="drawer-segment">
      <h3>
        {lane.label}: {what}
      </h3>
      {item.early && (
        <p className="muted" data-testid="drawer-early">
          {earlyNote(seg)[0].toUpperCase() + earlyNote(seg).slice(1)}: the trace shows its {seg.track === 'call' ? 'exit' : 'end'} only, at line{' '}
          {seg.line}. Its start is that time minus the duration the trace printed ({formatNs(seg.max_ns)}), before the
          capture&apos;s first event.
        </p>
      )}
      <table className="grid compact">
        <tbody>
          <tr>
            <th>From → to (shown)</th>
            <td className="mono">
              <Time ns={seg.t0_ns} /> → <Time ns={seg.t1_ns} /> ({formatNs(seg.t1_ns - seg.t0_ns)})
            </td>
            <th>{seg.n > 1 ? 'Longest of the merged' : 'Duration'}</th>
            <td>{formatNs(seg.max_ns)}</td>
          </tr>
          <tr>
            <th>{seg.n > 1 ? 'Merged here' : 'Segments'}</th>
            <td>
              {formatCount(seg.n)}
              {seg.n > 1 && <span className="muted"> (shorter than a pixel each, drawn as one; F or zoom in to separate them)</span>}
            </td>
            <th>Behind it</th>
            <td className="mono">
              source {seg.source_id}, line {seg.line}
            </td>
          </tr>
        </tbody>
      </table>
      <div className="actions">
        {req && (
          <button className="btn" data-testid="drawer-request" onClick={() => setView({ tab: 'dispatch', req })}>
            Open the request
          </button>
        )}
        {seg.track === 'wait' && seg.state !== UNKNOWN_LOCK && (
          <button className="btn" onClick={() => setView({ tab: 'stalls', lockKey: seg.state, lock: null, wait: { sourceId: seg.source_id, line: seg.line }, chain: null, link: null })}>
            Waits on {seg.state}
          </button>
        )}
        <button className="btn" onClick={() => setView({ tlMark: [seg.t0_ns, seg.t1_ns] })} title="M">
          Measure it
        </button>
        <button className="btn" onClick={() => setView({ t0: seg.t0_ns, t1: Math.max(seg.t1_ns, seg.t0_ns + 1) })}>
          Select its time range
        </button>
      </div>
    </div>
  );
}

export function Legend({ arrowsAll, onArrows }: { arrowsAll: boolean; onArrows: (all: boolean) => void }) {
  return (
    <div className="legend-row muted">
      {(['running', 'runnable', 'blocked'] as const).map((s) => (
        <span key={s}>
          <span className="swatch" style={{ background: STATE_COLORS[s] }} /> {s}
        </span>
      ))}
      <span>
        <span className="swatch" style={{ background: 'hsl(200,55%,58%)' }} /> wait / call (colour = lock or function)
      </span>
      <span>
        <span className="swatch" style={{ background: STATE_COLORS.queued }} /> I→D queued
      </span>
      <span>
        <span className="swatch" style={{ background: STATE_COLORS.service }} /> D→C service
      </span>
      <span>— requests in flight</span>
      {Object.entries(RELATION_COLORS).map(([k, c]) => (
        <span key={k}>
          <span className="swatch" style={{ background: c }} /> {k.replace('_', ' ')}
        </span>
      ))}
      <span>
        <span className="swatch" style={{ background: '#b99cf0' }} /> offcputime window
      </span>
      <label className="control check" title="Chain arrows: the selected chain's only (click a wait or an arrow), or every chain's">
        <input type="checkbox" checked={arrowsAll} onChange={(e) => onArrows(e.target.checked)} data-testid="all-arrows" /> every chain's arrows
      </label>
    </div>
  );
}
