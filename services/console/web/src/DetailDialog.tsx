import type { ReactNode } from 'react';
import type { DetailDialogState } from './use-detail-dialog.js';

/** The modal of useDetailDialog: a title, the read's error if it failed, the details, Close. */
export function DetailDialog({ state, titleId, title, children }: { state: DetailDialogState; titleId: string; title: ReactNode; children: ReactNode }) {
  return (
    <dialog ref={state.dialog} aria-labelledby={titleId} onClose={state.close} className="wide">
      <h2 id={titleId}>{title}</h2>
      {state.detailError && <p className="error">{state.detailError}</p>}
      {children}
      <div className="actions">
        <button type="button" onClick={state.close} autoFocus>
          Close
        </button>
      </div>
    </dialog>
  );
}
