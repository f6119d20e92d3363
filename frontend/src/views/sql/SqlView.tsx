import { useEffect, useMemo, useState } from 'react';
import type { AnalysisDetail } from '../../api/types';
import { SQL_MAX_ROWS, exportUrl, perfettoUrl, useSqlQuery, useSqlViews } from '../../api/sqlQueries';
import { EChart } from '../../charts/EChart';
import { MAX_BARS, buildSqlChartOption, categoryColumns, categoryTotals, chartHeight, numericColumns, type SqlChart, type SqlColumn } from '../../charts/sqlChart';
import { toCsv } from '../../lib/csv';
import { ErrorBox, Loading } from '../../components/Status';
import { formatCount } from '../../lib/format';
import { useViewState } from '../../state/useViewState';
import { EXAMPLES } from './examples';
import { chartOf, chartRef, nextSort, sortOf } from './resultState';
import './sql.css';

const SHOWN = 1000; // rows drawn in the table (the CSV download has them all)

/** The SQL console: one SELECT over the analysis' views, kept in the URL (?sql=) with its result's chart and sort
 * (sql_chart, sql_x, sql_y, sql_sort, sql_desc), so that a link shares the same result, sorted and charted alike. */
export function SqlView({ analysis }: { analysis: AnalysisDetail }) {
  const [view, setView] = useViewState();
  const [text, setText] = useState(view.sql ?? EXAMPLES[0].sql);
  useEffect(() => {
    if (view.sql !== null) setText(view.sql);
  }, [view.sql]);
  const q = useSqlQuery(analysis.id, view.sql);
  const run = () => (text === view.sql ? void q.refetch() : setView({ sql: text }));

  return (
    <div className="sql-view">
      <section className="panel">
        <div className="panel-head">
          <h2>SQL</h2>
          <span className="muted">
            One SELECT over this analysis' views, read-only: times in ns on the analysis timeline, as in the API.
          </span>
        </div>
        <div className="sql-editor-row">
          <div className="sql-editor">
            <textarea
              className="mono"
              aria-label="SQL query"
              data-testid="sql-editor"
              spellCheck={false}
              rows={Math.min(18, Math.max(6, text.split('\n').length + 1))}
              value={text}
              onChange={(e) => setText(e.target.value)}
              onKeyDown={(e) => {
                if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
                  e.preventDefault();
                  run();
                }
              }}
            />
            <div className="sql-actions">
              <button className="btn primary" onClick={run} data-testid="sql-run">
                Run
              </button>{' '}
              <span className="muted">Ctrl+Enter · at most {formatCount(SQL_MAX_ROWS)} rows · examples:</span>{' '}
              {EXAMPLES.map((ex) => (
                <button key={ex.title} className="linklike" onClick={() => setText(ex.sql)}>
                  {ex.title}
                </button>
              ))}
            </div>
          </div>
          <ViewList onPick={(name) => setText((t) => t + (t.endsWith(' ') || t === '' ? '' : ' ') + name)} />
        </div>
      </section>
      {view.sql !== null && (
        <section className="panel" data-testid="sql-result">
          {q.isFetching && <Loading what="the result" />}
          {q.isError && <ErrorBox title="The query was refused or failed." error={q.error} />}
          {q.data && !q.isError && <Result columns={q.data.columns} rows={q.data.rows} truncated={q.data.truncated} ms={q.data.elapsed_ms} />}
        </section>
      )}
      <Downloads analysisId={analysis.id} />
    </div>
  );
}

function ViewList({ onPick }: { onPick: (name: string) => void }) {
  const v = useSqlViews();
  if (v.isPending) return <Loading what="views" />;
  if (v.isError) return <ErrorBox title="Could not list the views." error={v.error} />;
  return (
    <aside className="sql-views" data-testid="sql-views">
      {v.data.map((view) => (
        <details key={view.name}>
          <summary>
            <button className="linklike mono" onClick={() => onPick(view.name)} title="Insert this view's name">
              {view.name}
            </button>
          </summary>
          <p className="muted">{view.about}</p>
          <ul className="mono">
            {view.columns.map((c) => (
              <li key={c.name}>
                <button className="linklike" onClick={() => onPick(c.name)}>
                  {c.name}
                </button>{' '}
                <span className="muted">{c.type}</span>
              </li>
            ))}
          </ul>
        </details>
      ))}
    </aside>
  );
}

function cell(v: unknown): string {
  if (v === null || v === undefined) return 'NULL';
  if (Array.isArray(v)) return v.map((x) => (typeof x === 'object' ? JSON.stringify(x) : String(x))).join(' ← ');
  if (typeof v === 'object') return JSON.stringify(v);
  return String(v);
}

function compare(a: unknown, b: unknown): number {
  if (a === b) return 0;
  if (a === null || a === undefined) return 1;
  if (b === null || b === undefined) return -1;
  if (typeof a === 'number' && typeof b === 'number') return a - b;
  return cell(a).localeCompare(cell(b));
}

