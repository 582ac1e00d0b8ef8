import type { Logger } from '../logger.js';
import { withAdmin } from './client.js';
import type { AclBinding, KafkaClient } from './driver.js';
import { type TopicKey, topicName } from './topics.js';

/**
 * Who may do what on a broker with an authorizer (docs/security.md, "Kafka principals and
 * ACLs"). One role per deployable; every grant is what the code really reads and writes today,
 * so a role that needs more fails with `kafka_not_authorized` in the secure test project.
 *
 * - `ingest`: the public /v1 routes. Writes events and bulk chunks, the queued status of a job;
 *   reads the accounts and the API keys, and no other control topic: owners' password hashes and
 *   emails, CRM mappings, credentials and named admins are none of the public API's business. It
 *   may not write any control.* topic, so a compromised public process cannot mint an API key or
 *   a dashboard owner.
 * - `console`: the admin API and the dashboard (keys, owners, mappings, credentials, plans,
 *   billing ledger, dead-letter views and the CRM replay, named admins). It writes the audit log
 *   (audit.log), which only the processor reads (its copy into ClickHouse). They run in the
 *   console service, whose principal holds `ingest` too: the dashboard's test events and CSV
 *   uploads write events.raw and jobs.chunks. The gateway (the public API) runs as `ingest`.
 * - `processor` and `crm-sink`: their pipelines.
 *
 * Consumer groups need READ on the group: the services' groups are matched by prefix, so group
 * names must keep them (the defaults do: processor-storage, crm-sink, control-plane.<id>.<hex>,
 * read-to-end.<hex>). Idempotent producers need no cluster grant on Kafka 3+ (KIP-679: WRITE on
 * a topic is enough for InitProducerId).
 */
export const KAFKA_ROLES = ['ingest', 'console', 'processor', 'crm-sink'] as const;
export type KafkaRole = (typeof KAFKA_ROLES)[number];

/** The control-plane topics (`control.*`): each role is granted the ones it uses by name, never by prefix. */
export type ControlTopicKey = Extract<TopicKey, `control${string}`>;

interface RoleGrants {
  read: readonly TopicKey[];
  write: readonly TopicKey[];
  /** Group-name prefixes the role's consumers use. */
  groups: readonly string[];
  /** Topics the role only looks at (end offsets), and group-name prefixes whose committed offsets it reads. */
  describe?: { topics: readonly TopicKey[]; groups: readonly string[] };
}

export const CONTROL_PLANE_GROUP_PREFIX = 'control-plane.';
export const READ_TO_END_GROUP_PREFIX = 'read-to-end.';

/** The control plane as the console holds it: every control topic (a new one is one line here). */
const ALL_CONTROL: readonly ControlTopicKey[] = [
  'controlAccounts',
  'controlApiKeys',
  'controlOwners',
  'controlMappings',
  'controlCrmCredentials',
  'controlAdmins',
];

/**
 * Every grant by topic name: a service's control plane reads exactly the control topics its
 * role reads here (`controlTopicsRead`), so the ACLs and the code cannot drift apart.
 */
export const ROLE_GRANTS: Readonly<Record<KafkaRole, RoleGrants>> = {
  ingest: {
    // API keys authenticate requests; accounts carry plan, suspension and browser origins.
    read: ['controlAccounts', 'controlApiKeys'],
    // events.deadletter: the Segment-compatible routes record the messages they refuse (docs/segment.md).
    write: ['eventsRaw', 'jobChunks', 'jobProgress', 'deadLetters'],
    groups: [CONTROL_PLANE_GROUP_PREFIX],
  },
  console: {
    // identities: an erasure tombstones the map entries of the erased identity (and rebuilds the index first when Redis lost it).
    read: [...ALL_CONTROL, 'billingLedger', 'deadLetters', 'crmDeadLetters', 'erasures', 'identities'],
    write: [...ALL_CONTROL, 'billingLedger', 'crmReplay', 'auditLog', 'erasures', 'identities'],
    groups: [CONTROL_PLANE_GROUP_PREFIX, READ_TO_END_GROUP_PREFIX],
    // An erasure waits until the storage writer's committed offsets pass the end of events.unique
    // (docs/erasure.md): DESCRIBE only, the console never joins the processor's group.
    describe: { topics: ['eventsUnique'], groups: ['processor-storage'] },
  },
  processor: {
    read: ['eventsRaw', 'jobChunks', 'dedupeChangelog', 'eventsUnique', 'controlAccounts', 'billingLedger', 'auditLog', 'erasures', 'identities'],
    // events.raw: a bulk job's chunks become events there; billing.ledger: closed months;
    // identities: the dedupe stage writes the identity map (and reads it back to rebuild its index).
    write: ['eventsRaw', 'eventsUnique', 'dedupeChangelog', 'jobProgress', 'deadLetters', 'billingLedger', 'identities'],
    // control-plane.*: the job runner's control plane (accounts only: a suspended account's jobs stop).
    groups: ['processor-', READ_TO_END_GROUP_PREFIX, CONTROL_PLANE_GROUP_PREFIX],
  },
  'crm-sink': {
    // control.accounts: a suspended account's CRM sync is held.
    read: ['eventsUnique', 'crmReplay', 'controlAccounts', 'controlMappings', 'controlCrmCredentials', 'erasures'],
    write: ['crmDeadLetters'],
    groups: ['crm-sink', CONTROL_PLANE_GROUP_PREFIX],
  },
};

