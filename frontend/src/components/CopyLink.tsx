import { useEffect, useRef, useState } from 'react';

/** Copies location.href (the URL is the whole view state). Without a clipboard, shows the link
 * in a selected read-only field instead. */
export function CopyLink() {
  const [state, setState] = useState<'idle' | 'copied' | 'fallback'>('idle');
  const [href, setHref] = useState('');
  const field = useRef<HTMLInputElement>(null);

  useEffect(() => {
    if (state === 'fallback') field.current?.select();
    if (state === 'copied') {
      const id = setTimeout(() => setState('idle'), 2000);
      return () => clearTimeout(id);
    }
  }, [state]);

  async function copy() {
    const url = window.location.href;
    setHref(url);
    try {
      if (!navigator.clipboard) throw new Error('no clipboard');
      await navigator.clipboard.writeText(url);
      setState('copied');
    } catch {
      setState('fallback');
    }
  }

  return (
    <span className="copy-link">
      <button type="button" className="btn" onClick={copy} data-testid="copy-link">
        {state === 'copied' ? '✓ Link copied' : 'Copy link'}
      </button>
      {state === 'fallback' && (
        <input
          ref={field}
          className="share-field"
          readOnly
          value={href}
          aria-label="Link to this view"
          data-testid="share-link"
          onFocus={(e) => e.currentTarget.select()}
        />
      )}
    </span>
  );
}
