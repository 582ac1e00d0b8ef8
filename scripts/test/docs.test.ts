/**
 * The documentation stands alone and its links hold: the README stays a front page (at most
 * 300 lines), nothing in the repository points at notes that live outside it, and every relative
 * link of README.md and docs/*.md reaches an existing file and, for `#anchor` links into
 * markdown, an existing heading (GitHub's anchors, computed with github-slugger, the package
 * GitHub's own slug rules are published as).
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, dirname, join, normalize } from 'node:path';
import GithubSlugger from 'github-slugger';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../lib/workspaces.js';

const root = REPO_ROOT;
const read = (path: string) => readFileSync(join(root, path), 'utf8');
const tracked = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: root, encoding: 'utf8' })
  .split('\0')
  .filter((f) => f && existsSync(join(root, f)));
const markdownPages = ['README.md', ...tracked.filter((f) => /^docs\/[^/]+\.md$/.test(f))];

/** Markdown without fenced code blocks and inline code, where links are not links. */
function prose(markdown: string): string {
  return markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').replace(/`[^`\n]*`/g, '');
}

/** The anchors GitHub gives the headings of a markdown file (duplicates get -1, -2, …). */
export function headingAnchors(markdown: string): Set<string> {
  const slugger = new GithubSlugger();
  const headings = [...prose(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)].map((m) => m[1] ?? '');
  // Inline code was dropped with prose(); put its text back for the slug (GitHub keeps it).
  const withCode = [...markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '').matchAll(/^#{1,6}[ \t]+(.+?)[ \t]*#*[ \t]*$/gm)].map((m) =>
    (m[1] ?? '').replace(/`([^`]*)`/g, '$1').replace(/\[([^\]]*)\]\([^)]*\)/g, '$1'),
  );
  expect(withCode.length).toBe(headings.length);
  return new Set(withCode.map((h) => slugger.slug(h)));
}

/** Relative link targets of a markdown file: `[text](target)`, outside code. */
export function relativeLinks(markdown: string): string[] {
  return [...prose(markdown).matchAll(/!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)]
    .map((m) => m[1] ?? '')
    .filter((target) => !/^[a-z][a-z0-9+.-]*:/i.test(target));
}

describe('README.md', () => {
  it('is a front page of at most 300 lines', () => {
    const lines = read('README.md').split('\n').length;
    expect(lines).toBeLessThanOrEqual(300);
  });

  it('links every page of docs/', () => {
    const linked = new Set(relativeLinks(read('README.md')).map((l) => l.split('#')[0]));
    expect(markdownPages.filter((p) => p.startsWith('docs/') && !linked.has(p))).toEqual([]);
  });
});

describe('the repository stands alone', () => {
  const texts = tracked.filter((f) => !/\.(png|jpe?g|gif|ico|woff2?|jar|gz|zip)$/.test(f) && statSync(join(root, f)).size < 2_000_000);
  const trackedNames = new Set(tracked.map((f) => basename(f)));

  it('no file points at the team notes outside the repository', () => {
    // Written so that this file does not match itself.
    const outside = [
      /\.\.\/shared\//,
      /\/work\/shared/,
      new RegExp(`(?:${['DESIGN', 'CONVENTIONS', 'LAYOUT', 'clickhouse-compat', 'interface-spec'].join('|')})\\.md`),
    ];
    const hits = texts.flatMap((f) => {
      const text = read(f);
      return outside.filter((re) => re.test(text)).map((re) => `${f}: ${re.source}`);
    });
    expect(hits).toEqual([]);
  });

  it('every markdown file a file names by name is in the repository', () => {
    const names = texts
      .filter((f) => f !== 'package-lock.json')
      .flatMap((f) => [...read(f).matchAll(/(?<![\w.-])([\w-]+\.md)\b/g)].map((m) => ({ file: f, name: m[1] ?? '' })));
    expect(names.length).toBeGreaterThan(20);
    expect(names.filter((n) => !trackedNames.has(n.name)).map((n) => `${n.file}: ${n.name}`)).toEqual([]);
  });
});

describe('links in README.md and docs/', () => {
  const anchorsOf = new Map<string, Set<string>>();
  const anchors = (path: string) => {
    let set = anchorsOf.get(path);
    if (!set) anchorsOf.set(path, (set = headingAnchors(read(path))));
    return set;
  };

  it('computes GitHub anchors', () => {
    expect([...headingAnchors('# A\n## ClickHouse: the `events` table\n## Versions, If-Match and the dry-run\n## A\n```\n# not a heading\n```\n')]).toEqual([
      'a',
      'clickhouse-the-events-table',
      'versions-if-match-and-the-dry-run',
      'a-1',
    ]);
  });

  it.each(markdownPages)('%s: every relative link reaches a file, and a heading for #anchors', (page) => {
    const broken: string[] = [];
    const links = relativeLinks(read(page));
    for (const link of links) {
      const [pathPart = '', anchor] = link.split('#');
      const target = pathPart === '' ? page : normalize(join(dirname(page), decodeURIComponent(pathPart)));
      if (target.startsWith('..') || !existsSync(join(root, target))) {
        broken.push(`${link}: no file ${target}`);
        continue;
      }
      if (anchor !== undefined && target.endsWith('.md') && !anchors(target).has(anchor)) broken.push(`${link}: ${target} has no heading #${anchor}`);
    }
    expect(broken).toEqual([]);
  });
});

describe('docs/architecture.md', () => {
  it('names only modules that exist on the path of one event and one admin change', () => {
    const text = read('docs/architecture.md');
    const section = /^## One event and one admin change, module by module$([\s\S]*?)^## /m.exec(text)?.[1] ?? '';
    const paths = [...section.matchAll(/`((?:services|packages|schemas|tools|testkit|bench)\/[^`\s]+\.tsx?)`/g)].map((m) => m[1] ?? '');
    // The section names the event's ~15 hops and the admin change's 5: a rewrite that drops the
    // module names (or the heading) fails here instead of passing with nothing checked.
    expect(paths.length, 'module paths in the section').toBeGreaterThan(15);
    expect(paths.filter((p) => !existsSync(join(root, p)))).toEqual([]);
  });
});
