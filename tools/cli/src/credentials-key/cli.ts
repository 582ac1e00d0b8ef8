import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AppError, CommonConfig, createKafkaClientFromConfig, createLogger, createProducer, KafkaConfig, loadConfig } from '@ingest/platform';
import { type Command as FrameCommand, EXIT_FAILED, EXIT_OK, HELP, type Io, isHelp, parseCommandLine, runCommand, UsageError } from '../frame.js';
import {
  createControlPlane,
  type CredentialKeyring,
  CrmCredentialsPrivateKeysConfig,
  createCredentialSealer,
  credentialKeyringFromConfig,
  generateCredentialKeyPair,
  sealedAadVersion,
  type StoredCrmCredential,
} from '@ingest/domain';
import { Type } from '@sinclair/typebox';

/**
 * The CRM credential key command (`npm run credentials-key -- ...`, docs/security.md): makes
 * crm-sink's key pair, shows which key seals each credential, and re-wraps every credential for
 * a new public key (which also encrypts records stored in clear before encryption existed). It
 * talks to Kafka directly, not to the admin API: re-wrapping needs the private key, which no
 * gateway holds.
 */
export const USAGE = `usage: npm run credentials-key -- <command>
  generate --out-dir DIR [--name NAME] [--if-missing]
      write a new key pair: DIR/NAME.key.pem (private, mode 0600: crm-sink only) and
      DIR/NAME.pub.pem (public: the gateway); NAME defaults to crm-credentials-<key id>
  status
      count the credentials in control.crm-credentials by key id (and those stored in clear)
  rotate --to-public-key FILE
      re-wrap every credential for the key pair of FILE; plaintext records are encrypted and
      records sealed under AAD v1 (URLs not bound) are sealed again under v2 (FILE may be the
      current public key).
      Needs the private key(s) of the current records: CRM_CREDENTIALS_PRIVATE_KEY_FILES or
      CRM_CREDENTIALS_PRIVATE_KEYS (may be empty when every record is still in clear)
Kafka: KAFKA_BROKERS, KAFKA_TOPIC_PREFIX (as the services).
`;

export type CliIo = Io;

type Parsed = { command: 'generate'; outDir: string; name?: string; ifMissing: boolean } | { command: 'status' } | { command: 'rotate'; toPublicKey: string };

