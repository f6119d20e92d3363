import { useQueryClient } from '@tanstack/react-query';
import { useEffect, useRef, useState, type DragEvent } from 'react';
import { Link } from 'react-router';
import { keepEditKey, setToken } from '../api/access';
import { useAnalyses, useDeleteAnalysis } from '../api/queries';
import type { AnalysisCreated, AnalysisSummary, Progress } from '../api/types';
import { UploadError, fetchProgress, newProgressToken, uploadAnalysis, type UploadProgress } from '../api/upload';
import { ErrorBox, Loading } from '../components/Status';
import { formatBytes, formatCount, formatDate, formatName } from '../lib/format';
import { CaptureCommands } from './CaptureCommands';
import { CompareWith } from './compare/CompareWith';
import { UploadGaps } from './UploadGaps';

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
      <CaptureCommands />
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
  const list = useAnalyses();

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
      keepEditKey(result.id, result.edit_key); // given this once: this browser may change or delete it
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
  if (list.data?.mode === 'own' && !running) {
    return (
      <section className="panel upload-panel">
        <h2>New analysis</h2>
        <SignIn refused={list.data.tokenRefused} />
      </section>
    );
  }
  return (
    <section className="panel upload-panel">
      <h2>New analysis</h2>
      <p className="hint">
        Upload one or more traces: <code>blkparse</code> text output or blktrace&apos;s binary files (drop every
        per-CPU <code>NAME.blktrace.N</code> of a capture at once: they become one source), ftrace /{' '}
        <code>trace-cmd report</code> or trace-cmd&apos;s <code>trace.dat</code> as it is, <code>perf script</code>{' '}
        text, bcc <code>offcputime</code> or <code>offwaketime</code>. The format is detected from the content; the
        commands that capture each are listed below.
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
      <UploadGaps analysisId={result.id} />
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

/** A shared server's sign-in: its token (STALLSCOPE_TOKEN), kept by this browser and sent with every request. */
function SignIn({ refused }: { refused: boolean }) {
  const [value, setValue] = useState('');
  const qc = useQueryClient();
  return (
    <form
      className="sign-in"
      data-testid="sign-in"
      onSubmit={(e) => {
        e.preventDefault();
        if (!value.trim()) return;
        setToken(value);
        setValue('');
        void qc.invalidateQueries({ queryKey: ['analyses'] });
      }}
    >
      <p className="hint">
        This server is shared: uploading and listing every analysis need its token. A link to an analysis opens without
        it, and this browser can change or delete the analyses it uploaded.
      </p>
      {refused && (
        <div className="status error" role="alert">
          The server refused the token that this browser kept: sign in again.
        </div>
      )}
      <div className="upload-row">
        <label className="field">
          <span>Token</span>
          <input type="password" autoComplete="current-password" value={value} onChange={(e) => setValue(e.target.value)} />
        </label>
        <button type="submit" className="btn primary" disabled={!value.trim()}>
          Sign in
        </button>
      </div>
    </form>
  );
}

function AnalysesList() {
  const q = useAnalyses();
  const qc = useQueryClient();
  const list = q.data;
  return (
    <section className="panel">
      <div className="title-row">
        <h2>{list?.mode === 'own' ? 'Analyses created in this browser' : 'Analyses'}</h2>
        {list?.signedIn && (
          <button
            type="button"
            className="btn small"
            onClick={() => {
              setToken(null);
              void qc.invalidateQueries({ queryKey: ['analyses'] });
            }}
          >
            Sign out
          </button>
        )}
      </div>
      {q.isPending && <Loading what="analyses" />}
      {q.isError && <ErrorBox title="Could not list the analyses." error={q.error} />}
      {list && list.items.length === 0 && (
        <p className="muted">{list.mode === 'own' ? 'None: sign in above to see every analysis.' : 'No analyses yet: upload a trace above.'}</p>
      )}
      {list && list.items.length > 0 && (
        <table className="grid" data-testid="analyses">
          <thead>
            <tr>
              <th>Name</th>
              <th>Created</th>
              <th className="num">Sources</th>
              <th className="num" title="bytes of the files uploaded (not the rows kept in the database)">
                Uploaded
              </th>
              <th aria-label="Actions" />
            </tr>
          </thead>
          <tbody>
            {list.items.map((a) => (
              <AnalysisRow key={a.id} a={a} />
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}

function AnalysisRow({ a }: { a: AnalysisSummary }) {
  return (
    <tr data-testid="analysis-row">
      <td className="wrap">
        <Link to={`/a/${a.id}`}>{a.name || a.id}</Link>
      </td>
      <td className="mono">{formatDate(a.created_at)}</td>
      <td className="num">{a.source_count}</td>
      <td className="num">{formatBytes(a.bytes)}</td>
      <td className="row-actions">
        <CompareWith id={a.id} name={a.name || a.id} /> <DeleteAnalysis id={a.id} name={a.name || a.id} />
      </td>
    </tr>
  );
}

/** Delete, after a confirmation; on a shared server the server checks this browser's edit key or the token. */
export function DeleteAnalysis({ id, name, onDeleted }: { id: string; name: string; onDeleted?: () => void }) {
  const [asking, setAsking] = useState(false);
  const del = useDeleteAnalysis();
  if (!asking) {
    return (
      <button type="button" className="btn small" aria-label={`Delete ${name}`} onClick={() => setAsking(true)}>
        Delete
      </button>
    );
  }
  return (
    <span className="confirm" role="group" aria-label={`Confirm deleting ${name}`}>
      Delete <b>{name}</b> and all its data?{' '}
      <button
        type="button"
        className="btn small danger"
        disabled={del.isPending}
        onClick={() => del.mutate(id, { onSuccess: () => onDeleted?.() })}
      >
        {del.isPending ? 'Deleting…' : 'Yes, delete'}
      </button>{' '}
      <button type="button" className="btn small" disabled={del.isPending} onClick={() => setAsking(false)}>
        Cancel
      </button>
      {del.isError && (
        <span className="error" role="alert">
          {' '}
          {del.error.message}
        </span>
      )}
    </span>
  );
}
