import { randomBytes } from 'node:crypto';
import { NAME_MAX_LENGTH } from '@ingest/schemas';
import { AppError, errorMessage } from '@ingest/platform';
import type { ControlTopicKey, KafkaClient } from '@ingest/platform';
import { type ConsumedMessage, createBatchConsumer } from '@ingest/platform';
import type { Producer } from '@ingest/platform';
import { topicName } from '@ingest/platform';
import type { Logger } from '@ingest/platform';
import type { Registry } from '@ingest/platform';
import { registerControlPlaneMetrics } from './control-plane.metrics.js';
import { newKeyAccess, validOrigins, validSuspensionReason } from './access-control.js';
import { generateApiKey, toBase62 } from './api-keys.js';
import { applyAdmin, createAdminDecoder, createAdminOps, createAdminsState } from './admins.js';
import { createCrmConfigOps } from './crm-config.ops.js';
import type { CredentialSealer } from './credential-seal.js';
import { applyCrmCredential, applyMappingVersion, createCredentialDecoder, createCrmConfigState, createMappingDecoder } from './crm-config.state.js';
import { createEndOffsetsReader, createOffsetTracker } from '@ingest/platform';
import {
  applyAccount,
  applyApiKey,
  createAccountDecoder,
  createApiKeyDecoder,
  createControlPlaneState,
  listAccounts,
  listApiKeys,
} from './control-plane.state.js';
import { applyOwner, createOwnerDecoder, createOwnersState, listOwners, normaliseOwnerEmail } from './owners.state.js';
import { type Account, type ApiKeyRecord, type ControlPlane, type Owner, PLANS, type Plan } from './types.js';

export interface ControlPlaneDeps {
  kafka: KafkaClient;
  /** The service's shared producer (idempotent, acks=all); the store neither connects nor closes it. */
  producer: Producer;
  topicPrefix: string;
  logger: Logger;
  /** When given, the state's size and freshness are exported (control-plane.metrics.ts). */
  metrics?: Registry;
  /** Names this instance's consumer group (a random suffix keeps it unique anyway). */
  instanceId?: string;
  /** Bound on a write becoming visible in this instance's own state. */
  writeTimeoutMs?: number;
  /** Bound on start(): reading the state topics up to their end. */
  startTimeoutMs?: number;
  /** Mapping versions held in memory per account (default 10; the sink needs only the newest). */
  mappingVersionsKept?: number;
  /**
   * Read only these state topics (default all of them): the service's role's, `controlTopicsRead`
   * of kafka/acls.ts. Least privilege on a broker with ACLs, and in memory: what a topic not read
   * holds never reaches the process (the ingest gateway holds no owner, mapping or credential;
   * docs/security.md).
   */
  readTopics?: readonly ControlTopicKey[];
  /** API keys an account may have: active ones, and all including revoked (defaults MAX_*_API_KEYS_PER_ACCOUNT). */
  apiKeyLimits?: { active: number; total: number };
  /**
   * Not confirmed caught up with the state topics for this long: not ready (a revocation might
   * not be applied). Checked every staleAfterMs / 3.
   */
  staleAfterMs?: number;
  /** Not confirmed caught up for this long: dead (the service's liveness fails). */
  deadAfterMs?: number;
  now?: () => Date;
  /**
   * crm-sink's public key: CRM credentials are stored sealed for it. Without it, putting a
   * credential is refused (`crm_credential_key_missing`); reading and listing work.
   */
  credentialSealer?: CredentialSealer;
}

/**
 * Keys an account may have: every gateway holds every key record (revoked ones too) in memory
 * and the compacted topic keeps them, so creating keys in a loop grew both without bound.
 * Active keys are what a customer needs (one per service and environment); revoked ones count
 * towards the total so that create-and-revoke loops stop as well.
 */
export const MAX_ACTIVE_API_KEYS_PER_ACCOUNT = 25;
export const MAX_API_KEYS_PER_ACCOUNT = 200;

/** 14 random bytes (112 bits) always fit in 20 base62 characters (62^20 > 2^119). */
const ID_BYTES = 14;
const ID_CHARS = 20;

function newId(prefix: 'acc_' | 'key_' | 'own_'): string {
  return prefix + toBase62(randomBytes(ID_BYTES), ID_CHARS);
}

