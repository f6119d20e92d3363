// The Stalls tab's latency heatmap: waits (all, or on one lock) or the duration of one traced function,
// over time; the picker is fed by /heatmap/metrics. A cell or a brushed box lists its waits or calls.
import { useCallback, useEffect, useState } from 'react';
import type { AnalysisDetail } from '../../api/types';
import { useHeatmap, useHeatmapMetrics, type HeatmapQuery } from '../../api/queries';
import { binWords, cellBox, type Heatmap, type HeatmapDatum } from '../../charts/heatmap';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount, formatNs } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import type { StallsHeatmapMetric } from '../../state/viewState';
import { HEATMAP_X_BINS, HEATMAP_Y_BINS, HeatmapBody } from '../heatmap/HeatmapBody';
import { IdleToggle } from './IdleToggle';

const METRICS: { key: StallsHeatmapMetric; label: string; title: string }[] = [
  { key: 'wait', label: 'waits (by lock)', title: 'how long tasks waited, placed at the start of each wait' },
  { key: 'func', label: 'function duration', title: "a traced function's calls, placed at their entry" },
];

export function StallsHeatmap({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const choices = useHeatmapMetrics(analysis.id, 100, view.idle);
  const functions = choices.data?.functions ?? [];
  // the metric chosen, else waits when the capture has any, else function durations (a function_graph capture
  // without waits: its calls' durations are what it can show)
  const has = (m: string) => choices.data?.metrics.some((x) => x.metric === m) ?? false;
  const metric: StallsHeatmapMetric = view.shm ?? (choices.data && !has('wait') && has('func') ? 'func' : 'wait');
  // function duration: the chosen function, else the one with the most time in calls
  const filter = metric === 'func' ? (view.shf ?? functions[0]?.func ?? null) : view.shf;
  const query: HeatmapQuery = { metric, filter, pid: null, dev: null, t0: view.t0, t1: view.t1, idle: view.idle };
  const ready = metric === 'wait' || filter !== null;
  const q = useHeatmap(analysis.id, query, HEATMAP_X_BINS, HEATMAP_Y_BINS, ready);

  const onCell = useCallback(
    (v: HeatmapDatum, data: Heatmap) => {
      const box = cellBox(data, v[0], v[0], v[1], v[1]);
      if (!box) return;
      setView(data.kind === 'wait' ? { hbox: box, wait: { sourceId: v[5], line: v[6] } } : { hbox: box });
    },
    [setView],
  );

  const noChoice = choices.data && metric === 'func' && functions.length === 0;
  const empty = q.data && q.data.cells.length === 0;
  const noun = metric === 'func' ? 'calls' : view.idle ? 'waits' : 'stalls';
  return (
    <section className="panel chart-panel" data-testid="stalls-heatmap">
      <div className="panel-head">
        <h2>Latency heatmap</h2>
        <div className="segmented" role="group" aria-label="Stalls heatmap metric">
          {METRICS.map((m) => (
            <button key={m.key} title={m.title} aria-pressed={metric === m.key} onClick={() => {
                if (m.key !== metric) setView({ shm: m.key });
              }}
            >
              {m.label}
            </button>
          ))}
        </div>
        {metric === 'wait' && choices.data && (
          <select
            className="text-input heatmap-picker"
            aria-label="Lock"
            value={view.shf ?? ''}
            onChange={(e) => setView({ shf: e.target.value || null })}
          >
            <option value="">{view.idle ? 'all waits, idle sleeps too' : 'all stalls (idle sleeps left out)'}</option>
            {choices.data.locks.map((l) => (
              <option key={l.lock_key} value={l.lock_key} title={l.locks.join(', ')}>
                {l.lock_key} · {formatCount(l.waits)} {l.waits === 1 ? 'wait' : 'waits'} · {formatNs(l.total_ns)} in all
              </option>
            ))}
          </select>
        )}
        {metric === 'wait' && <IdleToggle />}
        {metric === 'func' && choices.data && functions.length > 0 && (
          <FunctionPicker
            value={filter ?? ''}
            options={functions.map((f) => ({ name: f.func, hint: `${formatCount(f.calls)} calls · ${formatNs(f.total_ns)} in all` }))}
            onPick={(name) => setView({ shf: name })}
          />
        )}
        <span className="muted">
          {noun} {q.data && binWords(q.data) ? `per ${binWords(q.data)} × latency bin` : 'per latency bin (all at one instant)'} · click a cell or drag a box to
          list its {noun}
        </span>
      </div>
      {choices.isError && <ErrorBox title="Could not load what the heatmap can show." error={choices.error} />}
      {noChoice && <p className="muted">No traced function has calls with a known duration in this analysis.</p>}
      {ready && q.isPending && <Loading what="latency heatmap" />}
      {q.isError && <ErrorBox title="Could not load the latency heatmap." error={q.error} />}
      {empty && (
        <p className="muted">
          No {noun}
          {filter ? ` of ${filter}` : ''} in this time range.
        </p>
      )}
      {q.data && !empty && (
        <HeatmapBody
          analysisId={analysis.id}
          query={query}
          data={q.data}
          selected={metric === 'wait' ? view.wait : null}
          onCell={(v) => onCell(v, q.data!)}
          ariaLabel="Stalls latency heatmap"
        />
      )}
    </section>
  );
}

/** A function name: pick one of the listed (by total duration), or type any traced function and press Enter. */
function FunctionPicker({ value, options, onPick }: { value: string; options: { name: string; hint: string }[]; onPick: (name: string) => void }) {
  const [draft, setDraft] = useState(value);
  useEffect(() => setDraft(value), [value]);
  return (
    <form
      className="function-picker"
      onSubmit={(e) => {
        e.preventDefault();
        if (draft.trim()) onPick(draft.trim());
      }}
    >
      <input
        className="text-input mono"
        aria-label="Function"
        list="heatmap-functions"
        value={draft}
        onChange={(e) => {
          setDraft(e.target.value);
          if (options.some((o) => o.name === e.target.value)) onPick(e.target.value);
        }}
      />
      <datalist id="heatmap-functions">
        {options.map((o) => (
          <option key={o.name} value={o.name}>
            {o.hint}
          </option>
        ))}
      </datalist>
    </form>
  );
}
