import { useEffect, useState } from 'react';
import { ApiError } from '../../api/client';
import { chainReportUrl } from '../../api/sqlQueries';

/** "Copy as text": the chain as a bug report's plain text (GET …/chains/{rank}/report.txt, ASCII, 80 columns) to
 * the clipboard; without a clipboard, the text in a selected field. A link opens the same text. */
export function CopyChainText({ analysisId, rank }: { analysisId: string; rank: number }) {
  const [state, setState] = useState<{ kind: 'idle' | 'copied' | 'fallback' | 'error'; text: string }>({ kind: 'idle', text: '' });
  useEffect(() => {
    if (state.kind !== 'copied') return;
    const id = setTimeout(() => setState({ kind: 'idle', text: '' }), 2000);
    return () => clearTimeout(id);
  }, [state.kind]);

  async function copy() {
    let text = '';
    try {
      const r = await fetch(chainReportUrl(analysisId, rank));
      if (!r.ok) throw new ApiError(r.status, await r.json().catch(() => null), `${r.status} the report could not be made`);
      text = await r.text();
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(text);
      setState({ kind: 'copied', text });
    } catch (e) {
      setState(text ? { kind: 'fallback', text } : { kind: 'error', text: e instanceof Error ? e.message : String(e) });
    }
  }

  return (
    <span className="copy-chain-text">
      <button className="btn small" onClick={copy} data-testid="copy-chain-text" title="The chain as plain text for an email or a bug report">
        {state.kind === 'copied' ? 'Copied' : 'Copy as text'}
      </button>{' '}
      <a href={chainReportUrl(analysisId, rank)} target="_blank" rel="noreferrer">
        report.txt
      </a>
      {state.kind === 'error' && <span className="error-text"> {state.text}</span>}
      {state.kind === 'fallback' && (
        <textarea className="mono report-text" readOnly value={state.text} rows={12} cols={82} ref={(el) => el?.select()} data-testid="chain-text" />
      )}
    </span>
  );
}
