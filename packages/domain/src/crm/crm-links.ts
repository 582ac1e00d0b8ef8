import type { CrmMapping, EventRecord } from '@ingest/schemas';

/**
 * Contacts linked to companies (issue 25): an event that names a person (`email`) and a domain
 * links that contact to that company, when the mapping writes both kinds of record. HubSpot gets
 * the default contact-to-company association, Salesforce the Contact's `AccountId`. Linking is
 * idempotent in both CRMs, so the sink links again on every flush that carries such an event: a
 * redelivery, a replay or a retry changes nothing, and a company created after its contact is
 * linked by the first such event after it exists.
 */
export interface ContactCompanyLink {
  email: string;
  domain: string;
}

/** On unless the mapping turns it off (`links.contactCompany: false`); only a mapping with contact and company rules links. */
export function mappingLinksContacts(mapping: CrmMapping): boolean {
  if (mapping.links?.contactCompany === false) return false;
  return mapping.rules.some((r) => r.object === 'contact') && mapping.rules.some((r) => r.object === 'company');
}

/** The link an event asks for: it names both, the mapping links, and at least one of its rules acts on the event. */
export function plannedLink(mapping: CrmMapping, event: Pick<EventRecord, 'email' | 'domain'>, operationCount: number): ContactCompanyLink | undefined {
  if (operationCount === 0 || event.email === null || event.domain === null || !mappingLinksContacts(mapping)) return undefined;
  return { email: event.email, domain: event.domain };
}

/**
 * One link per contact: the newest event's (by event time, then eventId, as `set` orders values),
 * so several events of one contact in one flush make one link, and a contact that moved to
 * another domain is linked to the newer one.
 */
export function newestLinks(items: Iterable<{ link: ContactCompanyLink; timestampMs: number; eventId: string }>): ContactCompanyLink[] {
  const newest = new Map<string, { link: ContactCompanyLink; timestampMs: number; eventId: string }>();
  for (const item of items) {
    const key = item.link.email.toLowerCase();
    const seen = newest.get(key);
    if (!seen || item.timestampMs > seen.timestampMs || (item.timestampMs === seen.timestampMs && item.eventId > seen.eventId)) newest.set(key, item);
  }
  return [...newest.values()].map((i) => i.link);
}

/**
 * A contact waiting for its company, as a member of the (account, domain) set the sink keeps
 * (crm-sink pending-links.store.ts writes, the dry-run reads): `{"v":1,"email":…}`. Readers keep
 * what a newer writer adds and skip a member they cannot read.
 */
export function pendingLinkMember(email: string): string {
  return JSON.stringify({ v: 1, email });
}

export function pendingLinkEmail(member: string): string | undefined {
  try {
    const parsed = JSON.parse(member) as { email?: unknown };
    return typeof parsed.email === 'string' ? parsed.email : undefined;
  } catch {
    return undefined;
  }
}
