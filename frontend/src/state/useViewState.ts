import { useCallback, useMemo } from 'react';
import { useSearchParams } from 'react-router';
import { decodeView, encodeView, updateView, type ViewState } from './viewState';

/** The current view state from the URL, and a setter that writes a patch back to the URL. */
export function useViewState(): [ViewState, (patch: Partial<ViewState>, opts?: { replace?: boolean }) => void] {
  const [params, setParams] = useSearchParams();
  const view = useMemo(() => decodeView(params), [params]);
  const set = useCallback(
    (patch: Partial<ViewState>, opts?: { replace?: boolean }) => {
      setParams((prev) => encodeView(updateView(decodeView(prev), patch)), { replace: opts?.replace ?? false });
    },
    [setParams],
  );
  return [view, set];
}
