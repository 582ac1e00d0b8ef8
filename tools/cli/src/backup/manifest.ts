/**
 * `manifest.json`, the table of contents of a backup directory: what was dumped from where,
 * with counts and the SHA-256 of every file, so a restore checks the whole backup before it
 * writes anything. Versioned (`v`); a reader accepts fields a newer writer adds.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { InputError } from '../frame.js';
import type { TableDump } from './table-dump.js';
import type { TopicDump } from './topic-dump.js';

export const MANIFEST_FILE = 'manifest.json';
export const MANIFEST_VERSION = 1;

export interface BackupManifest {
  v: number;
  /** ISO time the backup started. */
  startedAt: string;
  finishedAt: string;
  kafka: { topicPrefix: string; topics: TopicDump[] };
  clickhouse: {
    serverVersion: string;
    database: string;
    /** The migration versions applied to the source (`schema_migrations`): the target must have them all. */
    migrations: number[];
    tables: TableDump[];
  };
}

export async function writeManifest(dir: string, manifest: BackupManifest): Promise<void> {
  await writeFile(join(dir, MANIFEST_FILE), `${JSON.stringify(manifest, null, 2)}\n`, { mode: 0o600, flag: 'wx' });
}

export async function readManifest(dir: string): Promise<BackupManifest> {
  let manifest: BackupManifest;
  try {
    manifest = JSON.parse(await readFile(join(dir, MANIFEST_FILE), 'utf8')) as BackupManifest;
  } catch (err) {
    throw new InputError(`${join(dir, MANIFEST_FILE)}: not a backup manifest (${(err as Error).message})`);
  }
  if (manifest.v !== MANIFEST_VERSION) throw new InputError(`backup manifest version ${String(manifest.v)}: this ingest reads version ${MANIFEST_VERSION}`);
  return manifest;
}

async function sha256Of(path: string): Promise<string> {
  const hash = createHash('sha256');
  await pipeline(createReadStream(path), hash);
  return hash.digest('hex');
}

/** Every file the manifest names, checked against its checksum before a restore writes anything. */
export async function verifyFiles(dir: string, manifest: BackupManifest): Promise<void> {
  const files = [...manifest.kafka.topics, ...manifest.clickhouse.tables.flatMap((t) => t.partitions)];
  for (const f of files) {
    // A manifest names files inside its own directory, nothing else.
    if (typeof f.file !== 'string' || f.file.startsWith('/') || f.file.split('/').includes('..'))
      throw new InputError(`backup manifest names a file outside the backup: ${String(f.file)}`);
    let actual: string;
    try {
      actual = await sha256Of(join(dir, f.file));
    } catch (err) {
      throw new InputError(`backup file ${f.file}: ${(err as Error).message}`);
    }
    if (actual !== f.sha256) throw new InputError(`backup file ${f.file} does not match its checksum in the manifest (damaged or changed)`);
  }
}
