import { useMemo, useState } from 'react';
import { Time } from '../../lib/timeBase';
import { MAX_MESSAGES, MESSAGES, useRequestDetail } from '../../api/queries';
import { ApiError } from '../../api/client';
import type { AnalysisDetail, BlockRequest, RequestDetail } from '../../api/types';
import { EChart } from '../../charts/EChart';
import { buildWaterfallOption, messagesNote, requestOrigin, requestSpan, waterfallPhases } from '../../charts/waterfall';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount, formatNs, formatRelNs, formatSector } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import { useReveal } from '../../lib/reveal';
import type { RequestRef } from '../../state/viewState';

export function RequestDetailPanel({ analysis, reqRef }: { analysis: AnalysisDetail; reqRef: RequestRef }) {
  const [, setView] = useViewState();
  const key = `${reqRef.sourceId}:${reqRef.line}`;
  const [allOf, setAllOf] = useState<string | null>(null); // the request whose every scheduler message was asked for
  const q = useRequestDetail(analysis.id, reqRef, allOf === key ? MAX_MESSAGES : MESSAGES);
  const source = analysis.sources.find((s) => s.id === reqRef.sourceId);
  const option = useMemo(() => (q.data ? buildWaterfallOption(q.data.request, q.data.messages) : null), [q.data]);
  const note = q.data ? messagesNote(q.data.messages.length, q.data.messages_total) : null;
  const panel = useReveal<HTMLElement>(key, !q.isPending); // wherever the link was, the request is in view

  return (
    <section ref={panel} className="panel detail-panel" data-testid="request-detail" aria-label="Request detail">
      <div className="panel-head">
        <h2>Request</h2>
        <span className="muted mono">
          {source?.filename ?? `source ${reqRef.sourceId}`} line {reqRef.line}
        </span>
        {q.data && <ShowOnTimeline r={q.data.request} reqRef={reqRef} />}
        <button className="btn close" aria-label="Close request detail" onClick={() => setView({ req: null })}>
          ×
        </button>
      </div>
      {q.isPending && <Loading what="request" />}
      {q.isError && (
        <ErrorBox
          title={q.error instanceof ApiError && q.error.status === 404 ? 'No request starts at this line.' : 'Could not load the request.'}
          error={q.error}
        />
      )}
      {q.data && option && (
        <>
          <RequestFacts r={q.data.request} />
          {q.data.layers.length > 1 && <BlockLayers layers={q.data.layers} reqRef={reqRef} />}
          <h3>Waterfall</h3>
          {note && (
            <p className="muted messages-note" data-testid="messages-note">
              {note}.{' '}
              {q.data.messages_total <= MAX_MESSAGES && (
                <button className="btn small" disabled={q.isPlaceholderData} onClick={() => setAllOf(key)}>
                  {q.isPlaceholderData ? 'Loading…' : `Show all ${formatCount(q.data.messages_total)}`}
                </button>
              )}
            </p>
          )}
          <EChart
            option={option}
            height={Math.max(waterfallPhases(q.data.request).length + (q.data.messages.length ? 1 : 0), 1) * 34 + 70}
            ariaLabel="Request phases waterfall"
            className="waterfall"
          />
          {/* the process before the sector (the request's, in the facts above): when the panel is narrow, the
              sector scrolls out of view rather than the comm */}
          <h3>Trace events</h3>
          <div className="table-scroll">
            <table className="grid compact events" data-testid="request-events">
              <thead>
                <tr>
                  <th className="num">Line</th>
                  <th className="num">Time</th>
                  <th className="num">vs I</th>
                  <th className="num">CPU</th>
                  <th>Action</th>
                  <th>Process</th>
                  <th>RWBS</th>
                  <th className="num" title="first sector + sectors (512 bytes)">Sector</th>
                </tr>
              </thead>
              <tbody>
                {q.data.events.map((e) => (
                  <tr key={e.line}>
                    <td className="num mono">{e.line}</td>
                    <td className="num mono">
                      <Time ns={e.t_ns} />
                    </td>
                    <td className="num">{relToI(q.data.request, e.t_ns)}</td>
                    <td className="num">{e.cpu}</td>
                    <td className="mono strong">{e.action}</td>
                    <td className="mono">
                      {e.pid} {e.comm ?? ''}
                    </td>
                    <td className="mono">{e.rwbs}</td>
                    <td className="num mono">{e.sector === null ? '—' : `${e.sector} + ${e.nsect ?? 0}`}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <h3>
            Scheduler messages while it waited{' '}
            <span className="muted">
              ({note ? `${formatCount(q.data.messages.length)} of ${formatCount(q.data.messages_total)}` : formatCount(q.data.messages_total)})
            </span>
          </h3>
          {q.data.messages.length === 0 ? (
            <p className="muted">The I/O scheduler logged no messages on this device while the request waited.</p>
          ) : (
            <div className="table-scroll tall">
              <table className="grid compact" data-testid="request-messages">
                <thead>
                  <tr>
                    <th className="num">Line</th>
                    <th className="num">vs I</th>
                    <th className="num">CPU</th>
                    <th>Message</th>
                  </tr>
                </thead>
                <tbody>
                  {q.data.messages.map((m) => (
                    <tr key={m.line}>
                      <td className="num mono">{m.line}</td>
                      <td className="num">{relToI(q.data.request, m.t_ns)}</td>
                      <td className="num">{m.cpu}</td>
                      <td className="mono">{m.message}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
    </section>
  );
}

function relToI(r: BlockRequest, t: number): string {
  const ref = r.i_ns ?? requestOrigin(r);
  return ref === null ? '—' : formatRelNs(t - ref);
}

/** The request on the timeline: a window around it, its slice selected (the device lane's, as the drawer's "Open the
 * request" names it back). */
function ShowOnTimeline({ r, reqRef }: { r: BlockRequest; reqRef: RequestRef }) {
  const [, setView] = useViewState();
  const span = requestSpan(r);
  if (!span) return null;
  const pad = Math.max(Math.round((span[1] - span[0]) / 4), 1000);
  return (
    <button className="btn small" onClick={() => setView({ tab: 'timeline', v0: span[0] - pad, v1: span[1] + pad, tlSel: reqRef })}>
      Show on the timeline
    </button>
  );
}

function RequestFacts({ r }: { r: BlockRequest }) {
  const phases: [string, number | null, string][] = [
    ['Q2G', r.q2g_ns, 'q2g'],
    ['G2I', r.g2i_ns, 'g2i'],
    ['I2D', r.i2d_ns, 'i2d'],
    ['D2C', r.d2c_ns, 'd2c'],
    ['Q2C', r.q2c_ns, 'q2c'],
  ];
  return (
    <>
      <div className="facts req-facts">
        <span>
          <span className="k">Device</span> <span className="mono">{r.dev}</span>
        </span>
        <span>
          <span className="k">Sector</span> <span className="mono">{formatSector(r.sector, r.nsect)}</span>
        </span>
        <span>
          <span className="k">RWBS</span> <span className="mono">{r.rwbs ?? '—'}</span>
        </span>
        <span>
          <span className="k">Process</span>{' '}
          <span className="mono">
            {r.pid ?? '—'} {r.comm ?? ''}
          </span>
        </span>
        <span>
          <span className="k">Start</span> <span className="mono">
            <Time ns={requestOrigin(r)} />
          </span>
        </span>
        {r.from_dev && (
          <span>
            <span className="k">Remapped from</span>{' '}
            <span className="mono">
              {r.from_dev} {r.from_sector ?? ''}
            </span>
          </span>
        )}
        {r.merged_bios > 0 && (
          <span>
            <span className="k">Merged bios</span> {r.merged_bios}
          </span>
        )}
        {r.requeues > 0 && (
          <span className="warn">
            <span className="k">Requeues</span> {r.requeues}
          </span>
        )}
        {r.error !== null && r.error !== 0 && (
          <span className="warn">
            <span className="k">Error</span> {r.error}
          </span>
        )}
      </div>
      <div className="phase-chips">
        {phases.map(([label, v, cls]) => (
          <span key={label} className={`phase-chip ${cls}`}>
            <span className="k">{label}</span> {formatNs(v)}
          </span>
        ))}
      </div>
    </>
  );
}

/** The block stack's layers this I/O went through (a dm/md/LVM bio, then the disk's request), each with the time it
 * held the I/O: where the time went, and a link to each layer's own request. */
function BlockLayers({ layers, reqRef }: { layers: RequestDetail['layers']; reqRef: RequestRef }) {
  const [, setView] = useViewState();
  const longest = Math.max(...layers.map((l) => l.held_ns ?? 0));
  return (
    <>
      <h3>Where the time went: {layers.length} block layers</h3>
      <div className="table-scroll">
        <table className="grid compact" data-testid="request-layers">
          <thead>
            <tr>
              <th>Device</th>
              <th className="num" title="until the layer below queued it; the bottom layer's: from its start to its completion">
                Held
              </th>
              <th className="num">Share</th>
              <th>Layer</th>
              <th>Process</th>
              <th />
            </tr>
          </thead>
          <tbody>
            {layers.map((l) => {
              const here = l.source_id === reqRef.sourceId && l.line === reqRef.line;
              return (
                <tr key={`${l.source_id}:${l.line}`} className={l.held_ns !== null && l.held_ns === longest ? 'strong' : undefined}>
                  <td className="mono">
                    {l.dev}
                    {l.name ? ` (${l.name})` : ''}
                  </td>
                  <td className="num">{formatNs(l.held_ns)}</td>
                  <td className="num">{l.share === null ? '—' : `${(l.share * 100).toFixed(1)} %`}</td>
                  <td>{l.kind}</td>
                  <td className="mono">
                    {l.pid ?? '—'} {l.comm ?? ''}
                  </td>
                  <td>
                    {here ? (
                      <span className="muted">this request</span>
                    ) : (
                      <button className="btn small" onClick={() => setView({ req: { sourceId: l.source_id, line: l.line } })}>
                        Open
                      </button>
                    )}
                  </td>
                </tr>
              );
            })}
          </tbody>
        </table>
      </div>
    </>
  );
}
