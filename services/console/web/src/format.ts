const dateTime = new Intl.DateTimeFormat(undefined, { dateStyle: 'medium', timeStyle: 'short', timeZone: 'UTC' });
const number = new Intl.NumberFormat();

export const formatDate = (iso: string): string => `${dateTime.format(new Date(iso))} UTC`;
export const formatNumber = (n: number): string => number.format(n);