function isControlTopic(key: TopicKey): key is ControlTopicKey {
  return key.startsWith('control');
}

/** The control topics `role` reads: what its control plane subscribes to (`readTopics`). */
export function controlTopicsRead(role: KafkaRole): ControlTopicKey[] {
  return ROLE_GRANTS[role].read.filter(isControlTopic);
}

/** The ACL entries that give `principal` the grants of `role` for topics under `topicPrefix`. */
export function aclBindings(role: KafkaRole, principal: string, topicPrefix: string): AclBinding[] {
  const grants = ROLE_GRANTS[role];
  const topic = (key: TopicKey, operation: AclBinding['operation']): AclBinding => ({
    resourceType: 'topic',
    resourceName: topicName(topicPrefix, key),
    patternType: 'literal',
    principal,
    operation,
  });
  return [
    ...grants.read.map((ref) => topic(ref, 'READ')),
    ...grants.write.map((ref) => topic(ref, 'WRITE')),
    ...grants.groups.map((name): AclBinding => ({ resourceType: 'group', resourceName: name, patternType: 'prefixed', principal, operation: 'READ' })),
    ...(grants.describe?.topics ?? []).map((ref) => topic(ref, 'DESCRIBE')),
    ...(grants.describe?.groups ?? []).map((name): AclBinding => ({
      resourceType: 'group',
      resourceName: name,
      patternType: 'prefixed',
      principal,
      operation: 'DESCRIBE',
    })),
  ];
}

/**
 * Parses `KAFKA_ACL_PRINCIPALS`: `role=principal` pairs, comma separated, e.g.
 * `ingest=User:ingest,console=User:console,ingest=User:console`. A principal may hold several
 * roles (the console, whose dashboard also writes events and jobs).
 */
export function parseAclPrincipals(value: string): { role: KafkaRole; principal: string }[] {
  return value
    .split(',')
    .map((pair) => pair.trim())
    .filter((pair) => pair.length > 0)
    .map((pair) => {
      const [role, principal] = pair.split('=', 2).map((s) => s.trim());
      if (!role || !principal || !(KAFKA_ROLES as readonly string[]).includes(role) || !/^[A-Za-z]+:\S+$/.test(principal)) {
        throw new Error(`KAFKA_ACL_PRINCIPALS: "${pair}" is not <role>=<Type:name> with a role of ${KAFKA_ROLES.join(', ')} (e.g. ingest=User:ingest)`);
      }
      return { role: role as KafkaRole, principal };
    });
}

/**
 * Grants earlier versions made and this one no longer does: READ and WRITE on the `control.`
 * prefix (every role then read the whole control plane). An upgrade's setup removes them from
 * the principals it is given, or the ingest principal would keep reading control.owners.
 */
export function retiredAclBindings(principal: string, topicPrefix: string): AclBinding[] {
  return (['READ', 'WRITE'] as const).map((operation) => ({
    resourceType: 'topic',
    resourceName: `${topicPrefix}control.`,
    patternType: 'prefixed',
    principal,
    operation,
  }));
}

/**
 * Creates the ACLs of each principal's roles and removes the retired grants of those principals
 * (idempotent: existing ACLs stay as they are; ACLs of other principals are not touched).
 */
export async function applyAcls(
  kafka: KafkaClient,
  options: { principals: readonly { role: KafkaRole; principal: string }[]; topicPrefix: string; logger: Logger },
): Promise<number> {
  const bindings = options.principals.flatMap(({ role, principal }) => aclBindings(role, principal, options.topicPrefix));
  const retired = [...new Set(options.principals.map((p) => p.principal))].flatMap((principal) => retiredAclBindings(principal, options.topicPrefix));
  await withAdmin(kafka, async (admin) => {
    await admin.createAcls(bindings);
    await admin.deleteAcls(retired);
  });
  options.logger.info({ principals: options.principals.map((p) => `${p.role}=${p.principal}`), acls: bindings.length }, 'kafka ACLs applied');
  return bindings.length;
}