/**
 * The control plane: accounts and plans, API keys, CRM mappings (every version), CRM
 * credentials and dashboard owners, durable in the compacted topics control.accounts,
 * control.apikeys, control.mappings, control.crm-credentials and control.owners and
 * materialised in memory by every instance. Each instance reads all five topics
 * from the beginning under a consumer group of its own, so every replica sees every record; a
 * revocation reaches them all within one fetch wait (~100 ms) of being written.
 *
 * Writes go to Kafka first and return once this instance has read them back (read-your-writes):
 * after the broker's ack the end offset covers the write, and the call waits until the
 * consumer has applied everything up to that offset. Writes that check existing records
 * (setPlan, createApiKey, revokeApiKey) first read the topics to their end the same way, so a
 * record written through another replica a moment earlier is found. Two concurrent writes of
 * one record are last-writer-wins; each write changes one field (plan, revokedAt), so nothing
 * else is lost.
 */
export function createControlPlane(deps: ControlPlaneDeps): ControlPlane {
  const accountsTopic = topicName(deps.topicPrefix, 'controlAccounts');
  const keysTopic = topicName(deps.topicPrefix, 'controlApiKeys');
  const mappingsTopic = topicName(deps.topicPrefix, 'controlMappings');
  const credentialsTopic = topicName(deps.topicPrefix, 'controlCrmCredentials');
  const ownersTopic = topicName(deps.topicPrefix, 'controlOwners');
  const adminsTopic = topicName(deps.topicPrefix, 'controlAdmins');
  const topics = deps.readTopics
    ? deps.readTopics.map((key) => topicName(deps.topicPrefix, key))
    : [accountsTopic, keysTopic, mappingsTopic, credentialsTopic, ownersTopic, adminsTopic];
  const now = deps.now ?? (() => new Date());
  const writeTimeoutMs = deps.writeTimeoutMs ?? 10_000;
  const startTimeoutMs = deps.startTimeoutMs ?? 30_000;
  const groupId = `control-plane.${deps.instanceId ?? 'instance'}.${randomBytes(6).toString('hex')}`;
  const log = deps.logger.child({ component: 'control-plane', groupId });

  const state = createControlPlaneState();
  const decodeAccount = createAccountDecoder();
  const decodeApiKey = createApiKeyDecoder();
  const crm = createCrmConfigState(deps.mappingVersionsKept);
  const keyLimits = deps.apiKeyLimits ?? { active: MAX_ACTIVE_API_KEYS_PER_ACCOUNT, total: MAX_API_KEYS_PER_ACCOUNT };
  const decodeMapping = createMappingDecoder();
  const decodeCredential = createCredentialDecoder();
  const owners = createOwnersState();
  const decodeOwner = createOwnerDecoder();
  const admins = createAdminsState();
  const decodeAdmin = createAdminDecoder();
  const offsets = createOffsetTracker();
  const endOffsets = createEndOffsetsReader(deps.kafka);
  let running = false;
  let caughtUp = false;
  let lastAppliedMs: number | undefined;
  const staleAfterMs = deps.staleAfterMs ?? 30_000;
  const deadAfterMs = deps.deadAfterMs ?? 5 * 60_000;
  /** When the end offsets were read that this instance then reached: how fresh its state is. */
  let confirmedAt: number | undefined;
  let freshness: NodeJS.Timeout | undefined;
  let checking = false;
  if (deps.metrics) {
    registerControlPlaneMetrics(deps.metrics, {
      records: () => ({
        accounts: state.accounts.size,
        api_keys: state.keys.size,
        mappings: [...crm.mappings.values()].reduce((n, versions) => n + versions.length, 0),
        crm_credentials: [...crm.credentials.values()].reduce((n, byName) => n + byName.size, 0),
        owners: owners.byEmail.size,
        admin_credentials: admins.byId.size,
      }),
      lastAppliedMs: () => lastAppliedMs,
    });
  }

  function applyMessage(m: ConsumedMessage): void {
    const next = BigInt(m.offset) + 1n;
    // A restarted member re-reads from the beginning: what was applied already is skipped, so a
    // replayed old record can never overwrite a newer one.
    if ((offsets.position(m.topic, m.partition) ?? -1n) >= next) return;
    lastAppliedMs = Math.max(lastAppliedMs ?? 0, m.timestamp);
    if (m.topic === mappingsTopic || m.topic === credentialsTopic) {
      applyCrmMessage(m);
      offsets.advance(m.topic, m.partition, next);
      return;
    }
    if (m.topic === adminsTopic) {
      const decoded = decodeAdmin(m.key, m.value);
      if (!decoded.ok) log.warn({ topic: m.topic, offset: m.offset, code: decoded.code, reason: decoded.reason }, 'skipped invalid control plane record');
      else applyAdmin(admins, decoded.id, decoded.value);
      offsets.advance(m.topic, m.partition, next);
      return;
    }
    const decoded =
      m.topic === accountsTopic ? decodeAccount(m.key, m.value) : m.topic === ownersTopic ? decodeOwner(m.key, m.value) : decodeApiKey(m.key, m.value);
    if (!decoded.ok) {
      log.warn(
        { topic: m.topic, partition: m.partition, offset: m.offset, code: decoded.code, reason: decoded.reason },
        'skipped invalid control plane record',
      );
    } else if (m.topic === ownersTopic) {
      applyOwner(owners, decoded.id, decoded.value as Owner | null);
    } else if (m.topic === accountsTopic) {
      applyAccount(state, decoded.id, decoded.value as Account | null);
    } else {
      applyApiKey(state, decoded.id, decoded.value as ApiKeyRecord | null);
    }
    offsets.advance(m.topic, m.partition, next);
  }

  function applyCrmMessage(m: ConsumedMessage): void {
    const where = { topic: m.topic, partition: m.partition, offset: m.offset };
    if (m.topic === mappingsTopic) {
      const decoded = decodeMapping(m.key, m.value);
      if (!decoded.ok) log.warn({ ...where, code: decoded.code, reason: decoded.reason }, 'skipped invalid control plane record');
      else if (applyMappingVersion(crm, decoded.id, decoded.value) === 'stale_version') log.debug(where, 'mapping record lost its version to an earlier one');
      return;
    }
    const decoded = decodeCredential(m.key, m.value);
    if (!decoded.ok) log.warn({ ...where, code: decoded.code, reason: decoded.reason }, 'skipped invalid control plane record');
    else applyCrmCredential(crm, decoded.id, decoded.value);
  }

  const consumer = createBatchConsumer(deps.kafka, {
    name: 'control-plane-consumer',
    groupId,
    topics,
    fromBeginning: true,
    commitOffsets: false,
    maxWaitTimeMs: 100,
    partitionsConsumedConcurrently: topics.length,
    logger: deps.logger,
    handleBatch: async (messages) => {
      for (const m of messages) applyMessage(m);
    },
  });

  /** Waits until this instance has applied everything the state topics held when called. */
  async function syncToEnd(timeoutMs: number): Promise<boolean> {
    const askedAt = Date.now();
    const deadline = askedAt + timeoutMs;
    let targets: Awaited<ReturnType<typeof endOffsets.endOffsets>>;
    try {
      targets = await withDeadline(endOffsets.endOffsets(topics), timeoutMs);
    } catch (err) {
      if (err instanceof DeadlinePassed) return false;
      throw new AppError('kafka_unavailable', `control plane could not read end offsets: ${errorMessage(err)}`, { retryable: true, cause: err });
    }
    const reached = await offsets.waitFor(targets, Math.max(0, deadline - Date.now()));
    if (reached) confirmedAt = Math.max(confirmedAt ?? 0, askedAt);
    return reached;
  }

  /**
   * Confirms now and then that this instance still applies what the state topics receive:
   * freshness is the age of the last confirmation, not of the last record (a quiet topic is
   * fresh), so a reader that stopped applying (a stuck consumer) or cannot see the end offsets
   * (Kafka away) goes stale.
   */
  function watchFreshness(): void {
    clearInterval(freshness);
    freshness = setInterval(
      () => {
        if (!running || checking) return;
        checking = true;
        syncToEnd(staleAfterMs)
          .catch((err: unknown) => log.warn({ err }, 'control plane freshness check failed'))
          .finally(() => {
            checking = false;
          });
      },
      Math.max(100, Math.floor(staleAfterMs / 3)),
    );
    freshness.unref();
  }

  async function barrier(what: string): Promise<void> {
    if (!running) throw new AppError('control_plane_not_started', 'the control plane is not running', { retryable: true });
    if (!(await syncToEnd(writeTimeoutMs))) {
      throw new AppError('control_plane_timeout', `control plane did not ${what} within ${writeTimeoutMs} ms`, { retryable: true });
    }
  }

  /** `null` writes a tombstone (a deleted CRM credential). */
  async function write(topic: string, id: string, value: object | null): Promise<void> {
    if (!running) throw new AppError('control_plane_not_started', 'the control plane is not running', { retryable: true });
    // A null value is Kafka's tombstone (kafkajs sends it as such). OutgoingMessage admits no null
    // on purpose, every other topic carries values: this one place casts.
    await deps.producer.send(topic, [{ key: id, value: value === null ? (null as unknown as string) : JSON.stringify(value) }]);
    await barrier('read back its write');
  }

  function account(accountId: string): Account {
    const found = state.accounts.get(accountId);
    if (!found) throw new AppError('account_not_found', `account ${accountId} does not exist`);
    return found;
  }

  async function ownerOf(accountId: string, email: string): Promise<Owner> {
    await barrier('catch up before the write');
    account(accountId);
    const current = owners.byEmail.get(normaliseOwnerEmail(email));
    // Another account's owner is "not found" as well.
    if (!current || current.accountId !== accountId) throw new AppError('owner_not_found', `no owner with this email in account ${accountId}`);
    return current;
  }

  async function start(): Promise<void> {
    const startedAt = Date.now();
    let abandoned = false;
    const attempt = (async () => {
      await endOffsets.connect();
      await consumer.start();
      if (abandoned) return;
      running = true;
      if (!(await syncToEnd(Math.max(0, startTimeoutMs - (Date.now() - startedAt))))) throw new DeadlinePassed();
    })();
    try {
      await withDeadline(attempt, startTimeoutMs);
    } catch (err) {
      abandoned = true;
      running = false;
      const release = () => Promise.allSettled([consumer.stop(), endOffsets.disconnect()]);
      // A connect still in flight at the deadline would leave a consumer running: release again
      // once the attempt settles.
      void attempt.then(release, release);
      await release();
      if (err instanceof DeadlinePassed) {
        throw new AppError('control_plane_catch_up_timeout', `control plane did not read ${topics.join(', ')} to their end within ${startTimeoutMs} ms`, {
          retryable: true,
        });
      }
      throw new AppError('control_plane_start_failed', `control plane failed to start: ${errorMessage(err)}`, { retryable: true, cause: err });
    }
    caughtUp = true;
    watchFreshness();
    log.info({ accounts: state.accounts.size, apiKeys: state.keys.size, ms: Date.now() - startedAt }, 'control plane caught up');
  }

  return {
    name: 'control-plane',
    start,
    async stop() {
      running = false;
      clearInterval(freshness);
      offsets.cancelAll(new AppError('control_plane_stopped', 'the control plane stopped', { retryable: true }));
      const results = await Promise.allSettled([consumer.stop(), endOffsets.disconnect()]);
      for (const r of results) if (r.status === 'rejected') log.warn({ err: r.reason }, 'control plane stop: a client failed to close');
    },
    healthy: () => running && caughtUp && consumer.healthy(),
    alive: () => consumer.alive() && (confirmedAt === undefined || Date.now() - confirmedAt <= deadAfterMs),
    caughtUp: () => caughtUp,
    fresh: () => confirmedAt !== undefined && Date.now() - confirmedAt <= staleAfterMs,

    accountById: (accountId) => state.accounts.get(accountId),
    listAccounts: () => listAccounts(state),
    apiKeyByHash: (hash) => state.keysByHash.get(hash),
    listApiKeys: (accountId) => listApiKeys(state, accountId),
    anyAccountAllowsOrigin: (origin) => state.originUse.has(origin),
    ownerByEmail: (email) => owners.byEmail.get(normaliseOwnerEmail(email)),
    listOwners: (accountId) => listOwners(owners, accountId),

    ...createCrmConfigOps({ state: crm, mappingsTopic, credentialsTopic, barrier, write, requireAccount: account, now, log, sealer: deps.credentialSealer }),
    ...createAdminOps({ state: admins, topic: adminsTopic, barrier, write, now, log }),

    async createAccount(input) {
      const name = validName(input.name);
      const plan = validPlan(input.plan);
      const at = now().toISOString();
      const created: Account = { id: newId('acc_'), name, plan, createdAt: at, updatedAt: at };
      await write(accountsTopic, created.id, created);
      log.info({ accountId: created.id, plan }, 'account created');
      return created;
    },

    async setPlan(accountId, plan) {
      validPlan(plan);
      await barrier('catch up before the write');
      const current = account(accountId);
      if (current.plan === plan) return current;
      const updated: Account = { ...current, plan, updatedAt: now().toISOString() };
      await write(accountsTopic, accountId, updated);
      log.info({ accountId, from: current.plan, to: plan }, 'plan changed');
      return updated;
    },

    async createApiKey(accountId, name, options = {}) {
      const keyName = validName(name);
      const access = newKeyAccess(options);
      await barrier('catch up before the write');
      account(accountId);
      const existing = listApiKeys(state, accountId);
      const active = existing.filter((k) => k.revokedAt === null).length;
      if (active >= keyLimits.active) {
        throw new AppError('api_key_limit', `account ${accountId} has ${active} active API keys, the most allowed; revoke one first`);
      }
      if (existing.length >= keyLimits.total) {
        throw new AppError('api_key_limit', `account ${accountId} has ${existing.length} API keys (revoked ones included), the most allowed`);
      }
      const key = generateApiKey(undefined, access.type);
      const record: ApiKeyRecord = {
        id: newId('key_'),
        accountId,
        name: keyName,
        prefix: key.prefix,
        hash: key.hash,
        createdAt: now().toISOString(),
        revokedAt: null,
        scopes: access.scopes,
        type: access.type,
      };
      await write(keysTopic, record.id, record);
      log.info({ accountId, keyId: record.id, type: access.type, scopes: access.scopes }, 'api key created');
      return { record, plaintext: key.plaintext };
    },

    async revokeApiKey(accountId, keyId) {
      await barrier('catch up before the write');
      const current = state.keys.get(keyId);
      // Another account's key is "not found" as well: ids of other accounts are not confirmed.
      if (!current || current.accountId !== accountId) throw new AppError('api_key_not_found', `api key ${keyId} does not exist for account ${accountId}`);
      if (current.revokedAt !== null) return current;
      const revoked: ApiKeyRecord = { ...current, revokedAt: now().toISOString() };
      await write(keysTopic, keyId, revoked);
      log.info({ accountId, keyId }, 'api key revoked');
      return revoked;
    },

    // Suspension and origins rewrite the whole account record (last writer wins, like setPlan):
    // each reads the topic to its end first, so a change made through another replica is kept.
    async suspendAccount(accountId, reason) {
      const why = validSuspensionReason(reason);
      await barrier('catch up before the write');
      const current = account(accountId);
      if (current.suspension) return current;
      const at = now().toISOString();
      const updated: Account = { ...current, suspension: { reason: why, suspendedAt: at }, updatedAt: at };
      await write(accountsTopic, accountId, updated);
      log.info({ accountId }, 'account suspended');
      return updated;
    },

    async resumeAccount(accountId) {
      await barrier('catch up before the write');
      const current = account(accountId);
      if (!current.suspension) return current;
      const { suspension: _lifted, ...rest } = current;
      const updated: Account = { ...rest, updatedAt: now().toISOString() };
      await write(accountsTopic, accountId, updated);
      log.info({ accountId }, 'account resumed');
      return updated;
    },

    async setAllowedOrigins(accountId, origins) {
      const valid = validOrigins(origins);
      await barrier('catch up before the write');
      const current = account(accountId);
      const { allowedOrigins: _previous, ...rest } = current;
      const updated: Account = { ...rest, ...(valid.length > 0 ? { allowedOrigins: valid } : {}), updatedAt: now().toISOString() };
      await write(accountsTopic, accountId, updated);
      log.info({ accountId, origins: valid.length }, 'allowed origins set');
      return updated;
    },

    async setPublishableEventIds(accountId, mode) {
      await barrier('catch up before the write');
      const current = account(accountId);
      const { publishableEventIds: _previous, ...rest } = current;
      const updated: Account = { ...rest, ...(mode === 'shared' ? { publishableEventIds: 'shared' as const } : {}), updatedAt: now().toISOString() };
      await write(accountsTopic, accountId, updated);
      log.info({ accountId, mode }, 'publishable event ids set');
      return updated;
    },

    async createOwner(accountId, email, passwordHash) {
      const normalised = normaliseOwnerEmail(email);
      if (!/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(normalised) || normalised.length > 254)
        throw new AppError('invalid_email', 'email must be an address such as ada@example.com');
      await barrier('catch up before the write');
      account(accountId);
      if (owners.byEmail.has(normalised)) throw new AppError('owner_exists', `an owner with this email exists already`);
      const owner: Owner = { id: newId('own_'), accountId, email: normalised, passwordHash, createdAt: now().toISOString() };
      await write(ownersTopic, normalised, owner);
      log.info({ accountId, ownerId: owner.id }, 'owner created');
      return owner;
    },

    // Removal is a tombstone (compaction then drops the password hash); the session guard looks
    // the owner up on every request, so their sessions end at once on every gateway.
    async removeOwner(accountId, email) {
      const current = await ownerOf(accountId, email);
      await write(ownersTopic, current.email, null);
      log.info({ accountId, ownerId: current.id }, 'owner removed');
      return current;
    },

    // passwordChangedAt ends the sessions signed in before it (the session guard compares).
    async resetOwnerPassword(accountId, email, passwordHash) {
      const current = await ownerOf(accountId, email);
      const updated: Owner = { ...current, passwordHash, passwordChangedAt: now().toISOString() };
      await write(ownersTopic, current.email, updated);
      log.info({ accountId, ownerId: current.id }, 'owner password reset');
      return updated;
    },

    // No passwordChangedAt: the owner's other sessions stay (nothing about who knows what changed).
    async updateOwnerCredentials(accountId, email, change) {
      const current = await ownerOf(accountId, email);
      const { totp: _previous, ...rest } = current;
      const totp = change.totp === undefined ? current.totp : (change.totp ?? undefined);
      const updated: Owner = { ...rest, ...(change.passwordHash ? { passwordHash: change.passwordHash } : {}), ...(totp ? { totp } : {}) };
      await write(ownersTopic, current.email, updated);
      log.info({ accountId, ownerId: current.id, rehashed: change.passwordHash !== undefined, totp: totp !== undefined }, 'owner credentials updated');
      return updated;
    },

    async setRequireOwnerTotp(accountId, required) {
      await barrier('catch up before the write');
      const { requireOwnerTotp: _previous, ...rest } = account(accountId);
      const updated: Account = { ...rest, ...(required ? { requireOwnerTotp: true } : {}), updatedAt: now().toISOString() };
      await write(accountsTopic, accountId, updated);
      log.info({ accountId, requireOwnerTotp: required }, 'owner second factor requirement set');
      return updated;
    },
  };
}

function validName(name: unknown): string {
  const trimmed = typeof name === 'string' ? name.trim() : '';
  if (trimmed.length < 1 || trimmed.length > NAME_MAX_LENGTH) {
    throw new AppError('invalid_name', `name must be 1 to ${NAME_MAX_LENGTH} characters (surrounding whitespace is ignored)`);
  }
  return trimmed;
}

function validPlan(plan: unknown): Plan {
  if (!(PLANS as readonly unknown[]).includes(plan)) throw new AppError('invalid_plan', `plan must be one of ${PLANS.join(', ')}`);
  return plan as Plan;
}

class DeadlinePassed extends Error {}

async function withDeadline<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new DeadlinePassed()), ms);
  });
  try {
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** The control plane's part of a service's readiness, named as /readyz lists what it waits for. */
export function controlPlaneConditions(controlPlane: Pick<ControlPlane, 'caughtUp' | 'fresh'>): Record<string, () => boolean> {
  return {
    'control plane caught up': () => controlPlane.caughtUp(),
    'control plane confirmed within CONTROL_PLANE_STALE_AFTER_MS': () => controlPlane.fresh(),
  };
}
