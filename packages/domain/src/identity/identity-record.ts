/**
 * The per-account identity map's wire record (docs/segment.md, "Whom an event is about"): what
 * we know of one person named by a Segment `userId` or `anonymousId`. The one owner of the format
 * of the compacted `identities` topic (key `accountId:u:<userId>` / `accountId:a:<anonymousId>`,
 * value this record, a null value a tombstone) and of its Redis index's values.
 *
 * `v` follows the wire-contract rule (docs/architecture.md): a new optional field keeps `v` and
 * readers ignore fields they do not know; a value with another `v` is not read (the person is
 * unknown to this reader, which then behaves as before the map existed).
 */
export const IDENTITY_RECORD_VERSION = 1;

/** A person as a Segment sender names them: `u:<userId>` or `a:<anonymousId>`. */
export type PersonRef = `u:${string}` | `a:${string}`;

export interface IdentityEntry {
  v: typeof IDENTITY_RECORD_VERSION;
  email?: string;
  domain?: string;
  /** On an `a:` entry: the user this anonymous id was linked to (identify with both ids, alias). */
  userId?: string;
  /** Epoch ms of the write; the Redis index keeps the newest (a rebuild never overwrites a newer write). */
  updatedAt: number;
}

export function isPersonRef(text: string): text is PersonRef {
  return (text.startsWith('u:') || text.startsWith('a:')) && text.length > 2;
}

/** The topic's key. An account id (`acc_` + base62) has no colon, so the first colon ends it. */
export function identityMapKey(accountId: string, ref: PersonRef): string {
  return `${accountId}:${ref}`;
}

export function parseIdentityMapKey(key: string): { accountId: string; ref: PersonRef } | undefined {
  const colon = key.indexOf(':');
  if (colon < 1) return undefined;
  const ref = key.slice(colon + 1);
  return isPersonRef(ref) ? { accountId: key.slice(0, colon), ref } : undefined;
}

export function encodeIdentityEntry(entry: IdentityEntry): string {
  return JSON.stringify(entry);
}

const optionalString = (value: unknown): value is string | undefined => value === undefined || (typeof value === 'string' && value.length > 0);

/** The entry of a value, or undefined for anything this reader cannot use (another `v`, bad JSON, wrong types). */
export function decodeIdentityEntry(raw: string | Buffer | null | undefined): IdentityEntry | undefined {
  if (raw === null || raw === undefined || raw.length === 0) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw.toString());
  } catch {
    return undefined;
  }
  if (typeof parsed !== 'object' || parsed === null) return undefined;
  const r = parsed as Record<string, unknown>;
  if (r.v !== IDENTITY_RECORD_VERSION || typeof r.updatedAt !== 'number' || !Number.isFinite(r.updatedAt)) return undefined;
  if (!optionalString(r.email) || !optionalString(r.domain) || !optionalString(r.userId)) return undefined;
  // Only the fields this release knows, so a newer writer's extra fields are not carried on by a merge.
  return {
    v: IDENTITY_RECORD_VERSION,
    ...(r.email !== undefined ? { email: r.email } : {}),
    ...(r.domain !== undefined ? { domain: r.domain } : {}),
    ...(r.userId !== undefined ? { userId: r.userId } : {}),
    updatedAt: r.updatedAt,
  };
}
