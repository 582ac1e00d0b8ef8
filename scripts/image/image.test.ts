/**
 * The image matches the runbook. Docker cannot build here (no engine), so this checks what
 * the Dockerfile would produce from what it is made of: the runtime stage copies only the staged
 * paths (stage.ts), those hold the bundles the build makes, every `ingest <command>` the runbook
 * names is a command of the bundled `ingest`, and no test code is bundled into the image.
 */
import { execFile } from 'node:child_process';
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { Metafile } from 'esbuild';
import { OPS_ENDPOINTS, SUBCOMMANDS } from '@ingest/cli';
import { ConsoleConfigSchema } from '@ingest/console/config';
import { CrmSinkConfigSchema } from '@ingest/crm-sink/config';
import { GatewayConfigSchema } from '@ingest/gateway/config';
import { ProcessorConfigSchema } from '@ingest/processor/config';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readPackage, REPO_ROOT } from '../lib/workspaces.js';
import { buildBundles } from './build-bundles.js';
import { bundleEntries, INGEST_BUNDLE } from './bundles.js';
import { BASE_PART, imageEntries, imageServices, STAGE_BUNDLE, STAGE_DIR } from './stage.js';

const run = promisify(execFile);
const read = (path: string) => readFileSync(join(REPO_ROOT, path), 'utf8');
const dockerfile = read('Dockerfile');
/** The Dockerfile's stages by name (`FROM … AS name`), each its text from its FROM line on. */
const stages = new Map(
  dockerfile
    .split(/\n(?=FROM )/)
    .filter((s) => s.startsWith('FROM '))
    .map((s) => [/^FROM \S+ AS (\S+)/.exec(s)?.[1] ?? '', s] as const),
);
const buildStage = stages.get('build') ?? '';
const runtimeStage = stages.get('runtime') ?? '';
const instructions = (stage: string, name: string) =>
  stage
    .replace(/\\\n\s*/g, ' ')
    .split('\n')
    .filter((l) => l.startsWith(`${name} `));

const inImage = (path: string) => imageEntries().some((e) => path === e || path.startsWith(`${e}/`));

/** Test code that must never be bundled into the image: tests, test helpers (`*.fixture.ts`, the one naming rule) and the test kit. */
const TEST_CODE = /\.test\.|\.fixture\.|(^|\/)testkit\//;

/**
 * Commands the runbook names, by its convention: in code (a fenced block's line or an inline
 * span), a command starts the code, or follows `&&`, `;`, `|` or an exec's ` -- `, after any
 * `VAR=value` assignments.
 */