function Result({ columns, rows, truncated, ms }: { columns: SqlColumn[]; rows: unknown[][]; truncated: boolean; ms: number }) {
  const [view, setView] = useViewState();
  const sort = useMemo(() => sortOf(view.sqlSort, columns), [view.sqlSort, columns]);
  const chart = useMemo(() => chartOf(view.sqlChart, columns), [view.sqlChart, columns]);
  const setChart = (c: SqlChart | null) => setView({ sqlChart: chartRef(c, columns) }, { replace: true });
  const sorted = useMemo(() => {
    if (sort === null) return rows;
    const out = [...rows];
    out.sort((a, b) => (sort.desc ? -1 : 1) * compare(a[sort.col], b[sort.col]));
    return out;
  }, [rows, sort]);
  const option = useMemo(() => (chart && rows.length ? buildSqlChartOption(columns, rows, chart) : null), [columns, rows, chart]);
  const nums = numericColumns(columns);
  const cats = categoryColumns(columns);

  function download() {
    const url = URL.createObjectURL(new Blob([toCsv(columns.map((c) => c.name), sorted)], { type: 'text/csv' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = 'query.csv';
    a.click();
    setTimeout(() => URL.revokeObjectURL(url), 1000);
  }

  return (
    <>
      <div className="panel-head">
        <span data-testid="sql-summary">
          {formatCount(rows.length)} {rows.length === 1 ? 'row' : 'rows'}
          {truncated && <b> (cut at {formatCount(rows.length)}: add a LIMIT or aggregate)</b>} · {ms.toFixed(0)} ms
        </span>
        <button className="btn" onClick={download} data-testid="sql-csv">
          Download CSV
        </button>
        {nums.length > 0 && (
          <label>
            Chart{' '}
            <select
              data-testid="sql-chart-kind"
              value={chart === null ? 'none' : chart.kind === 'histogram' ? `h${chart.y}` : `${chart.kind === 'bars' ? 'b' : 's'}${chart.x}:${chart.y}`}
              onChange={(e) => {
                const v = e.target.value;
                if (v === 'none') setChart(null);
                else if (v[0] === 'h') setChart({ kind: 'histogram', y: Number(v.slice(1)) });
                else {
                  const [x, y] = v.slice(1).split(':').map(Number);
                  setChart({ kind: v[0] === 'b' ? 'bars' : 'series', x, y });
                }
              }}
            >
              <option value="none">none</option>
              {cats.flatMap((x) =>
                nums.map((y) => (
                  <option key={`b${x}:${y}`} value={`b${x}:${y}`}>
                    {columns[y].name} per {columns[x].name} (bars)
                  </option>
                )),
              )}
              {nums.map((i) => (
                <option key={`h${i}`} value={`h${i}`}>
                  histogram of {columns[i].name}
                </option>
              ))}
              {nums.flatMap((x) =>
                nums
                  .filter((y) => y !== x)
                  .map((y) => (
                    <option key={`s${x}:${y}`} value={`s${x}:${y}`}>
                      {columns[y].name} over {columns[x].name}
                    </option>
                  )),
              )}
            </select>
          </label>
        )}
      </div>
      {option && chart && <EChart option={option} height={chartHeight(rows, chart)} ariaLabel="chart of the query's result" />}
      {option && chart?.kind === 'bars' && <BarsNote rows={rows} chart={chart} columns={columns} />}
      <div className="table-scroll">
        <table className="grid compact" data-testid="sql-table">
          <thead>
            <tr>
              {columns.map((c, i) => (
                <th
                  key={i}
                  className={nums.includes(i) ? 'num sortable' : 'sortable'}
                  aria-sort={sort?.col === i ? (sort.desc ? 'descending' : 'ascending') : 'none'}
                  onClick={() => setView({ sqlSort: nextSort(view.sqlSort, columns, i) }, { replace: true })}
                  title={c.type}
                >
                  {c.name}
                </th>
              ))}
            </tr>
          </thead>
          <tbody>
            {sorted.slice(0, SHOWN).map((r, j) => (
              <tr key={j}>
                {r.map((v, i) => (
                  <td key={i} className={nums.includes(i) ? 'num mono' : 'mono'}>
                    {cell(v)}
                  </td>
                ))}
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      {sorted.length > SHOWN && <p className="muted">The first {formatCount(SHOWN)} rows are shown; the CSV has all {formatCount(sorted.length)}.</p>}
    </>
  );
}

/** What a bar chart leaves out: the categories past its MAX_BARS largest. */
function BarsNote({ rows, chart, columns }: { rows: unknown[][]; chart: Extract<SqlChart, { kind: 'bars' }>; columns: SqlColumn[] }) {
  const n = useMemo(() => categoryTotals(rows, chart.x, chart.y).bars.length, [rows, chart]);
  if (n <= MAX_BARS) return null;
  return (
    <p className="muted" data-testid="sql-bars-note">
      The {MAX_BARS} largest of {formatCount(n)} values of {columns[chart.x].name} are drawn.
    </p>
  );
}

function Downloads({ analysisId }: { analysisId: string }) {
  const v = useSqlViews();
  return (
    <section className="panel" data-testid="downloads">
      <div className="panel-head">
        <h2>Downloads</h2>
        <span className="muted">Every row of each view, streamed; no limit.</span>
      </div>
      <p>
        <a href={perfettoUrl(analysisId)} download data-testid="perfetto-link">
          Perfetto trace (JSON)
        </a>{' '}
        <span className="muted">
          — open it in ui.perfetto.dev (“Open trace file”) or trace_processor: tasks as threads with their calls and
          waits, block requests per device with their phases, chains as flow arrows.
        </span>
      </p>
      {v.data && (
        <ul className="downloads mono">
          {v.data.map((view) => (
            <li key={view.name}>
              {view.name}: <a href={exportUrl(analysisId, view.name, 'parquet')}>Parquet</a> ·{' '}
              <a href={exportUrl(analysisId, view.name, 'csv')}>CSV</a>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
