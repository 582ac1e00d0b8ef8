import {
  type CredentialKeyring,
  type CredentialOpener,
  type CredentialSealer,
  createCredentialKeyring,
  createCredentialOpener,
  createCredentialSealer,
  generateCredentialKeyPair,
} from '@ingest/domain';

/**
 * One crm-sink key pair per test process, made when first asked for (never read from `.local/`):
 * gateways and control planes seal CRM credentials with its public key, sinks open them with its
 * private key, exactly as in production. 2048 bits (the smallest the keyring accepts) keeps the
 * generation under a second on the CI machine; the stack and the key command make 3072-bit keys.
 */
export interface TestCredentialKeys {
  kid: string;
  publicKeyPem: string;
  privateKeyPem: string;
  sealer: CredentialSealer;
  keyring: CredentialKeyring;
  /** What a sink opens credentials with; plaintext records are refused as in production. */
  opener: CredentialOpener;
  /** The environment a console or crm-sink process needs for these keys. */
  consoleEnv: Record<string, string>;
  sinkEnv: Record<string, string>;
}

let keys: TestCredentialKeys | undefined;

export function testCredentialKeys(): TestCredentialKeys {
  keys ??= makeKeys();
  return keys;
}

/** A further key pair (a rotation's target, or a key some other party holds). */
export function newTestCredentialKeys(): TestCredentialKeys {
  return makeKeys();
}

function makeKeys(): TestCredentialKeys {
  const pair = generateCredentialKeyPair(2048);
  const keyring = createCredentialKeyring([pair.privateKeyPem]);
  return {
    ...pair,
    sealer: createCredentialSealer(pair.publicKeyPem),
    keyring,
    opener: createCredentialOpener({ keyring, allowPlaintext: false }),
    consoleEnv: { CRM_CREDENTIALS_PUBLIC_KEY: pair.publicKeyPem },
    sinkEnv: { CRM_CREDENTIALS_PRIVATE_KEYS: pair.privateKeyPem },
  };
}