const OPTIONS = {
  'out-dir': { type: 'string' },
  name: { type: 'string' },
  'if-missing': { type: 'boolean' },
  'to-public-key': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

export function parseArgs(argv: readonly string[]): Parsed | typeof HELP {
  const { values, positionals } = parseCommandLine(argv, OPTIONS);
  const [command, ...rest] = positionals;
  if (values.help || isHelp(command)) return HELP;
  if (rest.length > 0) throw new UsageError(`unexpected argument ${rest[0]}`);
  const allow = (...names: (keyof typeof values)[]) => {
    for (const [flag, value] of Object.entries(values)) {
      if (value !== undefined && !names.includes(flag as keyof typeof values)) throw new UsageError(`unknown flag --${flag} for ${command}`);
    }
  };
  switch (command) {
    case 'generate': {
      allow('out-dir', 'name', 'if-missing');
      const outDir = values['out-dir'];
      if (!outDir) throw new UsageError('generate needs --out-dir');
      const name = values.name;
      if (name !== undefined && !/^[A-Za-z0-9._-]{1,64}$/.test(name)) throw new UsageError('--name: letters, digits, . _ - (at most 64)');
      return { command, outDir, ...(name ? { name } : {}), ifMissing: values['if-missing'] === true };
    }
    case 'status':
      allow();
      return { command };
    case 'rotate': {
      allow('to-public-key');
      const toPublicKey = values['to-public-key'];
      if (!toPublicKey) throw new UsageError('rotate needs --to-public-key FILE');
      return { command, toPublicKey };
    }
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

export const CREDENTIALS_KEY_COMMAND: FrameCommand<Parsed> = {
  usage: USAGE,
  parse: parseArgs,
  run: async (parsed, io) => (parsed.command === 'generate' ? generate(parsed, io) : withControlPlane(io, parsed)),
};

export const runCredentialsKey = (argv: readonly string[], io: CliIo): Promise<number> => runCommand(CREDENTIALS_KEY_COMMAND, argv, io);

function generate(parsed: Extract<Parsed, { command: 'generate' }>, io: CliIo): number {
  if (parsed.ifMissing && parsed.name && existsSync(join(parsed.outDir, `${parsed.name}.key.pem`))) {
    io.stdout(`kept ${join(parsed.outDir, `${parsed.name}.key.pem`)}\n`);
    return EXIT_OK;
  }
  const pair = generateCredentialKeyPair();
  const name = parsed.name ?? `crm-credentials-${pair.kid}`;
  mkdirSync(parsed.outDir, { recursive: true, mode: 0o700 });
  const privatePath = join(parsed.outDir, `${name}.key.pem`);
  const publicPath = join(parsed.outDir, `${name}.pub.pem`);
  writeFileSync(privatePath, pair.privateKeyPem, { mode: 0o600, flag: 'wx' });
  chmodSync(privatePath, 0o600);
  writeFileSync(publicPath, pair.publicKeyPem, { flag: 'wx' });
  io.stdout(`key id ${pair.kid}\nprivate key (crm-sink only): ${privatePath}\npublic key (gateway): ${publicPath}\n`);
  return EXIT_OK;
}

const CommandConfig = Type.Object({ ...CommonConfig, ...KafkaConfig, ...CrmCredentialsPrivateKeysConfig });

/** A keyring that opens nothing: rotating records that are all still in clear needs no private key. */
const EMPTY_KEYRING: CredentialKeyring = {
  kids: [],
  open: () => {
    throw new AppError('crm_credential_unreadable', 'no private key configured (CRM_CREDENTIALS_PRIVATE_KEY_FILES / CRM_CREDENTIALS_PRIVATE_KEYS)');
  },
  sealer: () => {
    throw new AppError('crm_credential_key_missing', 'no private key configured');
  },
  rewrap: () => {
    throw new AppError('crm_credential_unreadable', 'no private key configured (CRM_CREDENTIALS_PRIVATE_KEY_FILES / CRM_CREDENTIALS_PRIVATE_KEYS)');
  },
};

async function withControlPlane(io: CliIo, parsed: Extract<Parsed, { command: 'status' | 'rotate' }>): Promise<number> {
  const config = loadConfig(CommandConfig, io.env);
  const logger = createLogger({ service: 'credentials-key', level: config.LOG_LEVEL === 'info' ? 'warn' : config.LOG_LEVEL });
  const to =
    parsed.command === 'rotate' ? createCredentialSealer(readFileSync(parsed.toPublicKey, 'utf8'), `--to-public-key ${parsed.toPublicKey}`) : undefined;
  const hasKeys = config.CRM_CREDENTIALS_PRIVATE_KEY_FILES.trim() !== '' || config.CRM_CREDENTIALS_PRIVATE_KEYS.trim() !== '';
  const keyring = hasKeys ? credentialKeyringFromConfig(config) : EMPTY_KEYRING;
  const kafka = createKafkaClientFromConfig(config, 'credentials-key', logger);
  const producer = createProducer(kafka);
  await producer.connect();
  const cp = createControlPlane({ kafka, producer, topicPrefix: config.KAFKA_TOPIC_PREFIX, logger, instanceId: 'credentials-key', mappingVersionsKept: 1 });
  try {
    await cp.start();
    if (to) {
      const result = await cp.resealCrmCredentials(keyring, to);
      io.stdout(
        `sealed for key ${to.kid}: ${result.rewrapped} re-wrapped, ${result.encrypted} encrypted (were in clear), ${result.unchanged} already sealed for it, ${result.upgraded} sealed again under AAD v2 (were v1)\n`,
      );
      for (const f of result.failed) io.stderr(`not re-wrapped: ${f.accountId}/${f.name}: ${f.reason}\n`);
      if (result.failed.length > 0) return EXIT_FAILED;
    }
    io.stdout(summary(cp.allCrmCredentials()));
    return EXIT_OK;
  } finally {
    await cp.stop();
    await producer.disconnect();
  }
}

function summary(all: StoredCrmCredential[]): string {
  const counts = new Map<string, number>();
  for (const c of all) {
    // AAD v1 records (sealed before the AAD bound the URLs) are counted apart: `rotate` re-seals them.
    const label = c.sealed ? `key ${c.sealed.kid}${sealedAadVersion(c.sealed) === 1 ? ' (AAD v1: rotate to re-seal)' : ''}` : 'in clear';
    counts.set(label, (counts.get(label) ?? 0) + 1);
  }
  const lines = [...counts].sort().map(([label, n]) => `  ${label}: ${n}`);
  return `${all.length} credential(s)\n${lines.join('\n')}${lines.length > 0 ? '\n' : ''}`;
}