export function runbookCommands(markdown: string): { tool: 'ingest' | 'npm run'; command: string }[] {
  const fenced = [...markdown.matchAll(/```[a-z]*\n([\s\S]*?)```/g)].flatMap((m) => (m[1] ?? '').split('\n'));
  const outside = markdown.replace(/```[a-z]*\n[\s\S]*?```/g, '');
  const inline = [...outside.matchAll(/`([^`\n]+)`/g)].map((m) => m[1] ?? '');
  const found: { tool: 'ingest' | 'npm run'; command: string }[] = [];
  for (const code of [...fenced, ...inline]) {
    for (const m of code.matchAll(/(?:^|&&|;|\||\s--)\s*(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(ingest|npm run)\s+([a-z][\w:-]*)/g)) {
      found.push({ tool: m[1] as 'ingest' | 'npm run', command: m[2] ?? '' });
    }
  }
  return found;
}

describe('the Dockerfile', () => {
  it('builds, prunes the dev dependencies, then stages the image files', () => {
    const runs = instructions(buildStage, 'RUN').join('\n');
    expect(runs).toMatch(new RegExp(`npm run build && npm prune --omit=dev .*&& node ${STAGE_BUNDLE} ${STAGE_DIR}$`, 'm'));
    expect(bundleEntries().find((b) => b.outfile === STAGE_BUNDLE)?.buildOnly).toBe(true);
  });

  it("copies into the runtime stage only the staged base, and into each service's target only its own staged part", () => {
    expect(instructions(runtimeStage, 'COPY')).toEqual([`COPY --from=build ${STAGE_DIR}/${BASE_PART}/ ./`]);
    expect(imageServices().sort()).toEqual(['console', 'crm-sink', 'gateway', 'processor']);
    for (const service of imageServices()) {
      const target = stages.get(service) ?? '';
      expect(target, `a target named ${service}`).toMatch(new RegExp(`^FROM runtime AS ${service}\n`));
      expect(instructions(target, 'COPY'), service).toEqual([`COPY --from=build ${STAGE_DIR}/${service}/ ./`]);
      expect(instructions(target, 'ENV'), service).toEqual([`ENV SERVICE=${service}`]);
    }
    // Every stage is the build, the runtime base or a service's target.
    expect([...stages.keys()].sort()).toEqual(['build', 'runtime', ...imageServices()].sort());
  });

  it("the gateway's image holds no console code; each image holds its own bundle and no other service's", () => {
    for (const service of imageServices()) {
      const entries = imageEntries(REPO_ROOT, service);
      expect(entries, service).toContain(`services/${service}/dist`);
      expect(
        entries.filter((e) => e.startsWith('services/') && !e.startsWith(`services/${service}/`)),
        service,
      ).toEqual([]);
    }
  });

  it('stages bundles, production node_modules, manifests and migrations: no source folder, no TypeScript', () => {
    const entries = imageEntries();
    expect(entries).toEqual(expect.arrayContaining(['node_modules', 'dist', 'deploy/clickhouse/migrations', 'services/gateway/dist']));
    expect(entries.filter((e) => /(^|\/)(src|web|scripts|test|testing)(\/|$)|\.ts$/.test(e))).toEqual([]);
    for (const b of bundleEntries().filter((b) => !b.buildOnly)) expect(inImage(b.outfile), b.outfile).toBe(true);
    expect(inImage(STAGE_BUNDLE) && !STAGE_BUNDLE.startsWith('dist/build/')).toBe(false);
  });

  it('puts ingest on the PATH, linked to its bundle in /app', () => {
    expect(instructions(runtimeStage, 'RUN')).toContain(`RUN ln -s /app/${INGEST_BUNDLE} /usr/local/bin/ingest`);
    expect(inImage(INGEST_BUNDLE)).toBe(true);
  });

  it('checks health with ingest healthcheck, and runs setup as ingest setup', () => {
    expect(instructions(runtimeStage, 'HEALTHCHECK')).toEqual([expect.stringMatching(/ CMD \["ingest", "healthcheck"\]$/)]);
    expect(instructions(runtimeStage, 'CMD').join('')).toContain('exec ingest setup');
  });

  it('ingest healthcheck asks each service on its own ops variables and defaults', () => {
    const schemas: Record<string, { properties: Record<string, unknown> }> = {
      gateway: GatewayConfigSchema,
      console: ConsoleConfigSchema,
      processor: ProcessorConfigSchema,
      'crm-sink': CrmSinkConfigSchema,
    };
    for (const [service, e] of Object.entries(OPS_ENDPOINTS)) {
      const props = schemas[service]?.properties as Record<string, { default?: unknown }>;
      expect(props[e.portVariable]?.default, service).toBe(e.defaultPort);
      expect(props[e.hostVariable], service).toBeDefined();
    }
  });
});

describe('docs/runbook.md', () => {
  const commands = runbookCommands(read('docs/runbook.md'));
  const scripts = Object.keys(readPackage('.').scripts ?? {});

  it('names its commands by the convention (found at all)', () => {
    expect(commands.filter((c) => c.tool === 'ingest').length).toBeGreaterThan(10);
    expect(runbookCommands('`kubectl -n ingest get pods` and `ADMIN_TOKEN=x ingest admin keys list`')).toEqual([{ tool: 'ingest', command: 'admin' }]);
  });

  it('every ingest command it names is in the image', () => {
    const unknown = commands.filter((c) => c.tool === 'ingest' && !(c.command in SUBCOMMANDS) && c.command !== 'help');
    expect(unknown).toEqual([]);
  });

  it('every npm run it names is a script of the checkout, and none stands in for an ingest command', () => {
    const npm = commands.filter((c) => c.tool === 'npm run').map((c) => c.command);
    expect(npm.filter((s) => !scripts.includes(s))).toEqual([]);
    expect(npm.filter((s) => s in SUBCOMMANDS || s === 'admin' || s === 'deadletters')).toEqual([]);
  });
});

describe('the bundles, built into a scratch folder', () => {
  // Inside the repository, so the bundles resolve their external packages from node_modules.
  const scratch = join(REPO_ROOT, 'node_modules/.cache', `image-check-${process.pid}`);
  let metafiles: Map<string, Metafile>;
  beforeAll(async () => {
    metafiles = await buildBundles(REPO_ROOT, scratch);
  }, 60_000);
  afterAll(() => rmSync(scratch, { recursive: true, force: true }));

  it("the gateway's holds no admin, dashboard or web code; the console's holds its admin API, dashboard and no /v1 route", () => {
    const inputs = (name: string) => Object.keys(metafiles.get(name)?.inputs ?? {});
    const gateway = inputs('gateway');
    expect(gateway).toContain('services/gateway/src/main.ts');
    expect(gateway.filter((i) => /services\/console\/|\/(admin|dashboard|web)\//.test(i))).toEqual([]);
    const console = inputs('console');
    expect(console.some((i) => i.startsWith('services/console/src/admin/'))).toBe(true);
    expect(console.some((i) => i.startsWith('services/console/src/dashboard/'))).toBe(true);
    expect(console.filter((i) => i.startsWith('services/gateway/'))).toEqual([]);
  });

  it('hold no test code: no test, fixture, fake, harness or test kit', () => {
    for (const [name, meta] of metafiles) {
      const inputs = Object.keys(meta.inputs);
      expect(inputs.length, name).toBeGreaterThan(2);
      expect(
        inputs.filter((i) => TEST_CODE.test(i)),
        name,
      ).toEqual([]);
    }
  });

  it('ingest runs: help lists every command; admin and deadletters answer help', async () => {
    const bin = join(scratch, INGEST_BUNDLE);
    const help = await run(bin, ['help']);
    for (const name of Object.keys(SUBCOMMANDS)) expect(help.stdout).toContain(`  ${name} `);
    expect((await run(bin, ['admin', 'help'])).stdout).toContain('keys create');
    expect((await run(bin, ['deadletters', 'help'])).stdout).toContain('replay --offset');
    await expect(run(bin, ['no-such-command'])).rejects.toMatchObject({ code: 2 });
  }, 30_000);
});
