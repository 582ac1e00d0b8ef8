import type { CrmMapping, DryRunResult, EventRecord } from '@ingest/schemas';
import {
  type CrmCredential,
  credentialWithoutSecrets,
  explainRules,
  HUBSPOT_DEFAULT_BASE_URL,
  type MappingReader,
  planSync,
  plannedLink,
  previewSync,
  type RecordStateReader,
  requestPlanner,
  requestTarget,
  type SyncPreviewNote,
} from '@ingest/domain';

/**
 * The dry-run's answer: the planned operations and rule outcomes, and the exact HTTP calls the
 * sink would make for the event with the account's current sink state (read from Redis, never
 * written). Calls are built by the adapters' own request builders with the stored credential the
 * mapping names, without its secret (sealed for crm-sink, the gateway cannot open it; the
 * builders take no headers).
 */
export interface DryRunInput {
  accountId: string;
  mapping: CrmMapping;
  mappingVersion: number | null;
  record: EventRecord;
  mappings: MappingReader;
  reader: RecordStateReader;
  now: () => number;
}

/** Placeholders with no secret: the builders read only non-secret settings (API version, external id fields). */
const linkOf = (link: ReturnType<typeof plannedLink>) => (link ? { link } : {});

function defaultCredential(type: CrmMapping['crm']['type']): CrmCredential {
  switch (type) {
    case 'hubspot':
      return { type, accessToken: '' };
    case 'salesforce':
      return { type, accessToken: '', instanceUrl: '' };
    case 'webhook':
      return { type, url: '', secret: '' };
  }
}

function baseUrlOf(credential: CrmCredential): string | undefined {
  if (credential.type === 'hubspot')
    return URL.canParse(credential.baseUrl ?? HUBSPOT_DEFAULT_BASE_URL) ? (credential.baseUrl ?? HUBSPOT_DEFAULT_BASE_URL) : undefined;
  const url = credential.type === 'salesforce' ? credential.instanceUrl : credential.url;
  // A stored URL the schema let through but URL cannot parse: show paths relative, never a 500.
  return URL.canParse(url) ? url : undefined;
}

export async function dryRun(input: DryRunInput): Promise<DryRunResult> {
  const { accountId, mapping, record } = input;
  const { type, credentialsRef } = mapping.crm;
  const stored = input.mappings.crmCredential(accountId, credentialsRef);
  const status = stored === undefined ? 'missing' : stored.credential.type === type ? 'stored' : 'mismatch';
  // Without a usable credential the sink dead-letters the event; the calls still show what the
  // mapping would send once one exists, with the defaults of the mapping's CRM type.
  // The stored credential's settings only: its secret is sealed for crm-sink, which the gateway
  // cannot open, and the request builders need none (they take no headers).
  const credential = status === 'stored' && stored ? credentialWithoutSecrets(stored.credential) : defaultCredential(type);
  const notes: SyncPreviewNote[] = [];
  if (status === 'missing')
    notes.push({
      code: 'credential_missing',
      message: `no stored credential named ${credentialsRef}: the sink would dead-letter the event (crm_credential_missing) and make none of these calls; shown with the ${type} defaults`,
    });
  if (status === 'mismatch')
    notes.push({
      code: 'credential_mismatch',
      message: `credential ${credentialsRef} is for ${stored?.credential.type}, the mapping for ${type}: the sink would dead-letter the event (crm_credential_mismatch) and make none of these calls; shown with the ${type} defaults`,
    });

  const operations = planSync(mapping, record);
  const preview = await previewSync({
    accountId,
    eventId: record.eventId,
    timestampMs: record.timestampMs,
    crmType: type,
    operations,
    planner: requestPlanner(credential, () => new Date(input.now())),
    reader: input.reader,
    ...linkOf(plannedLink(mapping, record, operations.length)),
  });
  const baseUrl = baseUrlOf(credential);
  return {
    mappingVersion: input.mappingVersion,
    eventId: record.eventId,
    operations,
    rules: explainRules(mapping, record),
    crm: { type, credentialsRef, credential: status },
    calls: preview.calls.map((c) => ({
      method: c.method,
      path: baseUrl === undefined ? c.path : requestTarget(baseUrl, c.path),
      ...(c.body === undefined ? {} : { body: c.body }),
    })),
    notes: [...notes, ...preview.notes],
  };
}
