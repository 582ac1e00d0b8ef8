import { type RefObject, useEffect, useRef, useState } from 'react';

/** What <DetailDialog> needs of the hook. */
export interface DetailDialogState {
  dialog: RefObject<HTMLDialogElement | null>;
  detailError: string;
  close: () => void;
}

/**
 * A modal dialog showing one row's details, read on demand: `open(key)` fetches them and shows
 * the dialog (with the error when the read fails), `close` clears both and hides it.
 */
export function useDetailDialog<K, T>(read: (key: K) => Promise<T>) {
  const [detail, setDetail] = useState<T | null>(null);
  const [detailError, setDetailError] = useState('');
  const dialog = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    if (detail || detailError) dialog.current?.showModal();
    else dialog.current?.close();
  }, [detail, detailError]);

  const open = async (key: K) => {
    setDetailError('');
    try {
      setDetail(await read(key));
    } catch (err) {
      setDetailError((err as Error).message);
    }
  };
  const close = () => {
    setDetail(null);
    setDetailError('');
  };
  return { detail, detailError, dialog, open, close };
}
