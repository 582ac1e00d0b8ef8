import { describe, expect, it } from 'vitest';
import { thirdPartyPackages } from './release-worktree.fixture.js';
import { bumpImageTags, bumpPackageJson, compareVersions, parseVersion, previousRelease, sortReleases } from './releases.js';

const HEAD = 'h'.repeat(40);
const tag = (name: string, commit = name.padEnd(40, '0')) => ({ tag: name, commit });

describe('release tags', () => {
  it('are vMAJOR.MINOR.PATCH, ordered by number, not by text', () => {
    expect(parseVersion('v0.10.2')).toEqual([0, 10, 2]);
    expect(parseVersion('0.10.2')).toEqual([0, 10, 2]);
    for (const bad of ['v1.2', 'v1.2.3-rc1', 'release-1', 'v01.2.x']) expect(parseVersion(bad), bad).toBeUndefined();
    expect(compareVersions('v0.10.0', 'v0.9.0')).toBeGreaterThan(0);
    expect(sortReleases([tag('v0.9.0'), tag('nightly'), tag('v0.10.0'), tag('v0.1.0')]).map((t) => t.tag)).toEqual(['v0.10.0', 'v0.9.0', 'v0.1.0']);
  });

  it('upgrade from the newest release that is not HEAD itself', () => {
    // Development after v0.2.0: v0.2.0 is what runs, HEAD is next.
    expect(previousRelease([tag('v0.1.0'), tag('v0.2.0')], HEAD)?.tag).toBe('v0.2.0');
    // HEAD is v0.2.0 as tagged: it upgrades v0.1.0.
    expect(previousRelease([tag('v0.1.0'), tag('v0.2.0', HEAD)], HEAD)?.tag).toBe('v0.1.0');
    // The first release as tagged: the tag itself is N, the working tree N+1.
    expect(previousRelease([tag('v0.1.0', HEAD)], HEAD)?.tag).toBe('v0.1.0');
    expect(previousRelease([], HEAD)).toBeUndefined();
  });
});

describe('the release bump', () => {
  it("sets the version and the workspaces' caret ranges on each other, nothing else", () => {
    const before = `{\n  "name": "@ingest/domain",\n  "version": "0.1.0",\n  "dependencies": {\n    "@ingest/platform": "^0.1.0",\n    "@ingest/schemas": "*",\n    "undici": "^7.0.0"\n  }\n}\n`;
    expect(JSON.parse(bumpPackageJson(before, '0.2.0'))).toEqual({
      name: '@ingest/domain',
      version: '0.2.0',
      dependencies: { '@ingest/platform': '^0.2.0', '@ingest/schemas': '*', undici: '^7.0.0' },
    });
    expect(bumpPackageJson(before, '0.2.0')).toMatch(/^\{\n {2}"name"/);
    // A package.json without a version (a private tool) gets none.
    expect(JSON.parse(bumpPackageJson('{ "name": "x" }', '0.2.0'))).toEqual({ name: 'x' });
  });

  it("moves every service image's tag and no other image's", () => {
    const manifest = 'image: event-ingestion/gateway:0.1.0\n  image: event-ingestion/crm-sink:0.1.0\n  image: redis:7.2.4\n';
    expect(bumpImageTags(manifest, '0.2.0')).toBe('image: event-ingestion/gateway:0.2.0\n  image: event-ingestion/crm-sink:0.2.0\n  image: redis:7.2.4\n');
  });
});

describe("a release's node_modules", () => {
  const lock = (workspaceVersion: string, fastify: string) =>
    JSON.stringify({
      packages: {
        '': { name: 'event-ingestion', version: workspaceVersion },
        'packages/domain': { name: '@ingest/domain', version: workspaceVersion },
        'node_modules/@ingest/domain': { resolved: 'packages/domain', link: true },
        'node_modules/fastify': { version: fastify, integrity: 'sha512-x' },
        'packages/domain/node_modules/undici': { version: '7.0.0' },
      },
    });

  it('are the same when only the workspaces’ own versions changed, and differ with any third-party package', () => {
    expect(thirdPartyPackages(lock('0.1.0', '5.0.0'))).toBe(thirdPartyPackages(lock('0.2.0', '5.0.0')));
    expect(thirdPartyPackages(lock('0.1.0', '5.0.0'))).not.toBe(thirdPartyPackages(lock('0.1.0', '5.0.1')));
  });
});
