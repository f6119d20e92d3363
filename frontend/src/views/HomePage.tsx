import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState, type DragEvent } from 'react';
import { Link } from 'react-router';
import { useAnalyses } from '../api/queries';
import type { AnalysisCreated, Progress } from '../api/types';
import { UploadError, fetchProgress, newProgressToken, uploadAnalysis, type UploadProgress } from '../api/upload';
import { ErrorBox, Loading } from '../components/Status';
import { formatBytes, formatCount, formatDate, formatName } from '../lib/format';

type Upload =
  | { kind: 'idle' }
  | { kind: 'running'; sent: UploadProgress; server: Progress | null }
  | { kind: 'done'; result: AnalysisCreated }
  | { kind: 'failed'; message: string; files: UploadError['files'] };

export function HomePage() {
  return (
    <div className="home">
      <UploadPanel />
      <AnalysesList />
    </div>
  );
}

function UploadPanel() {
  const [files, setFiles] = useState<File[]>([]);
  const [name, setName] = useState('');
  const [drag, setDrag] = useState(false);
  const [up, setUp] = useState<Upload>({ kind: 'idle' });
  const input = useRef<HTMLInputElement>(null);
  const abort = useRef<AbortController | null>(null);
  const qc = useQueryClient();

  useEffect(() => () => abort.current?.abort(), []);

  function addFiles(list: FileList | null) {
    if (!list || list.length === 0) return;
    const incoming = Array.from(list);
    setFiles((prev) => [...prev.filter((p) => !incoming.some((f) => f.name === p.name)), ...incoming]);
    setUp({ kind: 'idle' });
  }

  function onDrop(e: DragEvent) {
    e.preventDefault();
    setDrag(false);
    addFiles(e.dataTransfer.files);
  }

  async function start() {
    if (files.length === 0) return;
    const token = newProgressToken();
    const ctl = new AbortController();
    abort.current = ctl;
    const total = files.reduce((s, f) => s + f.size, 0);
    setUp({ kind: 'running', sent: { sent: 0, total }, server: null });
    let polling = false; // from the moment every byte is sent: the server knows the token by then (before, a 404)
    const poll = async () => {
      while (polling && !ctl.signal.aborted) {
        try {
          const p = await fetchProgress(token);
          if (p && polling) setUp((u) => (u.kind === 'running' ? { ...u, server: p } : u));
        } catch {
          /* progress is best effort */
        }
        await new Promise((r) => setTimeout(r, 300));
      }
    };
    try {
      const result = await uploadAnalysis(
        files,
        name,
        token,
        (sent) => {
          setUp((u) => (u.kind === 'running' ? { ...u, sent } : u));
          if (!polling && sent.total > 0 && sent.sent >= sent.total) {
            polling = true;
            void poll();
          }
        },
        ctl.signal,
      );
      polling = false;
      setUp({ kind: 'done', result });
      setFiles([]);
      setName('');
      void qc.invalidateQueries({ queryKey: ['analyses'] });
    } catch (e) {
      polling = false;
      const err = e instanceof UploadError ? e : new UploadError(0, String(e));
      setUp({ kind: 'failed', message: err.message, files: err.files });
    }
  }

  const running = up.kind === 'running';
  return (
    <section className="panel upload-panel">
      <h2>New analysis</h2>
      <p className="hint">
        Upload one or more traces: <code>blkparse</code> text output or blktrace&apos;s binary files (drop every
        per-CPU <code>NAME.blktrace.N</code> of a capture at once: they become one source), ftrace /{' '}
        <code>trace-cmd report</code> or trace-cmd&apos;s <code>trace.dat</code> as it is, bcc{' '}
        <code>offcputime</code>. The format is detected from the content.
      </p>
      <div
        className={`dropzone${drag ? ' drag' : ''}${running ? ' disabled' : ''}`}
        onDragOver={(e) => {
          e.preventDefault();
          setDrag(true);
        }}
        onDragLeave={() => setDrag(false)}
        onDrop={onDrop}
        onClick={() => !running && input.current?.click()}
        role="button"
        tabIndex={0}
        onKeyDown={(e) => (e.key === 'Enter' || e.key === ' ') && input.current?.click()}
        data-testid="dropzone"
      >
        <input
          ref={input}
          type="file"
          multiple
          hidden
          data-testid="file-input"
          onChange={(e) => {
            addFiles(e.currentTarget.files);
            e.currentTarget.value = '';
          }}
        />
        <div className="dz-title">Drop trace files here</div>
        <div className="dz-sub">or click to choose files</div>
      </div>

      {files.length > 0 && (
        <ul className="file-list" aria-label="Files to upload">
          {files.map((f) => (
            <li key={f.name}>
              <span className="mono">{f.name}</span>
              <span className="muted">{formatBytes(f.size)}</span>
              {!running && (
                <button
                  type="button"
                  className="link-btn"
                  aria-label={`Remove ${f.name}`}
                  onClick={() => setFiles((fs) => fs.filter((x) => x !== f))}
                >
                  remove
                </button>
              )}
            </li>
          ))}
        </ul>
      )}

      <div className="upload-row">
        <label className="field">
          <span>Name (optional)</span>
          <input
            type="text"
            value={name}
            placeholder="e.g. db01 fsync stalls, 2026-05-03"
            onChange={(e) => setName(e.target.value)}
            disabled={running}
          />
        </label>
        <button type="button" className="btn primary" disabled={files.length === 0 || running} onClick={start}>
          {running ? 'Analysing…' : `Analyse ${files.length > 1 ? `${files.length} files` : ''}`.trim()}
        </button>
        {running && (
          <button type="button" className="btn" onClick={() => abort.current?.abort()}>
            Cancel
          </button>
        )}
      </div>

      {up.kind === 'running' && <UploadProgressView sent={up.sent} server={up.server} />}
      {up.kind === 'failed' && (
        <div className="status error" role="alert" data-testid="upload-error">
          {/* the message repeats each file's error: with the list, the list alone */}
          <strong>Upload failed.</strong> {up.files.length > 0 ? (up.files.length === 1 ? 'This file could not be read:' : 'These files could not be read:') : up.message}
          {up.files.length > 0 && (
            <ul className="file-errors">
              {up.files.map((f, i) => (
                <li key={i}>
                  <span className="mono">{f.filename}</span>
                  {f.line !== null && f.line !== undefined && <span className="muted"> line {f.line}</span>}
                  {f.offset !== null && f.offset !== undefined && <span className="muted"> byte {f.offset}</span>}: {f.error}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
      {up.kind === 'done' && <UploadResult result={up.result} />}
    </section>
  );
}

function UploadProgressView({ sent, server }: { sent: UploadProgress; server: Progress | null }) {
  const uploading = !server || server.phase === 'uploading';
  let frac: number;
  let label: string;
  if (uploading) {
    frac = sent.total ? sent.sent / sent.total : 0;
    label = `Uploading ${formatBytes(sent.sent)} of ${formatBytes(sent.total)}`;
  } else if (server.phase === 'parsing') {
    frac = server.bytes_total ? server.bytes_read / server.bytes_total : 0;
    label = `Parsing ${server.filename ?? ''}: ${formatBytes(server.bytes_read)}${server.bytes_total ? ` of ${formatBytes(server.bytes_total)}` : ''}, ${formatCount(server.events)} events`;
  } else if (server.phase === 'deriving') {
    frac = 1;
    label = `Deriving requests and phases from ${formatCount(server.events)} events`;
  } else {
    frac = 1;
    label = server.phase === 'error' ? 'The server reported an error; waiting for its answer' : 'Finishing';
  }
  return (
    <div className="progress" data-testid="upload-progress">
      <div className="progress-label">{label}…</div>
      <div className="progress-track" role="progressbar" aria-valuemin={0} aria-valuemax={100} aria-valuenow={Math.round(frac * 100)}>
        <div className={`progress-bar${uploading ? '' : ' server'}`} style={{ width: `${Math.min(100, frac * 100)}%` }} />
      </div>
    </div>
  );
}

function UploadResult({ result }: { result: AnalysisCreated }) {
  return (
    <div className="upload-result" data-testid="upload-result">
      <div className="result-head">
        <strong>Analysis created.</strong>
        <Link className="btn primary" to={result.url}>
          Open analysis →
        </Link>
      </div>
      <table className="grid compact">
        <thead>
          <tr>
            <th>File</th>
            <th>Format</th>
            <th className="num">Events</th>
            <th className="num">Skipped lines</th>
            <th className="num">Lines</th>
            <th className="num">Size</th>
          </tr>
        </thead>
        <tbody>
          {result.sources.map((s) => (
            <tr key={s.id}>
              <td className="mono">
                {s.filename}
                <SourceFiles files={s.files} />
              </td>
              <td>
                <span className="badge" data-testid="source-format">
                  {formatName(s)}
                </span>
              </td>
              <td className="num">{formatCount(s.events)}</td>
              <td className={`num${s.skipped_lines ? ' warn' : ''}`}>{formatCount(s.skipped_lines)}</td>
              <td className="num">{formatCount(s.lines)}</td>
              <td className="num">{formatBytes(s.bytes)}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {result.sources.map((s) => (
        <SkippedAndNotes key={s.id} filename={s.filename} skipped={s.skipped_examples} notes={s.notes} total={s.skipped_lines} />
      ))}
    </div>
  );
}

/** The files a source was read from, when it was more than one (a blktrace per-CPU set): name, kind, size. */
export function SourceFiles({ files }: { files: { filename: string; kind: string; bytes: number; sha256?: string }[] }) {
  if (files.length < 2) return null;
  return (
    <ul className="source-files" data-testid="source-files">
      {files.map((f) => (
        <li key={f.filename} title={f.sha256 ? `SHA-256 ${f.sha256}` : undefined}>
          {f.filename} <span className="muted">{f.kind}, {formatBytes(f.bytes)}</span>
        </li>
      ))}
    </ul>
  );
}

export function SkippedAndNotes({
  filename,
  skipped,
  notes,
  total,
}: {
  filename: string;
  skipped: { line: number; reason: string; text: string }[];
  notes: string[];
  total: number;
}) {
  if (skipped.length === 0 && notes.length === 0) return null;
  return (
    <div className="skipped">
      {notes.length > 0 && (
        <ul className="notes">
          {notes.map((n, i) => (
            <li key={i}>
              <span className="mono">{filename}</span>: {n}
            </li>
          ))}
        </ul>
      )}
      {skipped.length > 0 && (
        <>
          <div className="muted">
            <span className="mono">{filename}</span>: first {skipped.length} of {formatCount(total)} skipped lines
          </div>
          <table className="grid compact">
            <thead>
              <tr>
                <th className="num">Line</th>
                <th>Reason</th>
                <th>Text</th>
              </tr>
            </thead>
            <tbody>
              {skipped.map((k) => (
                <tr key={k.line}>
                  <td className="num">{k.line}</td>
                  <td>{k.reason}</td>
                  <td className="mono clip">{k.text}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </div>
  );
}

function AnalysesList() {
  const q = useAnalyses();
  return (
    <section className="panel">
      <h2>Analyses</h2>
      {q.isPending && <Loading what="analyses" />}
      {q.isError && <ErrorBox title="Could not list the analyses." error={q.error} />}
      {q.data && q.data.length === 0 && <p className="muted">No analyses yet: upload a trace above.</p>}
      {q.data && q.data.length > 0 && (
        <table className="grid" data-testid="analyses">
          <thead>
            <tr>
              <th>Name</th>
              <th>Created</th>
              <th className="num">Sources</th>
            </tr>
          </thead>
          <tbody>
            {q.data.map((a) => (
              <tr key={a.id}>
                <td>
                  <Link to={`/a/${a.id}`}>{a.name || a.id}</Link>
                </td>
                <td className="mono">{formatDate(a.created_at)}</td>
                <td className="num">{a.source_count}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
