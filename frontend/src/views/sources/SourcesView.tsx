import { useState } from 'react';
import { Time } from '../../lib/timeBase';
import { useNavigate } from 'react-router';
import type { AnalysisDetail, SourceDetail } from '../../api/types';
import { usePlaceSource } from '../../api/queries';
import { formatBytes, formatCount, formatNs, formatName } from '../../lib/format';
import { DeleteAnalysis, SkippedAndNotes, SourceFiles } from '../HomePage';

const METHOD: Record<string, string> = {
  reference: 'reference clock',
  block_events: 'matched block events',
  same_clock: 'same clock (spans overlap)',
  start: 'start times placed together',
  manual: 'set by hand',
};

/** Every source with what was parsed, and where its clock sits on the analysis timeline (editable). */
export function SourcesView({ a }: { a: AnalysisDetail }) {
  const navigate = useNavigate();
  const uploaded = a.sources.reduce((n, s) => n + s.bytes, 0);
  const files = a.sources.reduce((n, s) => n + Math.max(1, s.files.length), 0);
  return (
    <section className="panel">
      <h2>Sources</h2>
      <p data-testid="analysis-size">
        <span className="k">Size</span> <b>{formatBytes(uploaded)}</b> uploaded in {files} {files === 1 ? 'file' : 'files'}{' '}
        <span className="muted">
          (the files as read; the rows derived from them and kept by the server are not counted)
        </span>
      </p>
      <table className="grid">
        <thead>
          <tr>
            <th>File</th>
            <th>Format</th>
            <th>SHA-256</th>
            <th className="num">Size</th>
            <th className="num">Lines</th>
            <th className="num">Events</th>
            <th className="num">Skipped lines</th>
            <th>Clock</th>
            <th className="num">On the timeline</th>
          </tr>
        </thead>
        <tbody>
          {a.sources.map((s) => (
            <tr key={s.id}>
              <td className="mono">
                {s.filename}
                <SourceFiles files={s.files} />
              </td>
              <td>
                <span className="badge">{formatName(s)}</span>
              </td>
              <td
                className="mono"
                title={
                  s.files.length > 1
                    ? `SHA-256 of sha256sum's lines for its files, by name (sha256sum NAME.blktrace.* | LC_ALL=C sort -k2 | sha256sum): ${s.sha256}`
                    : `SHA-256 of the file as read: ${s.sha256}`
                }
                data-testid={`sha256-${s.id}`}
              >
                {s.sha256.slice(0, 12)}…
              </td>
              <td className="num">{formatBytes(s.bytes)}</td>
              <td className="num">{formatCount(s.lines)}</td>
              <td className="num">{formatCount(s.events)}</td>
              <td className="num">{formatCount(s.skipped_lines)}</td>
              <td>{s.clock ?? <span className="muted">not named in the file</span>}</td>
              <td className="num mono">
                {s.t_min_ns === null ? (
                  '—'
                ) : (
                  <>
                    <Time ns={s.t_min_ns + s.clock_offset_ns} /> → {s.t_max_ns === null ? '?' : <Time ns={s.t_max_ns + s.clock_offset_ns} />}
                  </>
                )}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
      <h3>Clock alignment</h3>
      <p className="muted">
        Aligned time = the source&apos;s own time + its offset. The offsets were found at ingest; change one here and every view (and
        the link to this analysis) follows.
      </p>
      <div className="align-cards">
        {a.sources.map((s) => (
          <ClockCard key={s.id} a={a} s={s} />
        ))}
      </div>
      {a.sources.map((s) => (
        <SkippedAndNotes key={s.id} filename={s.filename} skipped={s.skipped_examples} notes={s.notes} total={s.skipped_lines} />
      ))}
      {a.sources.every((s) => s.skipped_lines === 0 && s.notes.length === 0) && <p className="muted">Every line of every source was parsed.</p>}
      <h3>Delete</h3>
      <p className="muted">
        Deletes the analysis and every row derived from it, for everyone with its link. On a shared server it needs the
        edit key this browser kept when it uploaded the analysis, or the server&apos;s token.
      </p>
      <DeleteAnalysis id={a.id} name={a.name || a.id} onDeleted={() => navigate('/')} />
    </section>
  );
}

/** "-5237.418062913" (seconds) ↔ ns, exactly (no float rounding of the ns digits). */
export function secondsToNs(text: string): number | null {
  const m = /^\s*([+-]?)(\d*)(?:\.(\d{0,9}))?\s*$/.exec(text);
  if (!m || (m[2] === '' && (m[3] ?? '') === '')) return null;
  const ns = Number(m[2] || '0') * 1e9 + Number((m[3] ?? '').padEnd(9, '0'));
  if (!Number.isSafeInteger(ns)) return null;
  return m[1] === '-' ? -ns : ns;
}

export function nsToSeconds(ns: number): string {
  const sign = ns < 0 ? '-' : '';
  const a = Math.abs(ns);
  return `${sign}${Math.floor(a / 1e9)}.${String(a % 1e9).padStart(9, '0')}`;
}

function ClockCard({ a, s }: { a: AnalysisDetail; s: SourceDetail }) {
  const place = usePlaceSource(a.id);
  const [draft, setDraft] = useState(nsToSeconds(s.clock_offset_ns));
  const [same, setSame] = useState('');
  const al = s.alignment;
  const others = a.sources.filter((o) => o.id !== s.id && o.t_min_ns !== null && o.format !== 'offcputime');
  const parsed = secondsToNs(draft);
  return (
    <div className="align-card" data-testid={`clock-${s.id}`} role="group" aria-label={`Clock of ${s.filename}`}>
      <div className="mono strong">{s.filename}</div>
      <div>
        offset <b className="mono" data-testid={`offset-${s.id}`}>{nsToSeconds(s.clock_offset_ns)} s</b>{' '}
        <span className="muted">({formatNs(s.clock_offset_ns)})</span> · {al ? METHOD[al.method] ?? al.method : 'not aligned'}
      </div>
      <div>
        clock <span className="mono">{s.clock ?? 'not named in the file'}</span>
      </div>
      {/* matched block events: the line below says what the server's detail says, with units */}
      {al && al.method !== 'block_events' && <div className="muted">{al.detail}</div>}
      {al?.method === 'block_events' && (
        <div data-testid={`alignment-${s.id}`}>
          {formatCount(al.matched ?? 0)} of {formatCount(al.candidates ?? 0)} block events matched blktrace requests (device, sector,
          size) · residual p50 {formatNs(al.residual_p50_ns)}, max {formatNs(al.residual_max_ns)}
        </div>
      )}
      {al?.warnings.map((w) => (
        <div key={w} className="warn">
          ⚠ {w}
        </div>
      ))}
      <form
        className="inline-form"
        onSubmit={(e) => {
          e.preventDefault();
          if (parsed !== null) place.mutate({ sourceId: s.id, placement: { clock_offset_ns: parsed } });
        }}
      >
        <label>
          offset (s){' '}
          <input
            className="text-input mono"
            aria-label={`Clock offset of ${s.filename} in seconds`}
            value={draft}
            onChange={(e) => setDraft(e.target.value)}
            size={22}
          />
        </label>
        <button className="btn small" type="submit" disabled={parsed === null || parsed === s.clock_offset_ns || place.isPending}>
          Apply
        </button>
        {others.length > 0 && (
          <>
            <select className="text-input" aria-label={`Place ${s.filename} like another source`} value={same} onChange={(e) => setSame(e.target.value)}>
              <option value="">same span as…</option>
              {others.map((o) => (
                <option key={o.id} value={o.id}>
                  {o.filename}
                </option>
              ))}
            </select>
            <button
              className="btn small"
              type="button"
              disabled={!same || place.isPending}
              onClick={() => place.mutate({ sourceId: s.id, placement: { same_span_as: Number(same) } }, { onSuccess: (r) => setDraft(nsToSeconds(r.clock_offset_ns)) })}
            >
              Place
            </button>
          </>
        )}
      </form>
      {parsed === null && <div className="error">Not a number of seconds (e.g. -5237.418062913).</div>}
      {place.isError && <div className="error">{place.error.message}</div>}
    </div>
  );
}
